//! The event use cases: reading the caller's events, and removing those past their retention.

use std::sync::Arc;
use std::time::Duration;

use thiserror::Error;

use crate::events::model::{Event, EventId, EventType};
use crate::events::ports::EventLog;
use crate::keys::model::KeyId;
use crate::listing::{Listing, Page};
use crate::orders::service::to_the_second;
use crate::ports::Clock;
use crate::repository_error::RepositoryError;

/// What a listing of events asks for: a type, a page size, the event after which it starts.
pub type EventListing = Listing<EventType, EventId>;

/// One page of events.
pub type EventPage = Page<Event, EventId>;

/// How long events are kept unless configured otherwise: 30 days.
pub const EVENT_RETENTION: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// Why an event could not be fetched.
#[derive(Debug, Error)]
pub enum GetEventError {
    /// The caller sees no event with this id.
    #[error("no event has id {0}")]
    NotFound(EventId),
    /// The store failed.
    #[error(transparent)]
    Repository(#[from] RepositoryError),
}

/// The events, each seen by the keys it concerns (see [`Event::is_seen_by`]).
#[derive(Clone)]
pub struct EventService {
    log: Arc<dyn EventLog>,
    clock: Arc<dyn Clock>,
    retention: Duration,
}

impl EventService {
    /// Events read from `log`, kept for `retention` at the time `clock` gives.
    pub fn new(log: Arc<dyn EventLog>, clock: Arc<dyn Clock>, retention: Duration) -> Self {
        Self { log, clock, retention }
    }

    /// One page of the events `owner`'s keys see.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    pub async fn list(
        &self,
        owner: &KeyId,
        listing: EventListing,
    ) -> Result<EventPage, RepositoryError> {
        let fetched = self.log.list(owner, listing.filter, listing.after, listing.fetch()).await?;
        Ok(listing.page(fetched, |event| event.id))
    }

    /// The event `id`, if `owner`'s keys see it.
    ///
    /// # Errors
    ///
    /// [`GetEventError::NotFound`] when they see none with this id.
    pub async fn get(&self, owner: &KeyId, id: EventId) -> Result<Event, GetEventError> {
        self.log.get(owner, id).await?.ok_or(GetEventError::NotFound(id))
    }

    /// Removes the events older than the retention, a batch of at most `batch` at a time,
    /// until none is left; returns how many it removed.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store fails; what was removed before stays removed.
    pub async fn sweep(&self, batch: usize) -> Result<usize, RepositoryError> {
        let before = self.kept_since();
        in_batches(batch, || self.log.sweep(before, batch)).await
    }

    /// The instant from which events are kept: what was made before is past the retention.
    pub fn kept_since(&self) -> chrono::DateTime<chrono::Utc> {
        let retention = chrono::Duration::from_std(self.retention).unwrap_or(chrono::Duration::MAX);
        to_the_second(self.clock.now())
            .checked_sub_signed(retention)
            .unwrap_or(chrono::DateTime::<chrono::Utc>::MIN_UTC)
    }
}

/// Runs `sweep`, which removes at most `batch` items, until it removes fewer; returns how
/// many it removed in all.
pub(crate) async fn in_batches<F, Removing>(
    batch: usize,
    mut sweep: F,
) -> Result<usize, RepositoryError>
where
    F: FnMut() -> Removing,
    Removing: Future<Output = Result<usize, RepositoryError>>,
{
    let mut removed = 0;
    loop {
        let swept = sweep().await?;
        removed += swept;
        // Each batch is a write of its own: the writes queued meanwhile go first.
        if swept < batch {
            return Ok(removed);
        }
    }
}
