//! Where webhook endpoints are kept, deliveries wait and are made, and addresses are
//! checked (`docs/webhooks.md`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::events::model::EventId;
use crate::keys::model::KeyId;
use crate::repository_error::RepositoryError;
use crate::webhooks::claim_limits::ClaimLimits;
use crate::webhooks::delivery::{Attempt, AttemptId, Attempted, Backlog, Closed, Due, Outcome};
use crate::webhooks::model::{
    CreateEndpointError, DisabledReason, Endpoint, EndpointId, EndpointPatch, NewEndpoint,
    WebhookUrl, WebhookUrlError,
};

/// Where webhook endpoints are kept, beside the events the stores write: an event is
/// queued for delivery to every endpoint that wants it after its write's commit (see
/// [`WebhookDeliveries::fan_out`]).
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

    /// For operators: every endpoint, or `owner`'s, oldest first, each with the outcome of
    /// its last attempt.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    async fn survey(
        &self,
        owner: Option<&KeyId>,
    ) -> Result<Vec<(Endpoint, Option<Outcome>)>, RepositoryError>;

    /// For operators: disables the endpoint `id`, whoever owns it, for `reason`, and returns
    /// it as it is then; `None` when there is none. An endpoint disabled for good keeps its
    /// first reason.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store fails; nothing changes then.
    async fn disable(
        &self,
        id: EndpointId,
        reason: DisabledReason,
    ) -> Result<Option<Endpoint>, RepositoryError>;
}

/// Where deliveries wait, claimed by the instances that attempt them, and where their
/// attempts are recorded.
#[async_trait]
pub trait WebhookDeliveries: Send + Sync + 'static {
    /// Claims deliveries due at `now` to enabled endpoints, within `limits` (how many in
    /// all, of one endpoint's, of one owner's), oldest due first, leased `until`: no other
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
        limits: &ClaimLimits,
    ) -> Result<Vec<Due>, RepositoryError>;

    /// Queues the deliveries of up to `batch` events recorded since the last fan-out, each
    /// for every enabled endpoint that wants it, whose owner sees it, and that was registered
    /// before it; returns how many events it fanned out (0 once none waits). A write records
    /// its event only, so that it costs the same however many endpoints want it; its
    /// deliveries are queued here, after its commit, once, even across a crash.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store fails; nothing is queued then.
    async fn fan_out(&self, batch: usize) -> Result<usize, RepositoryError>;

    /// How many owners have deliveries due at `now` to enabled endpoints, leased or not:
    /// those that share the slots of a claim (see [`ClaimLimits::slots`]).
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store fails.
    async fn owners_due(&self, now: DateTime<Utc>) -> Result<usize, RepositoryError>;

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
    /// starts. Where one process alone writes the store (SQLite, memory), every lease
    /// stored is such (an SQLite store keeps its own process's leases in memory, and ends
    /// those an earlier version stored); where several instances share it (PostgreSQL),
    /// none is known to be, and the leases run out. Returns how many it ended.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store fails.
    async fn release_leases(&self) -> Result<u64, RepositoryError>;

    /// Ends what may no longer be delivered, at `now`: disables, for
    /// [`DisabledReason::KeyEnded`], every enabled endpoint whose owner's rotation chain has no
    /// live key left (each revoked or expired: a rotation keeps the line live); then drops up
    /// to `batch` of the deliveries that wait for an endpoint disabled for good, each
    /// recorded as an attempt made `now` whose outcome is [`Outcome::Dropped`].
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store fails.
    async fn close(&self, now: DateTime<Utc>, batch: usize) -> Result<Closed, RepositoryError>;

    /// Bounds each endpoint's backlog to `max_waiting` deliveries: drops up to `batch` of
    /// those beyond it, the soonest due first (the oldest waiting), each recorded as
    /// [`Outcome::Dropped`] at `now`; returns how many it dropped.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store fails.
    async fn trim(
        &self,
        now: DateTime<Utc>,
        max_waiting: usize,
        batch: usize,
    ) -> Result<usize, RepositoryError>;

    /// Removes at most `batch` of the attempts made before `before`, the oldest first, and
    /// says how many it removed.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store fails.
    async fn sweep(&self, before: DateTime<Utc>, batch: usize) -> Result<usize, RepositoryError>;

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
    /// secret as Standard Webhooks says; what it came to. The signature's time is the wall
    /// clock's at signing, not the service's clock: receivers check it against theirs, so a
    /// harness that moves the service's clock still gets deliveries they accept.
    async fn send(&self, endpoint: &Endpoint, event: EventId, body: &str) -> Outcome;
}

/// Where an endpoint's address is checked on the network: its host resolved, and every address it
/// resolves to checked (see [`is_refused_address`](crate::webhooks::model::is_refused_address)).
#[async_trait]
pub trait AddressCheck: Send + Sync + 'static {
    /// Whether deliveries to `url` may be made now.
    ///
    /// # Errors
    ///
    /// [`WebhookUrlError::NotPublic`], when an address it resolves to may not be called or
    /// it does not resolve.
    async fn check(&self, url: &WebhookUrl) -> Result<(), WebhookUrlError>;
}
