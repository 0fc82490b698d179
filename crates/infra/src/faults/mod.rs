//! Wrappers that make any adapter fail on purpose: every Nth call fails with a chosen error,
//! and every call waits a chosen latency first. For tests of what clients see when a store
//! misbehaves, and for `memory://`'s fault options, which ship in every build: client teams
//! test their retries against the real binary.
//!
//! A failure is injected before the call reaches the wrapped store, so a failed write stores
//! nothing, as every port promises.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use animal_store_domain::{
    AnswerEncoder, ChangePetError, Event, EventId, EventLog, EventType, IdempotencyStore,
    IdempotentWrite, Inventory, KeyId, KeyUse, NewOrder, NewPet, Order, OrderAnswered, OrderId,
    OrderRepository, OrderStatus, Pet, PetChanges, PetId, PetPatch, PetRepository, PetStatus,
    PlaceOrderError, Precondition, RepositoryError, StoredAnswer, UpdateOrderError,
};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use thiserror::Error;

mod keys;

pub use keys::{FaultyApiKeyStore, SlowRateLimiter};

/// Which error an injected failure is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// [`RepositoryError::Unavailable`]: the store could not be reached (a 503).
    Unavailable,
    /// [`RepositoryError::Backend`]: the store failed for good (a 500).
    Backend,
}

/// What to inject. The calls are counted once for both kinds of failure: a call whose number
/// both divide fails with `kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Faults {
    /// Every Nth call fails (the Nth, the 2Nth...) with `kind`; `None` for none.
    pub fail_every: Option<u64>,
    /// The error of a failed call.
    pub kind: FaultKind,
    /// Every Nth call fails with [`FaultKind::Backend`]: a 500; `None` for none.
    pub backend_every: Option<u64>,
    /// How long every call waits before it runs (or fails).
    pub latency: Duration,
}

impl Default for Faults {
    fn default() -> Self {
        Self {
            fail_every: None,
            kind: FaultKind::Unavailable,
            backend_every: None,
            latency: Duration::ZERO,
        }
    }
}

/// The cause of an injected failure, for logs.
#[derive(Debug, Error)]
#[error("a failure injected for testing (call {call})")]
pub struct InjectedFault {
    /// The number of the call that failed, from 1.
    pub call: u64,
}

/// Counts calls and decides which fail. Shared by the wrappers of one store.
#[derive(Debug)]
pub struct Injector {
    faults: Mutex<Faults>,
    calls: AtomicU64,
}

impl Injector {
    /// An injector of `faults`.
    pub fn new(faults: Faults) -> Arc<Self> {
        Arc::new(Self { faults: Mutex::new(faults), calls: AtomicU64::new(0) })
    }

    /// Injects `faults` from now on: `Faults::default()` stops every fault.
    pub fn set(&self, faults: Faults) {
        *self.faults.lock().unwrap_or_else(PoisonError::into_inner) = faults;
    }

    /// Waits the latency, then counts the call and says whether it fails.
    ///
    /// # Errors
    ///
    /// The injected error, on every Nth call.
    pub async fn call(&self) -> Result<(), RepositoryError> {
        let faults = *self.faults.lock().unwrap_or_else(PoisonError::into_inner);
        if !faults.latency.is_zero() {
            tokio::time::sleep(faults.latency).await;
        }
        let call = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let every = |n: Option<u64>| n.is_some_and(|n| n > 0 && call.is_multiple_of(n));
        let kind = if every(faults.fail_every) {
            faults.kind
        } else if every(faults.backend_every) {
            FaultKind::Backend
        } else {
            return Ok(());
        };
        let fault = Box::new(InjectedFault { call });
        Err(match kind {
            FaultKind::Unavailable => RepositoryError::Unavailable(fault),
            FaultKind::Backend => RepositoryError::Backend(fault),
        })
    }
}

/// A [`PetRepository`] that fails on purpose.
pub struct FaultyPetRepository {
    inner: Arc<dyn PetRepository>,
    injector: Arc<Injector>,
}

impl FaultyPetRepository {
    /// `inner`, failing as `injector` decides.
    pub fn new(inner: Arc<dyn PetRepository>, injector: Arc<Injector>) -> Self {
        Self { inner, injector }
    }
}

#[async_trait]
impl PetRepository for FaultyPetRepository {
    async fn create(&self, pet: NewPet) -> Result<Pet, RepositoryError> {
        self.injector.call().await?;
        self.inner.create(pet).await
    }

    async fn get(&self, id: PetId) -> Result<Option<Pet>, RepositoryError> {
        self.injector.call().await?;
        self.inner.get(id).await
    }

    async fn list(
        &self,
        status: Option<PetStatus>,
        after: Option<PetId>,
        count: usize,
    ) -> Result<Vec<Pet>, RepositoryError> {
        self.injector.call().await?;
        self.inner.list(status, after, count).await
    }

    async fn get_many(&self, ids: &[PetId]) -> Result<Vec<Pet>, RepositoryError> {
        self.injector.call().await?;
        self.inner.get_many(ids).await
    }
}

/// A [`PetChanges`] that fails on purpose.
pub struct FaultyPetChanges {
    inner: Arc<dyn PetChanges>,
    injector: Arc<Injector>,
}

impl FaultyPetChanges {
    /// `inner`, failing as `injector` decides.
    pub fn new(inner: Arc<dyn PetChanges>, injector: Arc<Injector>) -> Self {
        Self { inner, injector }
    }
}

#[async_trait]
impl PetChanges for FaultyPetChanges {
    async fn update(
        &self,
        id: PetId,
        patch: PetPatch,
        expected: Option<Precondition>,
    ) -> Result<Pet, ChangePetError> {
        self.injector.call().await?;
        self.inner.update(id, patch, expected).await
    }

    async fn remove(
        &self,
        id: PetId,
        expected: Option<Precondition>,
    ) -> Result<Pet, ChangePetError> {
        self.injector.call().await?;
        self.inner.remove(id, expected).await
    }

    async fn inventory(&self) -> Result<Inventory, RepositoryError> {
        self.injector.call().await?;
        self.inner.inventory().await
    }
}

/// An [`EventLog`] that fails on purpose.
pub struct FaultyEventLog {
    inner: Arc<dyn EventLog>,
    injector: Arc<Injector>,
}

impl FaultyEventLog {
    /// `inner`, failing as `injector` decides.
    pub fn new(inner: Arc<dyn EventLog>, injector: Arc<Injector>) -> Self {
        Self { inner, injector }
    }
}

#[async_trait]
impl EventLog for FaultyEventLog {
    async fn list(
        &self,
        reader: &KeyId,
        kind: Option<EventType>,
        after: Option<EventId>,
        count: usize,
    ) -> Result<Vec<Event>, RepositoryError> {
        self.injector.call().await?;
        self.inner.list(reader, kind, after, count).await
    }

    async fn get(&self, reader: &KeyId, id: EventId) -> Result<Option<Event>, RepositoryError> {
        self.injector.call().await?;
        self.inner.get(reader, id).await
    }

    /// Not counted: the sweep runs in the background, and a harness counts requests.
    async fn sweep(&self, before: DateTime<Utc>, batch: usize) -> Result<usize, RepositoryError> {
        self.inner.sweep(before, batch).await
    }
}

/// An [`OrderRepository`] that fails on purpose.
pub struct FaultyOrderRepository {
    inner: Arc<dyn OrderRepository>,
    injector: Arc<Injector>,
}

impl FaultyOrderRepository {
    /// `inner`, failing as `injector` decides.
    pub fn new(inner: Arc<dyn OrderRepository>, injector: Arc<Injector>) -> Self {
        Self { inner, injector }
    }
}

#[async_trait]
impl OrderRepository for FaultyOrderRepository {
    async fn place(&self, order: NewOrder) -> Result<Order, PlaceOrderError> {
        self.injector.call().await?;
        self.inner.place(order).await
    }

    async fn get(&self, owner: &KeyId, id: OrderId) -> Result<Option<Order>, RepositoryError> {
        self.injector.call().await?;
        self.inner.get(owner, id).await
    }

    async fn list(
        &self,
        owner: &KeyId,
        status: Option<OrderStatus>,
        after: Option<OrderId>,
        count: usize,
    ) -> Result<Vec<Order>, RepositoryError> {
        self.injector.call().await?;
        self.inner.list(owner, status, after, count).await
    }

    async fn update_status(
        &self,
        owner: &KeyId,
        id: OrderId,
        to: OrderStatus,
        at: DateTime<Utc>,
    ) -> Result<Order, UpdateOrderError> {
        self.injector.call().await?;
        self.inner.update_status(owner, id, to, at).await
    }
}

/// An [`IdempotencyStore`] that fails on purpose. Its keyed writes fail or lag as `injector`
/// decides; the sweep, which no request makes, passes untouched and counts no call.
pub struct FaultyIdempotencyStore {
    inner: Arc<dyn IdempotencyStore>,
    injector: Arc<Injector>,
}

impl FaultyIdempotencyStore {
    /// `inner`, failing as `injector` decides.
    pub fn new(inner: Arc<dyn IdempotencyStore>, injector: Arc<Injector>) -> Self {
        Self { inner, injector }
    }
}

#[async_trait]
impl IdempotencyStore for FaultyIdempotencyStore {
    async fn create_pet(
        &self,
        write: IdempotentWrite,
        pet: NewPet,
        answers: Arc<dyn AnswerEncoder>,
    ) -> Result<KeyUse<(Pet, StoredAnswer)>, RepositoryError> {
        self.injector.call().await?;
        self.inner.create_pet(write, pet, answers).await
    }

    async fn place_order(
        &self,
        write: IdempotentWrite,
        order: NewOrder,
        answers: Arc<dyn AnswerEncoder>,
    ) -> Result<KeyUse<OrderAnswered>, RepositoryError> {
        self.injector.call().await?;
        self.inner.place_order(write, order, answers).await
    }

    async fn sweep(&self, before: DateTime<Utc>, batch: usize) -> Result<usize, RepositoryError> {
        self.inner.sweep(before, batch).await
    }
}
