//! The order repository over SeaORM.
//!
//! Placing an order and moving one are each one transaction with the change of the pet's status,
//! run by the database's writer (see [`writer`](crate::sql::writer::thread)), so that they are as
//! durable as a pet's creation and serialised with every other write of the process. Across
//! processes sharing a PostgreSQL database, the pet is reserved by a conditional `UPDATE` (`...
//! WHERE status = 'available'`), which one transaction alone can win, and an order is locked
//! (`SELECT ... FOR UPDATE`) before its move is decided.
//!
//! Reads go to the reader pool, filtered by owner: another key's order is never read.

use std::sync::Arc;

use animal_store_domain::{
    KeyId, NewEvent, NewOrder, Order, OrderId, OrderRepository, OrderStatus, PetId, PetStatus,
    PlaceOrderError, RepositoryError, UpdateOrderError,
};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbBackend, DbErr,
    EntityTrait, NotSet, QueryFilter, QueryOrder, QuerySelect, QueryTrait, Set,
};

use crate::sql::connection::failure::corrupt;
use crate::sql::connection::failure::in_write;
use crate::sql::connection::reachability::Reads;
use crate::sql::rows::insert::insert_one;
use crate::sql::rows::pets::to_pet;
use crate::sql::schema::entity::{order, pet};
use crate::sql::writer::job::{Decided, Writer};

/// Orders in an SQL database. Cheap to clone: clones share the readers and the writer.
#[derive(Clone)]
pub struct SeaOrmOrderRepository {
    readers: DatabaseConnection,
    reads: Arc<Reads>,
    writer: Writer,
}

impl SeaOrmOrderRepository {
    pub(crate) fn new(readers: DatabaseConnection, reads: Arc<Reads>, writer: Writer) -> Self {
        Self { readers, reads, writer }
    }
}

fn to_order(row: order::Model) -> Result<Order, RepositoryError> {
    let order::Model { id, pet_id, owner, status, created_at, updated_at } = row;
    Ok(Order {
        id: OrderId::new(id),
        pet_id: PetId::new(pet_id),
        owner: KeyId::new(&owner).map_err(|e| corrupt("orders", e))?,
        status: status.parse().map_err(|e| corrupt("orders", e))?,
        created_at,
        updated_at,
    })
}

/// In `txn`: moves the pet `id` to `status` if `only_if` holds for it; returns it as it is
/// then, when it moved. No `RETURNING` on SQLite (docs/architecture.md): the row is read
/// again, in the same transaction.
async fn move_pet(
    txn: &DatabaseTransaction,
    id: PetId,
    status: PetStatus,
    only_if: sea_orm::sea_query::SimpleExpr,
) -> Result<Option<animal_store_domain::Pet>, DbErr> {
    let update = pet::Entity::update_many()
        .col_expr(pet::Column::Status, Expr::value(status.as_str()))
        .filter(pet::Column::Id.eq(id.get()))
        .filter(only_if);
    let row = if txn.get_database_backend() == DbBackend::Postgres {
        update.exec_with_returning(txn).await?.into_iter().next()
    } else if update.exec(txn).await?.rows_affected == 0 {
        None
    } else {
        pet::Entity::find_by_id(id.get()).one(txn).await?
    };
    row.map(to_pet).transpose().map_err(|e| in_write(&e))
}

/// In `txn`: reserves the pet if it is available and stores the order; the refusal otherwise.
pub(crate) async fn place(
    txn: &DatabaseTransaction,
    order: NewOrder,
) -> Result<Decided<Order, PlaceOrderError>, DbErr> {
    let pet_id = order.pet_id;
    let available = pet::Column::Status.eq(PetStatus::Available.as_str());
    let reserved = move_pet(txn, pet_id, OrderStatus::Placed.pet_status(), available).await?;
    let Some(pet) = reserved else {
        let refusal = match pet::Entity::find_by_id(pet_id.get()).one(txn).await? {
            None => PlaceOrderError::NoSuchPet(pet_id),
            Some(row) => PlaceOrderError::PetNotAvailable {
                pet: pet_id,
                status: row.status.parse().map_err(|e| in_write(&corrupt("pets", e)))?,
            },
        };
        return Ok((Err(refusal), Vec::new()));
    };
    let row = order::ActiveModel {
        id: NotSet,
        pet_id: Set(pet_id.get()),
        owner: Set(order.owner.as_str().to_owned()),
        status: Set(OrderStatus::Placed.as_str().to_owned()),
        created_at: Set(order.at),
        updated_at: Set(order.at),
    };
    let id = insert_one(txn, order::Entity::insert(row).into_query()).await?;
    let order = order.placed(OrderId::new(id));
    Ok((Ok(order.clone()), NewEvent::of_order(order, Some(pet))))
}

/// In `txn`: moves the owner's order if the rules allow it, and its pet along.
async fn update_status(
    txn: &DatabaseTransaction,
    owner: KeyId,
    id: OrderId,
    to: OrderStatus,
    at: DateTime<Utc>,
) -> Result<Decided<Order, UpdateOrderError>, DbErr> {
    let mut query =
        order::Entity::find_by_id(id.get()).filter(order::Column::Owner.eq(owner.as_str()));
    if txn.get_database_backend() == DbBackend::Postgres {
        // Other processes' moves of this order wait until this transaction ends.
        query = query.lock_exclusive();
    }
    let Some(row) = query.one(txn).await? else {
        return Ok((Err(UpdateOrderError::NotFound(id)), Vec::new()));
    };
    let mut order = to_order(row).map_err(|e| in_write(&e))?;
    let pet_status = match order.status.move_to(to) {
        Ok(pet_status) => pet_status,
        Err(refused) => return Ok((Err(refused.into()), Vec::new())),
    };
    order::Entity::update_many()
        .col_expr(order::Column::Status, Expr::value(to.as_str()))
        .col_expr(order::Column::UpdatedAt, Expr::value(at))
        .filter(order::Column::Id.eq(id.get()))
        .exec(txn)
        .await?;
    // Only a pet whose status moves is updated, and makes an event.
    let other = pet::Column::Status.ne(pet_status.as_str());
    let pet = move_pet(txn, order.pet_id, pet_status, other).await?;
    order.status = to;
    order.updated_at = at;
    Ok((Ok(order.clone()), NewEvent::of_order(order, pet)))
}

#[async_trait]
impl OrderRepository for SeaOrmOrderRepository {
    async fn place(&self, order: NewOrder) -> Result<Order, PlaceOrderError> {
        self.writer.change(move |txn| Box::pin(place(txn, order))).await?
    }

    async fn get(&self, owner: &KeyId, id: OrderId) -> Result<Option<Order>, RepositoryError> {
        let query =
            order::Entity::find_by_id(id.get()).filter(order::Column::Owner.eq(owner.as_str()));
        self.reads.read(|| query.clone().one(&self.readers)).await?.map(to_order).transpose()
    }

    async fn list(
        &self,
        owner: &KeyId,
        status: Option<OrderStatus>,
        after: Option<OrderId>,
        count: usize,
    ) -> Result<Vec<Order>, RepositoryError> {
        let mut query = order::Entity::find().filter(order::Column::Owner.eq(owner.as_str()));
        if let Some(status) = status {
            query = query.filter(order::Column::Status.eq(status.as_str()));
        }
        if let Some(after) = after {
            query = query.filter(order::Column::Id.gt(after.get()));
        }
        let query =
            query.order_by_asc(order::Column::Id).limit(u64::try_from(count).unwrap_or(u64::MAX));
        let rows = self.reads.read(|| query.clone().all(&self.readers)).await?;
        rows.into_iter().map(to_order).collect()
    }

    async fn update_status(
        &self,
        owner: &KeyId,
        id: OrderId,
        to: OrderStatus,
        at: DateTime<Utc>,
    ) -> Result<Order, UpdateOrderError> {
        let owner = owner.clone();
        self.writer.change(move |txn| Box::pin(update_status(txn, owner, id, to, at))).await?
    }
}
