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
use crate::delivery::{Attempt, AttemptId, Attempted, Backlog, Due, Outcome};
use crate::event::{Event, EventId, EventType};
use crate::idempotency::{IdempotentWrite, KeyUse, RenderOrder, RenderPet};
use crate::order::{NewOrder, Order, OrderId, OrderStatus, PlaceOrderError, UpdateOrderError};
use crate::pet::{NewPet, Pet, PetId, PetStatus};
use crate::webhook::{
    CreateEndpointError, Endpoint, EndpointId, EndpointPatch, NewEndpoint, WebhookUrl,
    WebhookUrlError,
};

use crate::repository_error::RepositoryError;

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

/// Where events are read and swept. The stores of the pets and the orders write them, each
/// in the transaction of the change it reports, so that a change and its event are both
/// stored or neither is.
#[async_trait]
pub trait EventLog: Send + Sync + 'static {
    /// Up to `count` of the events `reader`'s keys see (see [`Event::is_seen_by`]) whose id
    /// is greater than `after` (all when `None`) and, when `kind` is given, of that type,
    /// ordered by id ascending. An event is listed only once no event of a smaller id can
    /// still commit: a reader that asks again after the last id it was given misses none.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    async fn list(
        &self,
        reader: &KeyId,
        kind: Option<EventType>,
        after: Option<EventId>,
        count: usize,
    ) -> Result<Vec<Event>, RepositoryError>;

    /// The event with this id, if `reader`'s keys see it.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    async fn get(&self, reader: &KeyId, id: EventId) -> Result<Option<Event>, RepositoryError>;

    /// Removes at most `batch` events created before `before`, and says how many it removed.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store fails.
    async fn sweep(&self, before: DateTime<Utc>, batch: usize) -> Result<usize, RepositoryError>;
}

/// Where webhook endpoints are kept, beside the events the stores write: an event is
/// queued for delivery to every endpoint that wants it in the event's own transaction.
#[async_trait]
pub trait WebhookEndpoints: Send + Sync + 'static {
    /// Stores `endpoint`, unless its owner has [`MAX_ENDPOINTS`](crate::MAX_ENDPOINTS)
    /// already (decided in the same transaction).
    ///
    /// # Errors
    ///
    /// [`CreateEndpointError::TooMany`], and nothing is stored; a store failure.
    async fn create(&self, endpoint: NewEndpoint) -> Result<Endpoint, CreateEndpointError>;

    /// `owner`'s endpoints, oldest first.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    async fn list(&self, owner: &KeyId) -> Result<Vec<Endpoint>, RepositoryError>;

    /// `owner`'s endpoint `id`, if it has one.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    async fn get(&self, owner: &KeyId, id: EndpointId)
    -> Result<Option<Endpoint>, RepositoryError>;

    /// Applies `patch` to `owner`'s endpoint `id`, and returns it as it is then; `None` when
    /// `owner` has no such endpoint.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store fails; nothing changes then.
    async fn update(
        &self,
        owner: &KeyId,
        id: EndpointId,
        patch: EndpointPatch,
    ) -> Result<Option<Endpoint>, RepositoryError>;

    /// Removes `owner`'s endpoint `id` and what waits to be delivered to it; `false` when
    /// `owner` has no such endpoint.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store fails; nothing changes then.
    async fn delete(&self, owner: &KeyId, id: EndpointId) -> Result<bool, RepositoryError>;
}

/// Where deliveries wait, claimed by the instances that attempt them, and where their
/// attempts are recorded.
#[async_trait]
pub trait WebhookDeliveries: Send + Sync + 'static {
    /// Claims up to `count` deliveries due at `now` to enabled endpoints not in `busy`, at
    /// most `per_endpoint` of each endpoint's, oldest due first, leased `until`: no other
    /// claim takes them before (a delivery is attempted twice only when its instance dies
    /// mid-attempt).
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store fails; nothing is claimed then.
    async fn claim(
        &self,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
        count: usize,
        per_endpoint: usize,
        busy: &[EndpointId],
    ) -> Result<Vec<Due>, RepositoryError>;

    /// Records `attempts`, ending their leases: a delivery is done once delivered or given
    /// up (no next attempt), due again at its next attempt otherwise. An endpoint whose
    /// attempts have all failed for `disable_after` is disabled; one delivered to is
    /// failing no more.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store fails; nothing is recorded then, and the leases
    /// end by themselves.
    async fn record(
        &self,
        attempts: Vec<Attempted>,
        disable_after: std::time::Duration,
    ) -> Result<(), RepositoryError>;

    /// Up to `count` of the attempts made to `owner`'s endpoint `endpoint` whose id is less
    /// than `before` (all when `None`), newest first; `None` when `owner` has no such
    /// endpoint.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    async fn attempts(
        &self,
        owner: &KeyId,
        endpoint: EndpointId,
        before: Option<AttemptId>,
        count: usize,
    ) -> Result<Option<Vec<Attempt>>, RepositoryError>;

    /// Ends the leases that instances no longer running left, so that what they held is
    /// attempted at once rather than when the leases run out; called when an instance
    /// starts. Where one process alone writes the store (SQLite, memory), every lease is
    /// such; where several instances share it (PostgreSQL), none is known to be, and the
    /// leases run out. Returns how many it ended.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store fails.
    async fn release_leases(&self) -> Result<u64, RepositoryError>;

    /// How many deliveries wait, and since when the oldest does.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    async fn backlog(&self) -> Result<Backlog, RepositoryError>;
}

/// Where deliveries are made: an HTTP client.
#[async_trait]
pub trait WebhookSender: Send + Sync + 'static {
    /// Posts `body`, the event `event` as the API writes it, to `endpoint`, signed with its
    /// secret as Standard Webhooks says, at `now`; what it came to.
    async fn send(
        &self,
        endpoint: &Endpoint,
        event: EventId,
        body: &str,
        now: DateTime<Utc>,
    ) -> Outcome;
}

/// Where an endpoint's address is checked on the network: its host resolved, and every
/// address it resolves to checked (see [`is_refused_address`](crate::webhook::is_refused_address)).
#[async_trait]
pub trait AddressCheck: Send + Sync + 'static {
    /// Whether deliveries to `url` may be made now.
    ///
    /// # Errors
    ///
    /// [`WebhookUrlError::RefusedAddress`] or [`WebhookUrlError::Unresolved`].
    async fn check(&self, url: &WebhookUrl) -> Result<(), WebhookUrlError>;
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
