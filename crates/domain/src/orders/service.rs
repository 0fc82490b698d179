//! The order use cases: placing, reading and moving the caller's own orders.

use std::sync::Arc;
use std::time::SystemTime;

use chrono::{DateTime, SubsecRound, Utc};

use crate::ids::OrderId;
use crate::keys::model::KeyId;
use crate::listing::{Listing, Page};
use crate::orders::model::{
    GetOrderError, NewOrder, Order, OrderStatus, PlaceOrderError, UpdateOrderError,
};
use crate::orders::ports::OrderRepository;
use crate::pets::model::PetId;
use crate::ports::Clock;
use crate::repository_error::RepositoryError;

/// What a listing of orders asks for: a status, a page size, the order a cursor names.
pub type OrderListing = Listing<OrderStatus, OrderId>;

/// One page of orders.
pub type OrderPage = Page<Order, OrderId>;

/// Orders, each visible to its owner only.
#[derive(Clone)]
pub struct OrderService {
    orders: Arc<dyn OrderRepository>,
    clock: Arc<dyn Clock>,
}

impl OrderService {
    /// Orders kept in `orders`, placed and moved at the time `clock` gives.
    pub fn new(orders: Arc<dyn OrderRepository>, clock: Arc<dyn Clock>) -> Self {
        Self { orders, clock }
    }

    /// The time now, to the second: what the store keeps and the API shows.
    fn now(&self) -> DateTime<Utc> {
        to_the_second(self.clock.now())
    }

    /// Places an order for `pet` owned by `owner`, reserving the pet.
    ///
    /// # Errors
    ///
    /// [`PlaceOrderError`] when the pet does not exist, is not available, or the store fails.
    pub async fn place(&self, owner: &KeyId, pet: PetId) -> Result<Order, PlaceOrderError> {
        let order = NewOrder { pet_id: pet, owner: owner.clone(), at: self.now() };
        self.orders.place(order).await
    }

    /// `owner`'s order `id`.
    ///
    /// # Errors
    ///
    /// [`GetOrderError::NotFound`] when `owner` has none with this id.
    pub async fn get(&self, owner: &KeyId, id: OrderId) -> Result<Order, GetOrderError> {
        self.orders.get(owner, id).await?.ok_or(GetOrderError::NotFound(id))
    }

    /// One page of `owner`'s orders.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    pub async fn list(
        &self,
        owner: &KeyId,
        listing: OrderListing,
    ) -> Result<OrderPage, RepositoryError> {
        let fetched =
            self.orders.list(owner, listing.filter, listing.after, listing.fetch()).await?;
        Ok(listing.page(fetched, |order| order.id))
    }

    /// Moves `owner`'s order `id` to `to`; its pet follows.
    ///
    /// # Errors
    ///
    /// [`UpdateOrderError`] when there is no such order, the move is not allowed, or the
    /// store fails.
    pub async fn update(
        &self,
        owner: &KeyId,
        id: OrderId,
        to: OrderStatus,
    ) -> Result<Order, UpdateOrderError> {
        self.orders.update_status(owner, id, to, self.now()).await
    }
}

/// `at` to the second, as orders keep their times.
pub fn to_the_second(at: SystemTime) -> DateTime<Utc> {
    DateTime::<Utc>::from(at).trunc_subsecs(0)
}
