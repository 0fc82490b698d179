//! The rows of the pets' table: how a pet maps to its row and back, and the statements that add and
//! remove pets inside the writer's transactions (see [`writer`](crate::sql::writer::thread)).
//!
//! On SQLite a row is inserted by a plain `INSERT`, run to its end, and its id read from SQLite's
//! last row id. sea-orm's `exec` would ask for the id with `INSERT ... RETURNING` (its feature
//! `sqlite-use-returning-for-3_35` reaches this build through sea-orm-migration), streaming the row
//! back from the driver's worker thread, and with `ActiveModel::insert` through a fetch that leaves
//! the statement open, which on SQLite blocks WAL checkpoints for good and lets the WAL grow
//! without bound. `tests/sqlite.rs` checks the bound (and fails, at 64 MiB, when checkpoints are
//! disabled).

use animal_store_domain::{CategoryId, NewPet, Pet, PetId, PetName, PetStatus, RepositoryError};
use sea_orm::sea_query::{DeleteStatement, InsertStatement};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseTransaction, DbBackend, DbErr, EntityTrait, NotSet,
    QueryFilter, QueryTrait, Set, Statement,
};

use crate::sql::connection::failure::corrupt;
use crate::sql::rows::insert::insert_one;
use crate::sql::schema::entity::pet;

// The mappings below name every field, on both sides and without `..`: a field added to
// `NewPet`, `Pet` or the row does not compile until it is mapped here.

fn to_row(pet: &NewPet) -> pet::ActiveModel {
    let NewPet { name, category_id, status } = pet;
    pet::ActiveModel {
        id: NotSet,
        name: Set(name.as_str().to_owned()),
        category_id: Set(category_id.get()),
        status: Set(status.as_str().to_owned()),
    }
}

pub(crate) fn to_pet(row: pet::Model) -> Result<Pet, RepositoryError> {
    let pet::Model { id, name, category_id, status } = row;
    pet_of(id, name, category_id, &status)
}

/// The pet of a row's columns, each checked as little as a value the service wrote allows.
fn pet_of(id: i64, name: String, category_id: i64, status: &str) -> Result<Pet, RepositoryError> {
    Ok(Pet {
        id: PetId::new(id),
        name: PetName::stored(name).map_err(|e| corrupt("pets", e))?,
        category_id: CategoryId::new(category_id).map_err(|e| corrupt("pets", e))?,
        status: status.parse::<PetStatus>().map_err(|e| corrupt("pets", e))?,
    })
}

/// In `txn` on SQLite: inserts `pets` with one statement and returns their ids, in order:
/// the rows of one `INSERT` get consecutive row ids, the last one SQLite's last row id.
pub(crate) async fn sqlite_insert_many(
    txn: &DatabaseTransaction,
    pets: &[&NewPet],
) -> Result<Vec<PetId>, DbErr> {
    let insert = pet::Entity::insert_many(pets.iter().map(|pet| to_row(pet)));
    let done = txn.execute_raw(insert.build(DbBackend::Sqlite)).await?;
    let inserted = done.rows_affected();
    if inserted != u64::try_from(pets.len()).unwrap_or(u64::MAX) {
        return Err(DbErr::Custom(format!(
            "inserting {} pets reported {inserted} rows",
            pets.len()
        )));
    }
    let last = i64::try_from(done.last_insert_id())
        .map_err(|_| DbErr::Custom("SQLite returned a row id out of range".to_owned()))?;
    let first = last - i64::try_from(inserted).unwrap_or(i64::MAX) + 1;
    Ok((first..=last).map(PetId::new).collect())
}

/// Takes `count` ids from the pets' sequence on PostgreSQL.
pub(crate) async fn take_postgres_ids(
    txn: &DatabaseTransaction,
    count: usize,
) -> Result<Vec<PetId>, DbErr> {
    // The sequence is looked up once per statement, not once per id: the lookup reads the
    // catalog, and cost more than taking the ids.
    let statement = Statement::from_sql_and_values(
        DbBackend::Postgres,
        "WITH pets_sequence AS MATERIALIZED \
             (SELECT pg_get_serial_sequence('pets', 'id')::regclass AS name) \
         SELECT nextval(pets_sequence.name) AS id FROM pets_sequence, generate_series(1, $1)",
        [i32::try_from(count).unwrap_or(i32::MAX).into()],
    );
    let rows = txn.query_all_raw(statement).await?;
    let ids: Vec<PetId> = rows
        .iter()
        .map(|row| row.try_get::<i64>("", "id").map(PetId::new))
        .collect::<Result<_, _>>()?;
    if ids.len() == count {
        Ok(ids)
    } else {
        Err(DbErr::Custom(format!("asked the sequence for {count} pet ids, got {}", ids.len())))
    }
}

/// The statement that inserts `pets`, whose ids are taken already, on PostgreSQL: the rows
/// of [`to_row`] with their ids, so that its columns and values cannot part.
pub(crate) fn postgres_rows(pets: &[&Pet]) -> InsertStatement {
    let rows = pets.iter().map(|&pet| {
        let Pet { id, name, category_id, status } = pet.clone();
        pet::ActiveModel { id: Set(id.get()), ..to_row(&NewPet { name, category_id, status }) }
    });
    pet::Entity::insert_many(rows).into_query()
}

/// Inserts `pet` and returns it with its id.
pub(crate) async fn insert(txn: &DatabaseTransaction, pet: NewPet) -> Result<Pet, DbErr> {
    let id = insert_one(txn, pet::Entity::insert(to_row(&pet)).into_query()).await?;
    Ok(Pet::from_new(PetId::new(id), pet))
}

/// Deletes the pets of `ids`.
pub(crate) async fn delete(txn: &DatabaseTransaction, ids: &[PetId]) -> Result<(), DbErr> {
    if ids.is_empty() {
        return Ok(());
    }
    txn.execute(&delete_statement(ids)).await.map(drop)
}

/// The statement that deletes the pets of `ids`.
fn delete_statement(ids: &[PetId]) -> DeleteStatement {
    let ids = ids.iter().map(|id| id.get());
    pet::Entity::delete_many().filter(pet::Column::Id.is_in(ids)).into_query()
}
