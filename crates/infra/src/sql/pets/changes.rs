//! Changing, removing and counting pets over SeaORM (see [`PetChanges`]).
//!
//! A change is one job of the database's writer (see [`writer`](crate::sql::writer::thread)): the
//! pet is read, the client's precondition checked on it, the open order that holds it looked up
//! when the change needs it free, and the row changed, in one transaction. Across processes sharing
//! a PostgreSQL database the pet's row is locked first (`SELECT ... FOR UPDATE`), so that an order
//! placed or moved at the same time, which updates that row, is decided before or after the change,
//! never beside it.
//!
//! The inventory adds up `pet_counts`, which triggers on `pets` keep (see the migration
//! `m20261126_000007_pet_changes`): a handful of rows, however many pets there are.

use animal_store_domain::{
    ChangePetError, Inventory, NewEvent, OrderId, OrderStatus, Pet, PetChange, PetChanges, PetId,
    PetPatch, PetStatus, Precondition, RepositoryError,
};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseTransaction, DbBackend, DbErr, EntityTrait, QueryFilter,
    QueryOrder, QuerySelect, QueryTrait, Statement,
};

use crate::sql::connection::failure::{corrupt, in_write};
use crate::sql::pets::repository::SeaOrmPetRepository;
use crate::sql::rows::pets::to_pet;
use crate::sql::schema::entity::{order, pet, pet_count};
use crate::sql::writer::job::Decided;

/// The count of each status, added up over its slots (`SUM` of a `BIGINT` is a `NUMERIC` on
/// PostgreSQL: cast back).
fn counts(backend: DbBackend) -> Statement {
    pet_count::Entity::find()
        .select_only()
        .column(pet_count::Column::Status)
        .column_as(Expr::cust("CAST(SUM(pets) AS BIGINT)"), "pets")
        .group_by(pet_count::Column::Status)
        .build(backend)
}

/// In `txn`: makes `change` to the pet `id` if the rules of [`PetChanges`] allow it; its
/// event says it was made at `now`.
async fn change(
    txn: &DatabaseTransaction,
    id: PetId,
    change: PetChange,
    expected: Option<Precondition>,
    now: DateTime<Utc>,
) -> Result<Decided<Pet, ChangePetError>, DbErr> {
    let refused = |refusal| Ok((Err(refusal), Vec::new()));
    let mut query = pet::Entity::find_by_id(id.get());
    if txn.get_database_backend() == DbBackend::Postgres {
        // Orders placed or moved by other processes wait for this transaction to end.
        query = query.lock_exclusive();
    }
    let Some(row) = query.one(txn).await? else {
        return refused(ChangePetError::NotFound(id));
    };
    let pet = to_pet(row).map_err(|e| in_write(&e))?;
    if expected.is_some_and(|expected| !expected.holds_for(&pet)) {
        return refused(ChangePetError::PreconditionFailed(id));
    }
    if change.needs_release(&pet)
        && let Some(order) = open_order(txn, id).await?
    {
        return refused(ChangePetError::Held { pet: id, order });
    }
    match change {
        PetChange::Update(patch) => {
            let changed = patch.apply(&pet);
            if changed == pet {
                return Ok((Ok(changed), Vec::new()));
            }
            pet::Entity::update_many()
                .col_expr(pet::Column::Name, Expr::value(changed.name.as_str()))
                .col_expr(pet::Column::CategoryId, Expr::value(changed.category_id.get()))
                .col_expr(pet::Column::Status, Expr::value(changed.status.as_str()))
                .filter(pet::Column::Id.eq(id.get()))
                .exec(txn)
                .await?;
            Ok((Ok(changed.clone()), vec![NewEvent::pet_updated(changed, now)]))
        }
        PetChange::Remove => {
            pet::Entity::delete_by_id(id.get()).exec(txn).await?;
            Ok((Ok(pet.clone()), vec![NewEvent::pet_deleted(pet, now)]))
        }
    }
}

/// The open order that holds the pet `id`, if one does.
async fn open_order(txn: &DatabaseTransaction, id: PetId) -> Result<Option<OrderId>, DbErr> {
    let open = OrderStatus::OPEN.map(OrderStatus::as_str);
    let row = order::Entity::find()
        .filter(order::Column::PetId.eq(id.get()))
        .filter(order::Column::Status.is_in(open))
        .order_by_asc(order::Column::Id)
        .one(txn)
        .await?;
    Ok(row.map(|row| OrderId::new(row.id)))
}

/// The inventory from the rows of [`counts`].
fn inventory(rows: impl IntoIterator<Item = (String, i64)>) -> Result<Inventory, RepositoryError> {
    let counts = rows
        .into_iter()
        .map(|(status, pets)| {
            let status = status.parse::<PetStatus>().map_err(|e| corrupt("pet_counts", e))?;
            let pets = u64::try_from(pets).map_err(|e| corrupt("pet_counts", e))?;
            Ok((status, pets))
        })
        .collect::<Result<Vec<_>, RepositoryError>>()?;
    Ok(Inventory::of(counts))
}

#[async_trait]
impl PetChanges for SeaOrmPetRepository {
    async fn update(
        &self,
        id: PetId,
        patch: PetPatch,
        expected: Option<Precondition>,
    ) -> Result<Pet, ChangePetError> {
        let (update, now) = (PetChange::Update(patch), self.now());
        self.writer().change(move |txn| Box::pin(change(txn, id, update, expected, now))).await?
    }

    async fn remove(
        &self,
        id: PetId,
        expected: Option<Precondition>,
    ) -> Result<Pet, ChangePetError> {
        let (remove, now) = (PetChange::Remove, self.now());
        self.writer().change(move |txn| Box::pin(change(txn, id, remove, expected, now))).await?
    }

    async fn inventory(&self) -> Result<Inventory, RepositoryError> {
        let readers = self.readers();
        let counts = counts(readers.get_database_backend());
        let rows = self.reads().read(|| readers.query_all_raw(counts.clone())).await?;
        let counts = rows
            .iter()
            .map(|row| Ok((row.try_get("", "status")?, row.try_get("", "pets")?)))
            .collect::<Result<Vec<(String, i64)>, DbErr>>()
            .map_err(crate::sql::connection::failure::repository_error)?;
        inventory(counts)
    }
}
