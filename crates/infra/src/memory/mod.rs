//! In-memory adapters. They keep nothing across restarts and are meant for tests, demos and
//! integration testers (`--database-url memory://`); they honour every port contract, which
//! the conformance suites check.

mod delivery_ends;
pub mod idempotency;
mod pets;
mod webhooks;

pub use idempotency::MemoryIdempotencyStore;
pub use pets::MemoryPetRepository;

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::SystemTime;

use animal_store_domain::{
    ApiKey, ApiKeyStore, KeyDigest, KeyId, NewEvent, NewOrder, Order, OrderId, OrderRepository,
    OrderStatus, PetStatus, PlaceOrderError, RepositoryError, Rotation, UpdateOrderError,
};
use async_trait::async_trait;
use chrono::{DateTime, Utc};

/// Orders in a map ordered by id, beside the pets of a [`MemoryPetRepository`] whose
/// statuses they change and which their open orders hold. A change holds the pets' lock,
/// then the orders', for its whole length: it is one transaction.
#[derive(Debug)]
pub struct MemoryOrderRepository {
    pets: Arc<MemoryPetRepository>,
    orders: Mutex<BTreeMap<OrderId, Order>>,
}

impl MemoryOrderRepository {
    /// No orders yet, for the pets of `pets`.
    pub fn new(pets: Arc<MemoryPetRepository>) -> Self {
        Self { pets, orders: Mutex::default() }
    }

    fn orders(&self) -> std::sync::MutexGuard<'_, BTreeMap<OrderId, Order>> {
        self.orders.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl MemoryOrderRepository {
    /// Places `order` at once.
    fn add(&self, order: NewOrder) -> Result<Order, PlaceOrderError> {
        let mut catalogue = self.pets.shelf();
        let pet = catalogue.get(order.pet_id).ok_or(PlaceOrderError::NoSuchPet(order.pet_id))?;
        if pet.status != PetStatus::Available {
            return Err(PlaceOrderError::PetNotAvailable { pet: pet.id, status: pet.status });
        }
        let mut orders = self.orders();
        let id = OrderId::new(orders.last_key_value().map_or(1, |(id, _)| id.get() + 1));
        let order = order.placed(id);
        let pet = catalogue.set_status(order.pet_id, order.status.pet_status());
        catalogue.hold(order.pet_id, id);
        orders.insert(id, order.clone());
        catalogue.record(NewEvent::of_order(order.clone(), pet));
        Ok(order)
    }
}

#[async_trait]
impl OrderRepository for MemoryOrderRepository {
    async fn place(&self, order: NewOrder) -> Result<Order, PlaceOrderError> {
        self.add(order)
    }

    async fn get(&self, owner: &KeyId, id: OrderId) -> Result<Option<Order>, RepositoryError> {
        Ok(self.orders().get(&id).filter(|order| order.owner == *owner).cloned())
    }

    async fn list(
        &self,
        owner: &KeyId,
        status: Option<OrderStatus>,
        after: Option<OrderId>,
        count: usize,
    ) -> Result<Vec<Order>, RepositoryError> {
        let from = after.map_or(Bound::Unbounded, Bound::Excluded);
        Ok(self
            .orders()
            .range((from, Bound::Unbounded))
            .map(|(_, order)| order)
            .filter(|order| order.owner == *owner && status.is_none_or(|s| order.status == s))
            .take(count)
            .cloned()
            .collect())
    }

    async fn update_status(
        &self,
        owner: &KeyId,
        id: OrderId,
        to: OrderStatus,
        at: DateTime<Utc>,
    ) -> Result<Order, UpdateOrderError> {
        let mut catalogue = self.pets.shelf();
        let mut orders = self.orders();
        let order = orders
            .get_mut(&id)
            .filter(|order| order.owner == *owner)
            .ok_or(UpdateOrderError::NotFound(id))?;
        let pet_status = order.status.move_to(to)?;
        let pet = catalogue.set_status(order.pet_id, pet_status);
        if !to.is_open() {
            catalogue.release(order.pet_id);
        }
        order.status = to;
        order.updated_at = at;
        catalogue.record(NewEvent::of_order(order.clone(), pet));
        Ok(order.clone())
    }
}

/// API keys in a map ordered by creation.
#[derive(Debug, Default)]
pub struct MemoryApiKeyStore {
    keys: RwLock<Vec<ApiKey>>,
}

impl MemoryApiKeyStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the rotation chain `owner` has a live key at `at`.
    pub(super) fn line_is_live(&self, owner: &KeyId, at: SystemTime) -> bool {
        let keys = self.keys.read().unwrap_or_else(PoisonError::into_inner);
        keys.iter().any(|key| key.owner == *owner && key.is_live(at))
    }

    fn update<T>(&self, id: &KeyId, f: impl FnOnce(&mut ApiKey) -> T) -> Option<T> {
        let mut keys = self.keys.write().unwrap_or_else(PoisonError::into_inner);
        keys.iter_mut().find(|k| &k.id == id).map(f)
    }
}

#[async_trait]
impl ApiKeyStore for MemoryApiKeyStore {
    async fn create(&self, key: &ApiKey) -> Result<(), RepositoryError> {
        let mut keys = self.keys.write().unwrap_or_else(PoisonError::into_inner);
        if keys.iter().any(|k| k.id == key.id || k.digest == key.digest) {
            return Err(RepositoryError::Duplicate);
        }
        keys.push(key.clone());
        Ok(())
    }

    async fn find_by_digest(&self, digest: &KeyDigest) -> Result<Option<ApiKey>, RepositoryError> {
        let keys = self.keys.read().unwrap_or_else(PoisonError::into_inner);
        Ok(keys.iter().find(|k| k.digest.matches(digest)).cloned())
    }

    async fn list(&self) -> Result<Vec<ApiKey>, RepositoryError> {
        Ok(self.keys.read().unwrap_or_else(PoisonError::into_inner).clone())
    }

    async fn revoke(&self, id: &KeyId, at: SystemTime) -> Result<Option<ApiKey>, RepositoryError> {
        Ok(self.update(id, |key| {
            key.revoked_at.get_or_insert(at);
            key.clone()
        }))
    }

    async fn rotate(
        &self,
        successor: &ApiKey,
        old: &KeyId,
        now: SystemTime,
        until: SystemTime,
    ) -> Result<Rotation, RepositoryError> {
        let mut keys = self.keys.write().unwrap_or_else(PoisonError::into_inner);
        if keys.iter().any(|k| k.id == successor.id || k.digest == successor.digest) {
            return Err(RepositoryError::Duplicate);
        }
        let Some(key) = keys.iter_mut().find(|k| k.id == *old) else {
            return Ok(Rotation::NotFound);
        };
        if key.rotated_to.is_some() || !key.is_live(now) {
            return Ok(Rotation::Refused(key.clone()));
        }
        key.rotated_to = Some(successor.id.clone());
        key.expires_at = Some(key.expires_at.map_or(until, |at| at.min(until)));
        let rotated = key.clone();
        keys.push(successor.clone());
        Ok(Rotation::Rotated(rotated))
    }

    async fn touch(&self, id: &KeyId, at: SystemTime) -> Result<(), RepositoryError> {
        self.update(id, |key| key.last_used_at = Some(at));
        Ok(())
    }
}
