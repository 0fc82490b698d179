//! The webhook use cases: an owner's endpoints, registered, changed and removed, and the
//! attempts made to them; and the attempts themselves, made by each instance's deliverer.

use std::sync::Arc;

use rand::Rng as _;
use thiserror::Error;

use crate::events::model::Event;
use crate::keys::model::KeyId;
use crate::listing::{Listing, Page};
use crate::orders::service::to_the_second;
use crate::ports::Clock;
use crate::repository_error::RepositoryError;
use crate::webhooks::claim_limits::ClaimLimits;
use crate::webhooks::delivery::{Attempt, AttemptId, Attempted, Closed, Due, Outcome, Schedule};
use crate::webhooks::model::{
    CreateEndpointError, DisabledReason, Endpoint, EndpointId, EndpointPatch, EndpointStatus,
    EventSelection, EventSelectionError, NewEndpoint, WebhookSecret, WebhookUrl, WebhookUrlError,
};
use crate::webhooks::ports::{AddressCheck, WebhookDeliveries, WebhookEndpoints, WebhookSender};

/// What a listing of attempts asks for: a page size, the attempt before which it starts.
pub type AttemptListing = Listing<(), AttemptId>;

/// One page of attempts, newest first.
pub type AttemptPage = Page<Attempt, AttemptId>;

/// Why a webhook operation was refused.
#[derive(Debug, Error)]
pub enum WebhookError {
    /// The address is refused.
    #[error(transparent)]
    Url(#[from] WebhookUrlError),
    /// The event types name nothing, or an unknown type.
    #[error(transparent)]
    Events(#[from] EventSelectionError),
    /// The owner has 16 endpoints already.
    #[error("an owner may have at most 16 webhook endpoints; delete one first")]
    TooMany,
    /// The owner has no endpoint with this id.
    #[error("no webhook endpoint has id {0}")]
    NotFound(EndpointId),
    /// The endpoint is disabled for good: an operator disabled it.
    #[error(
        "webhook endpoint {0} was disabled by the service's operator and cannot be enabled \
         again; register a new endpoint"
    )]
    DisabledForGood(EndpointId),
    /// The store failed.
    #[error(transparent)]
    Repository(#[from] RepositoryError),
}

impl From<CreateEndpointError> for WebhookError {
    fn from(err: CreateEndpointError) -> Self {
        match err {
            CreateEndpointError::TooMany => Self::TooMany,
            CreateEndpointError::Repository(err) => Self::Repository(err),
        }
    }
}

/// A change an owner asks for, as sent: the fields it names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndpointChange {
    /// A new address.
    pub url: Option<String>,
    /// New event types.
    pub events: Option<Vec<String>>,
    /// Enabled or disabled.
    pub status: Option<EndpointStatus>,
}

/// An owner's webhook endpoints.
#[derive(Clone)]
pub struct WebhookService {
    endpoints: Arc<dyn WebhookEndpoints>,
    deliveries: Arc<dyn WebhookDeliveries>,
    check: Arc<dyn AddressCheck>,
    clock: Arc<dyn Clock>,
    allow_private: bool,
}

impl WebhookService {
    /// Endpoints kept in `endpoints`, their attempts in `deliveries`, their addresses
    /// resolved by `check`; `allow_private` admits `http` and every address (for tests and
    /// local development).
    pub fn new(
        endpoints: Arc<dyn WebhookEndpoints>,
        deliveries: Arc<dyn WebhookDeliveries>,
        check: Arc<dyn AddressCheck>,
        clock: Arc<dyn Clock>,
        allow_private: bool,
    ) -> Self {
        Self { endpoints, deliveries, check, clock, allow_private }
    }

    /// `text` as an endpoint's address: checked, and its host resolved and checked.
    async fn address(&self, text: &str) -> Result<WebhookUrl, WebhookError> {
        let url = WebhookUrl::parse(text, self.allow_private)?;
        if !self.allow_private {
            self.check.check(&url).await?;
        }
        Ok(url)
    }

    /// Registers an endpoint of `owner`'s at `url` for `events` (every type when `None`),
    /// with a new secret.
    ///
    /// # Errors
    ///
    /// [`WebhookError`]: a refused address, unknown event types, 16 endpoints already, or a
    /// store failure; nothing is stored then.
    pub async fn create(
        &self,
        owner: &KeyId,
        url: &str,
        events: Option<Vec<String>>,
    ) -> Result<Endpoint, WebhookError> {
        let events = match events {
            Some(names) => EventSelection::parse(names.iter().map(String::as_str))?,
            None => EventSelection::EVERY,
        };
        let url = self.address(url).await?;
        let endpoint = NewEndpoint {
            owner: owner.clone(),
            url,
            events,
            secret: WebhookSecret::generate(),
            at: to_the_second(self.clock.now()),
        };
        Ok(self.endpoints.create(endpoint).await?)
    }

    /// `owner`'s endpoints, oldest first.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    pub async fn list(&self, owner: &KeyId) -> Result<Vec<Endpoint>, RepositoryError> {
        self.endpoints.list(owner).await
    }

    /// `owner`'s endpoint `id`.
    ///
    /// # Errors
    ///
    /// [`WebhookError::NotFound`] when it has none with this id.
    pub async fn get(&self, owner: &KeyId, id: EndpointId) -> Result<Endpoint, WebhookError> {
        self.endpoints.get(owner, id).await?.ok_or(WebhookError::NotFound(id))
    }

    /// Changes what `change` names of `owner`'s endpoint `id`.
    ///
    /// # Errors
    ///
    /// [`WebhookError`]: no such endpoint, a refused address or unknown event types, or a
    /// store failure; nothing changes then.
    pub async fn update(
        &self,
        owner: &KeyId,
        id: EndpointId,
        change: EndpointChange,
    ) -> Result<Endpoint, WebhookError> {
        let EndpointChange { url, events, status } = change;
        let events = events
            .map(|names| EventSelection::parse(names.iter().map(String::as_str)))
            .transpose()?;
        let url = match url {
            Some(text) => Some(self.address(&text).await?),
            None => None,
        };
        let patch = EndpointPatch { url, events, status };
        if status == Some(EndpointStatus::Enabled) {
            let before = self.get(owner, id).await?;
            if !patch.allowed_on(&before) {
                return Err(WebhookError::DisabledForGood(id));
            }
        }
        self.endpoints.update(owner, id, patch).await?.ok_or(WebhookError::NotFound(id))
    }

    /// For operators: every endpoint, or `owner`'s, each with the outcome of its last
    /// attempt.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    pub async fn survey(
        &self,
        owner: Option<&KeyId>,
    ) -> Result<Vec<(Endpoint, Option<Outcome>)>, RepositoryError> {
        self.endpoints.survey(owner).await
    }

    /// For operators: disables the endpoint `id` for good, whoever owns it; what waits for
    /// it is dropped by the deliverers.
    ///
    /// # Errors
    ///
    /// [`WebhookError::NotFound`] when there is none with this id.
    pub async fn disable(&self, id: EndpointId) -> Result<Endpoint, WebhookError> {
        let disabled = self.endpoints.disable(id, DisabledReason::Operator).await?;
        disabled.ok_or(WebhookError::NotFound(id))
    }

    /// Removes `owner`'s endpoint `id`, and what waits to be delivered to it.
    ///
    /// # Errors
    ///
    /// [`WebhookError::NotFound`] when it has none with this id.
    pub async fn delete(&self, owner: &KeyId, id: EndpointId) -> Result<(), WebhookError> {
        if self.endpoints.delete(owner, id).await? {
            Ok(())
        } else {
            Err(WebhookError::NotFound(id))
        }
    }

    /// One page of the attempts made to `owner`'s endpoint `id`, newest first.
    ///
    /// # Errors
    ///
    /// [`WebhookError::NotFound`] when it has none with this id.
    pub async fn attempts(
        &self,
        owner: &KeyId,
        id: EndpointId,
        listing: AttemptListing,
    ) -> Result<AttemptPage, WebhookError> {
        let fetched = self.deliveries.attempts(owner, id, listing.after, listing.fetch()).await?;
        let fetched = fetched.ok_or(WebhookError::NotFound(id))?;
        Ok(listing.page(fetched, |attempt| attempt.id))
    }
}

/// How an event's body is written: as the API writes it (`listEvents`).
pub type RenderEvent = Arc<dyn Fn(&Event) -> String + Send + Sync>;

/// What each instance runs to make the deliveries: claims those due, attempts them,
/// records what came of them.
#[derive(Clone)]
pub struct Deliverer {
    deliveries: Arc<dyn WebhookDeliveries>,
    sender: Arc<dyn WebhookSender>,
    render: RenderEvent,
    clock: Arc<dyn Clock>,
    schedule: Schedule,
}

impl Deliverer {
    /// Deliveries kept in `deliveries`, sent by `sender` with bodies `render` writes, on
    /// `schedule`.
    pub fn new(
        deliveries: Arc<dyn WebhookDeliveries>,
        sender: Arc<dyn WebhookSender>,
        render: RenderEvent,
        clock: Arc<dyn Clock>,
        schedule: Schedule,
    ) -> Self {
        Self { deliveries, sender, render, clock, schedule }
    }

    /// Queues the deliveries of up to `batch` events recorded since the last fan-out (see
    /// [`WebhookDeliveries::fan_out`]); how many events it fanned out.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store fails.
    pub async fn fan_out(&self, batch: usize) -> Result<usize, RepositoryError> {
        self.deliveries.fan_out(batch).await
    }

    /// Claims deliveries due now within `limits`, for `lease`; with [`ClaimLimits::slots`],
    /// each owner with deliveries due gets an equal share of them.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store fails.
    pub async fn claim(
        &self,
        limits: &ClaimLimits,
        lease: std::time::Duration,
    ) -> Result<Vec<Due>, RepositoryError> {
        let now = chrono::DateTime::<chrono::Utc>::from(self.clock.now());
        let until = chrono::Duration::from_std(lease)
            .ok()
            .and_then(|lease| now.checked_add_signed(lease))
            .unwrap_or(chrono::DateTime::<chrono::Utc>::MAX_UTC);
        if limits.slots == 0 {
            return self.deliveries.claim(now, until, limits).await;
        }
        let owners = self.deliveries.owners_due(now).await?;
        self.deliveries.claim(now, until, &limits.shared_among(owners)).await
    }

    /// Ends what may no longer be delivered (see [`WebhookDeliveries::close`]): endpoints
    /// whose key's rotation chain ended are disabled, and what waits for endpoints disabled
    /// for good is dropped, a `batch` at a time until none is left.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store fails; what was done before stays done.
    pub async fn close(&self, batch: usize) -> Result<Closed, RepositoryError> {
        let now = chrono::DateTime::<chrono::Utc>::from(self.clock.now());
        let mut closed = Closed::default();
        loop {
            let pass = self.deliveries.close(now, batch).await?;
            closed.endpoints += pass.endpoints;
            closed.dropped += pass.dropped;
            if pass.dropped < u64::try_from(batch).unwrap_or(u64::MAX) {
                return Ok(closed);
            }
        }
    }

    /// Bounds each endpoint's backlog to `max_waiting` deliveries (see
    /// [`WebhookDeliveries::trim`]), a `batch` at a time; returns how many it dropped.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store fails; what was dropped before stays dropped.
    pub async fn trim(&self, max_waiting: usize, batch: usize) -> Result<usize, RepositoryError> {
        let now = chrono::DateTime::<chrono::Utc>::from(self.clock.now());
        crate::events::service::in_batches(batch, || self.deliveries.trim(now, max_waiting, batch))
            .await
    }

    /// Removes the attempts made before `before` (see [`EventService::kept_since`]: they
    /// are kept as long as their events), a `batch` at a time until none is left; returns
    /// how many it removed.
    ///
    /// [`EventService::kept_since`]: crate::EventService::kept_since
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store fails; what was removed before stays removed.
    pub async fn sweep(
        &self,
        before: chrono::DateTime<chrono::Utc>,
        batch: usize,
    ) -> Result<usize, RepositoryError> {
        crate::events::service::in_batches(batch, || self.deliveries.sweep(before, batch)).await
    }

    /// Makes the attempt `due` is for, and says what came of it and when the next is due.
    pub async fn attempt(&self, due: &Due) -> Attempted {
        let body = (self.render)(&due.event);
        let at = to_the_second(self.clock.now());
        let outcome = self.sender.send(&due.endpoint, due.event.id, &body).await;
        let next_attempt_at = if outcome.delivered() {
            None
        } else {
            let jitter = rand::rng().random_range(-1.0..=1.0);
            self.schedule.next(due.attempt, at, jitter)
        };
        due.attempted(at, outcome, next_attempt_at)
    }

    /// Records `attempts`.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store fails.
    pub async fn record(&self, attempts: Vec<Attempted>) -> Result<(), RepositoryError> {
        self.deliveries.record(attempts, self.schedule.disable_after()).await
    }

    /// Ends the leases of instances no longer running (see
    /// [`WebhookDeliveries::release_leases`]).
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store fails.
    pub async fn release_leases(&self) -> Result<u64, RepositoryError> {
        self.deliveries.release_leases().await
    }

    /// How many deliveries wait, and since when.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    pub async fn backlog(&self) -> Result<crate::webhooks::delivery::Backlog, RepositoryError> {
        self.deliveries.backlog().await
    }
}
