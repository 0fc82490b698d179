//! Where orders are kept.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::ids::OrderId;
use crate::keys::model::KeyId;
use crate::orders::model::{NewOrder, Order, OrderStatus, PlaceOrderError, UpdateOrderError};
use crate::repository_error::RepositoryError;

/// Where orders are kept, beside the pets they reserve: placing an order and moving it
/// change its pet's status in the same transaction, so that a pet's status and its orders
/// never disagree (see [`OrderStatus::move_to`]).
#[async_trait]
pub trait OrderRepository: Send + Sync + 'static {
    /// In one transaction: if the pet is `available`, makes it `pending` and stores the
    /// order `placed`, with an id greater than every order's before. Of concurrent orders for
    /// one pet, exactly one is placed.
    ///
    /// # Errors
    ///
    /// [`PlaceOrderError::NoSuchPet`] or [`PlaceOrderError::PetNotAvailable`], and nothing
    /// changes; [`PlaceOrderError::Repository`] when the store fails, and nothing is stored.
    async fn place(&self, order: NewOrder) -> Result<Order, PlaceOrderError>;

    /// The order with this id, if `owner` has one.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    async fn get(&self, owner: &KeyId, id: OrderId) -> Result<Option<Order>, RepositoryError>;

    /// Up to `count` of `owner`'s orders whose id is greater than `after` (all when `None`)
    /// and, when `status` is given, whose status is `status`, ordered by id ascending.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    async fn list(
        &self,
        owner: &KeyId,
        status: Option<OrderStatus>,
        after: Option<OrderId>,
        count: usize,
    ) -> Result<Vec<Order>, RepositoryError>;

    /// In one transaction: moves `owner`'s order `id` to `to` at `at` if the rules allow it
    /// from its current status, and its pet to the status that goes with `to`. Of concurrent
    /// moves of one order, each is decided on the status the one before left.
    ///
    /// # Errors
    ///
    /// [`UpdateOrderError::NotFound`] or [`UpdateOrderError::Transition`], and nothing
    /// changes; [`UpdateOrderError::Repository`] when the store fails, and nothing changes.
    async fn update_status(
        &self,
        owner: &KeyId,
        id: OrderId,
        to: OrderStatus,
        at: DateTime<Utc>,
    ) -> Result<Order, UpdateOrderError>;
}
