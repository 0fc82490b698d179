//! The ports: what the domain needs from the outside world, as small traits.
//!
//! Adapters in `animal-store-infra` implement them for SQLite, PostgreSQL and memory; every
//! adapter of a port passes the same conformance suite. Ports are used as `Arc<dyn Port>` so
//! the adapter is picked at run time from configuration.

use std::time::SystemTime;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::api_key::{ApiKey, KeyDigest, KeyId};
use crate::changes::{ChangePetError, Inventory, PetPatch, Precondition};
use crate::idempotency::{IdempotentWrite, KeyUse, RenderOrder, RenderPet};
use crate::order::{NewOrder, Order, OrderId, OrderStatus, PlaceOrderError, UpdateOrderError};
use crate::pet::{NewPet, Pet, PetId, PetStatus};
use crate::repository_error::RepositoryError;

mod feed;

pub use feed::{AddressCheck, EventLog, WebhookDeliveries, WebhookEndpoints, WebhookSender};

/// Where pets are kept.
#[async_trait]
pub trait PetRepository: Send + Sync + 'static {
    /// Stores a new pet durably and returns it with the id the store assigned. Ids grow: a
    /// pet added later has a greater id.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the pet could not be stored; nothing is stored then.
    async fn create(&self, pet: NewPet) -> Result<Pet, RepositoryError>;

    /// The pet with this id, if there is one.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    async fn get(&self, id: PetId) -> Result<Option<Pet>, RepositoryError>;

    /// Up to `count` pets whose id is greater than `after` (all when `None`) and, when
    /// `status` is given, whose status is `status`, ordered by id ascending.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    async fn list(
        &self,
        status: Option<PetStatus>,
        after: Option<PetId>,
        count: usize,
    ) -> Result<Vec<Pet>, RepositoryError>;
}

/// Where pets are changed, removed and counted, beside the orders that hold them: an open
/// order's pet keeps its status and stays (see [`PetChange::needs_release`]). A port of its
/// own, so that an adapter of [`PetRepository`] written before it still compiles.
///
/// [`PetChange::needs_release`]: crate::changes::PetChange::needs_release
#[async_trait]
pub trait PetChanges: Send + Sync + 'static {
    /// In one transaction: if the pet exists, `expected` holds for it as stored, and no open
    /// order forbids the patch, applies `patch` and returns the pet as it is then.
    ///
    /// # Errors
    ///
    /// [`ChangePetError::NotFound`], [`ChangePetError::PreconditionFailed`] or
    /// [`ChangePetError::Held`], decided in that order, and nothing changes;
    /// [`ChangePetError::Repository`] when the store fails, and nothing changes.
    async fn update(
        &self,
        id: PetId,
        patch: PetPatch,
        expected: Option<Precondition>,
    ) -> Result<Pet, ChangePetError>;

    /// In one transaction: if the pet exists, `expected` holds for it and no open order
    /// holds it, removes it and returns it as it was. Its id is never given to another pet;
    /// the closed orders that name it stay.
    ///
    /// # Errors
    ///
    /// As [`PetChanges::update`].
    async fn remove(
        &self,
        id: PetId,
        expected: Option<Precondition>,
    ) -> Result<Pet, ChangePetError>;

    /// How many pets have each status, exact after every committed write, at a cost that
    /// does not grow with the number of pets.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    async fn inventory(&self) -> Result<Inventory, RepositoryError>;
}

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

/// Where idempotency records are kept, beside the pets and orders whose creation they record
/// (`docs/api.md#idempotent-retries`): a record and what it records commit together, so that
/// after any crash either both are stored or neither is.
#[async_trait]
pub trait IdempotencyStore: Send + Sync + 'static {
    /// In one transaction: unless `write`'s key has an unexpired record, adds `pet` and
    /// stores the record of `write` with the response `render` gives for it; otherwise adds
    /// nothing and returns the record. Of concurrent calls with one key, one adds its pet.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the transaction did not commit: nothing is stored then.
    async fn create_pet(
        &self,
        write: IdempotentWrite,
        pet: NewPet,
        render: RenderPet,
    ) -> Result<KeyUse<Pet>, RepositoryError>;

    /// [`IdempotencyStore::create_pet`] for placing an order: an order the rules refuse (its
    /// animal missing or not available) is recorded too, with the response `render` gives.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the transaction did not commit: nothing is stored then.
    async fn place_order(
        &self,
        write: IdempotentWrite,
        order: NewOrder,
        render: RenderOrder,
    ) -> Result<KeyUse<Result<Order, PlaceOrderError>>, RepositoryError>;

    /// Removes at most `batch` records created before `before`, and says how many it removed.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store fails.
    async fn sweep(&self, before: DateTime<Utc>, batch: usize) -> Result<usize, RepositoryError>;
}

/// Where API keys are kept.
#[async_trait]
pub trait ApiKeyStore: Send + Sync + 'static {
    /// Stores a new key.
    ///
    /// # Errors
    ///
    /// [`RepositoryError::Duplicate`] when a key with the same id or digest exists; other
    /// [`RepositoryError`]s when the store fails.
    async fn create(&self, key: &ApiKey) -> Result<(), RepositoryError>;

    /// The key whose digest is `digest`, revoked or not.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    async fn find_by_digest(&self, digest: &KeyDigest) -> Result<Option<ApiKey>, RepositoryError>;

    /// What [`Self::find_by_digest`] would answer, when this store can tell without reading
    /// its storage (a cache's fresh entry): `Some` of the answer, or `None` when only a
    /// lookup can tell. Stores that always read their storage keep this default.
    async fn find_at_hand(&self, _digest: &KeyDigest) -> Option<Option<ApiKey>> {
        None
    }

    /// Every key, revoked ones included, oldest first.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    async fn list(&self) -> Result<Vec<ApiKey>, RepositoryError>;

    /// Marks the key revoked at `at` and returns it; a key revoked before keeps its first
    /// revocation time. `None` when no key has this id.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store fails.
    async fn revoke(&self, id: &KeyId, at: SystemTime) -> Result<Option<ApiKey>, RepositoryError>;

    /// Stores `successor` and marks the key `old` as rotated to it, expiring at `until` (or
    /// at its own expiry, if sooner), in one step: only if `old` exists and is live at `now`
    /// (neither revoked, expired nor rotated already), else nothing is stored.
    ///
    /// # Errors
    ///
    /// [`RepositoryError::Duplicate`] when a key with the successor's id or digest exists;
    /// other [`RepositoryError`]s when the store fails.
    async fn rotate(
        &self,
        successor: &ApiKey,
        old: &KeyId,
        now: SystemTime,
        until: SystemTime,
    ) -> Result<Rotation, RepositoryError>;

    /// Records that the key authenticated a request at `at`.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store fails.
    async fn touch(&self, id: &KeyId, at: SystemTime) -> Result<(), RepositoryError>;
}

/// What [`ApiKeyStore::rotate`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rotation {
    /// The old key, now rotated; the successor is stored.
    Rotated(ApiKey),
    /// No key has the old id.
    NotFound,
    /// The old key as it is, revoked, expired or rotated already; nothing was stored.
    Refused(ApiKey),
}

/// A dependency the service cannot serve without (the database; later the shared
/// rate-limit store), as the readiness probe checks it.
#[async_trait]
pub trait HealthCheck: Send + Sync + 'static {
    /// What it is, as the probe's answer names it: `database`.
    fn name(&self) -> &'static str;

    /// Answers when the dependency does: a trivial round trip.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when it does not answer.
    async fn check(&self) -> Result<(), RepositoryError>;
}

/// The time. A port so that tests can stand at any instant (a sunset in 2030, a UTC
/// midnight) without waiting.
pub trait Clock: Send + Sync + 'static {
    /// The current instant.
    fn now(&self) -> SystemTime;
}
