//! The pet repository over SeaORM.
//!
//! Reads go on SQLite to the reader threads (see [`reader_threads`](super::reader_threads)),
//! on PostgreSQL to connections pooled without a round trip per checkout (see
//! [`pg_readers`](super::pg_readers)). Inserts go through the database's writer (see
//! [`writer`](super::writer)), which commits many of them in one transaction under load.
//!
//! On SQLite a row is inserted by a plain `INSERT`, run to its end, and its id read from
//! SQLite's last row id. sea-orm's `exec` would ask for the id with `INSERT ... RETURNING`
//! (its feature `sqlite-use-returning-for-3_35` reaches this build through
//! sea-orm-migration), streaming the row back from the driver's worker thread, and with
//! `ActiveModel::insert` through a fetch that leaves the statement open, which on SQLite
//! blocks WAL checkpoints for good and lets the WAL grow without bound. `tests/sqlite.rs`
//! checks the bound (and fails, at 64 MiB, when checkpoints are disabled).

use std::sync::Arc;

use animal_store_domain::{
    CategoryId, NewPet, Pet, PetId, PetName, PetRepository, PetStatus, RepositoryError,
};
use async_trait::async_trait;
use sea_orm::sea_query::InsertStatement;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseTransaction, DbBackend, DbErr, EntityTrait,
    FromQueryResult, NotSet, QueryFilter, QueryOrder, QuerySelect, QueryTrait, Set, Statement,
};

use super::corrupt;
use super::entity::pet;
use super::pg_readers::PgReaders;
use super::reachability::Reads;
use super::reader_threads::ReaderThreads;
use super::writer::Writer;

/// Pets in an SQL database. Cheap to clone: clones share the readers and the writer.
#[derive(Clone)]
pub struct SeaOrmPetRepository {
    readers: PetReaders,
    reads: Arc<Reads>,
    writer: Writer,
}

/// What serves the pet reads, by backend.
#[derive(Clone)]
pub(super) enum PetReaders {
    Sqlite(Arc<ReaderThreads>),
    Postgres(PgReaders),
}

impl PetReaders {
    pub(super) fn postgres(&self) -> Option<&PgReaders> {
        match self {
            Self::Postgres(pg_readers) => Some(pg_readers),
            Self::Sqlite(_) => None,
        }
    }

    /// Runs `query`, each row as a [`pet::Model`].
    async fn read(&self, query: impl QueryTrait) -> Result<Vec<pet::Model>, DbErr> {
        match self {
            Self::Sqlite(threads) => read_on_threads(threads, query).await,
            Self::Postgres(pg_readers) => {
                let rows = pg_readers.query_all(query.build(DbBackend::Postgres)).await?;
                rows.iter().map(|row| pet::Model::from_query_result(row, "")).collect()
            }
        }
    }
}

impl SeaOrmPetRepository {
    pub(super) fn new(readers: PetReaders, reads: Arc<Reads>, writer: Writer) -> Self {
        Self { readers, reads, writer }
    }
}

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

/// Inserts `pets` into SQLite with one statement and returns their ids, in order: the rows
/// of one `INSERT` get consecutive row ids, the last one SQLite's last row id.
pub(super) async fn insert_sqlite_rows(
    txn: &DatabaseTransaction,
    pets: &[&NewPet],
) -> Result<Vec<PetId>, DbErr> {
    let insert = pet::Entity::insert_many(pets.iter().map(|pet| to_row(pet)));
    let done = txn.execute_raw(insert.build(DbBackend::Sqlite)).await?;
    let count = u64::try_from(pets.len()).unwrap_or(u64::MAX);
    let last = i64::try_from(done.last_insert_id()).ok();
    match (done.rows_affected() == count, last) {
        (true, Some(last)) => {
            let first = last - i64::try_from(count).unwrap_or(i64::MAX) + 1;
            Ok((first..=last).map(PetId::new).collect())
        }
        _ => Err(DbErr::Custom(format!(
            "inserting {count} pets reported {} rows, the last id {last:?}",
            done.rows_affected()
        ))),
    }
}

/// Takes `count` ids from the pets' sequence on PostgreSQL.
pub(super) async fn take_postgres_ids(
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
pub(super) fn postgres_rows(pets: &[Pet]) -> InsertStatement {
    let rows = pets.iter().map(|pet| {
        let Pet { id, name, category_id, status } = pet.clone();
        pet::ActiveModel { id: Set(id.get()), ..to_row(&NewPet { name, category_id, status }) }
    });
    pet::Entity::insert_many(rows).into_query()
}

pub(super) async fn insert(txn: &DatabaseTransaction, pet: NewPet) -> Result<Pet, DbErr> {
    let insert = pet::Entity::insert(to_row(&pet));
    let id = match txn.get_database_backend() {
        // See the module's documentation.
        DbBackend::Sqlite => {
            let done = txn.execute_raw(insert.build(DbBackend::Sqlite)).await?;
            i64::try_from(done.last_insert_id())
                .map_err(|_| DbErr::Custom("SQLite returned a row id out of range".to_owned()))?
        }
        _ => insert.exec(txn).await?.last_insert_id,
    };
    Ok(Pet::from_new(PetId::new(id), pet))
}

fn to_pet(row: &pet::Model) -> Result<Pet, RepositoryError> {
    let pet::Model { id, name, category_id, status } = row;
    Ok(Pet {
        id: PetId::new(*id),
        name: PetName::stored(name).map_err(|e| corrupt("pets", e))?,
        category_id: CategoryId::new(*category_id).map_err(|e| corrupt("pets", e))?,
        status: status.parse::<PetStatus>().map_err(|e| corrupt("pets", e))?,
    })
}

/// Runs `query` on SQLite's reader threads, each row as a [`pet::Model`].
async fn read_on_threads(
    threads: &ReaderThreads,
    query: impl QueryTrait,
) -> Result<Vec<pet::Model>, DbErr> {
    let sea_orm::Statement { sql, values, .. } = query.build(DbBackend::Sqlite);
    let statement =
        sea_orm_sync::Statement { sql, values, db_backend: sea_orm_sync::DbBackend::Sqlite };
    threads
        .run(move |connection| {
            use sea_orm_sync::ConnectionTrait as _;
            connection.query_all_raw(statement)?.iter().map(from_sync_row).collect()
        })
        .await
}

/// A row the reader threads read: the columns of [`pet::Model`], by name.
fn from_sync_row(row: &sea_orm_sync::QueryResult) -> Result<pet::Model, sea_orm_sync::DbErr> {
    Ok(pet::Model {
        id: row.try_get("", "id")?,
        name: row.try_get("", "name")?,
        category_id: row.try_get("", "category_id")?,
        status: row.try_get("", "status")?,
    })
}

/// The query of a page: `count` pets after `after`, of `status` if given, by id.
pub(super) fn list_query(
    status: Option<PetStatus>,
    after: Option<PetId>,
    count: usize,
) -> sea_orm::Select<pet::Entity> {
    let mut query = pet::Entity::find();
    if let Some(status) = status {
        query = query.filter(pet::Column::Status.eq(status.as_str()));
    }
    if let Some(after) = after {
        query = query.filter(pet::Column::Id.gt(after.get()));
    }
    query.order_by_asc(pet::Column::Id).limit(u64::try_from(count).unwrap_or(u64::MAX))
}

#[async_trait]
impl PetRepository for SeaOrmPetRepository {
    async fn create(&self, pet: NewPet) -> Result<Pet, RepositoryError> {
        self.writer.add_pet(pet).await
    }

    async fn get(&self, id: PetId) -> Result<Option<Pet>, RepositoryError> {
        let query = pet::Entity::find_by_id(id.get()).limit(1);
        let rows = self.reads.run(self.readers.read(query)).await?;
        rows.first().map(to_pet).transpose()
    }

    async fn list(
        &self,
        status: Option<PetStatus>,
        after: Option<PetId>,
        count: usize,
    ) -> Result<Vec<Pet>, RepositoryError> {
        let rows = self.reads.run(self.readers.read(list_query(status, after, count))).await?;
        rows.iter().map(to_pet).collect()
    }
}
