//! Where events are read and swept.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::events::model::{Event, EventId, EventType};
use crate::keys::model::KeyId;
use crate::repository_error::RepositoryError;

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
