//! Wrappers that make any adapter fail on purpose: every Nth call fails with a chosen error,
//! and every call waits a chosen latency first. For tests of what clients see when a store
//! misbehaves, and for `memory://`'s fault options, which ship in every build: client teams
//! test their retries against the real binary.
//!
//! A failure is injected before the call reaches the wrapped store, so a failed write stores
//! nothing, as every port promises.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use animal_store_domain::{
    ApiKey, ApiKeyStore, ChangePetError, Decision, Event, EventId, EventLog, EventType, GiveBack,
    IdempotencyStore, IdempotentWrite, Inventory, KeyDigest, KeyId, KeyUse, NewOrder, NewPet,
    Order, OrderId, OrderRepository, OrderStatus, Pet, PetChanges, PetId, PetPatch, PetRepository,
    PetStatus, PlaceOrderError, Precondition, Quota, RateLimitPolicy, RateLimiter, RenderOrder,
    RenderPet, RepositoryError, Rotation, Subject, UpdateOrderError,
};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use thiserror::Error;

/// Which error an injected failure is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// [`RepositoryError::Unavailable`]: the store could not be reached (a 503).
    Unavailable,
    /// [`RepositoryError::Backend`]: the store failed for good (a 500).
    Backend,
}

/// What to inject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Faults {
    /// Every Nth call fails (the Nth, the 2Nth...); `None` for none.
    pub fail_every: Option<u64>,
    /// The error of a failed call.
    pub kind: FaultKind,
    /// How long every call waits before it runs (or fails).
    pub latency: Duration,
}

impl Default for Faults {
    fn default() -> Self {
        Self { fail_every: None, kind: FaultKind::Unavailable, latency: Duration::ZERO }
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
        match faults.fail_every {
            Some(every) if every > 0 && call.is_multiple_of(every) => Err(match faults.kind {
                FaultKind::Unavailable => {
                    RepositoryError::Unavailable(Box::new(InjectedFault { call }))
                }
                FaultKind::Backend => RepositoryError::Backend(Box::new(InjectedFault { call })),
            }),
            _ => Ok(()),
        }
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
        render: RenderPet,
    ) -> Result<KeyUse<Pet>, RepositoryError> {
        self.injector.call().await?;
        self.inner.create_pet(write, pet, render).await
    }

    async fn place_order(
        &self,
        write: IdempotentWrite,
        order: NewOrder,
        render: RenderOrder,
    ) -> Result<KeyUse<Result<Order, PlaceOrderError>>, RepositoryError> {
        self.injector.call().await?;
        self.inner.place_order(write, order, render).await
    }

    async fn sweep(&self, before: DateTime<Utc>, batch: usize) -> Result<usize, RepositoryError> {
        self.inner.sweep(before, batch).await
    }
}

/// An [`ApiKeyStore`] that fails on purpose.
pub struct FaultyApiKeyStore {
    inner: Arc<dyn ApiKeyStore>,
    injector: Arc<Injector>,
}

impl FaultyApiKeyStore {
    /// `inner`, failing as `injector` decides.
    pub fn new(inner: Arc<dyn ApiKeyStore>, injector: Arc<Injector>) -> Self {
        Self { inner, injector }
    }
}

#[async_trait]
impl ApiKeyStore for FaultyApiKeyStore {
    async fn create(&self, key: &ApiKey) -> Result<(), RepositoryError> {
        self.injector.call().await?;
        self.inner.create(key).await
    }

    async fn find_by_digest(&self, digest: &KeyDigest) -> Result<Option<ApiKey>, RepositoryError> {
        self.injector.call().await?;
        self.inner.find_by_digest(digest).await
    }

    async fn list(&self) -> Result<Vec<ApiKey>, RepositoryError> {
        self.injector.call().await?;
        self.inner.list().await
    }

    async fn revoke(&self, id: &KeyId, at: SystemTime) -> Result<Option<ApiKey>, RepositoryError> {
        self.injector.call().await?;
        self.inner.revoke(id, at).await
    }

    async fn rotate(
        &self,
        successor: &ApiKey,
        old: &KeyId,
        now: SystemTime,
        until: SystemTime,
    ) -> Result<Rotation, RepositoryError> {
        self.injector.call().await?;
        self.inner.rotate(successor, old, now, until).await
    }

    async fn touch(&self, id: &KeyId, at: SystemTime) -> Result<(), RepositoryError> {
        self.injector.call().await?;
        self.inner.touch(id, at).await
    }
}

/// A [`RateLimiter`] that lags on purpose. Its port cannot fail (every request gets a
/// decision), so only the latency of the [`Faults`] applies: for tests of what a slow shared
/// limiter store does to requests.
pub struct SlowRateLimiter {
    inner: Arc<dyn RateLimiter>,
    latency: Duration,
}

impl SlowRateLimiter {
    /// `inner`, each decision `latency` late.
    pub fn new(inner: Arc<dyn RateLimiter>, latency: Duration) -> Self {
        Self { inner, latency }
    }
}

#[async_trait]
impl RateLimiter for SlowRateLimiter {
    async fn check(&self, subject: &Subject, quota: Quota) -> Decision {
        tokio::time::sleep(self.latency).await;
        self.inner.check(subject, quota).await
    }

    async fn peek(&self, subject: &Subject, quota: Quota) -> Decision {
        tokio::time::sleep(self.latency).await;
        self.inner.peek(subject, quota).await
    }

    async fn give_back(&self, subject: &Subject, taken: &Decision, windows: GiveBack) {
        tokio::time::sleep(self.latency).await;
        self.inner.give_back(subject, taken, windows).await;
    }

    fn policy(&self) -> RateLimitPolicy {
        self.inner.policy()
    }

    fn subjects(&self) -> Option<u64> {
        self.inner.subjects()
    }
}
