//! Deliveries: each event queued for every endpoint that wants it, after the commit of the
//! write that made it, then attempted until the endpoint answers 2xx, on a schedule that backs off
//! for 3 days (`docs/webhooks.md#retries`).

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::events::model::{Event, EventId};
use crate::webhooks::model::{Endpoint, EndpointId};

/// The identifier the store assigns to a delivery: one event for one endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DeliveryId(i64);

impl DeliveryId {
    /// Wraps an id as stored.
    pub const fn new(id: i64) -> Self {
        Self(id)
    }

    /// The id as an integer.
    pub const fn get(self) -> i64 {
        self.0
    }
}

/// The identifier the store assigns to an attempt; a later attempt has a greater id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AttemptId(i64);

impl AttemptId {
    /// Wraps an id as stored or as sent by a client.
    pub const fn new(id: i64) -> Self {
        Self(id)
    }

    /// The id as an integer.
    pub const fn get(self) -> i64 {
        self.0
    }
}

impl fmt::Display for AttemptId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// What one attempt came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The endpoint answered with this status: 2xx delivers, anything else (a redirect
    /// included, which is never followed) is retried.
    Status(u16),
    /// No complete answer within the timeout.
    Timeout,
    /// No connection, or it broke.
    ConnectionError,
    /// The host resolved to an address the service does not call.
    RefusedAddress,
    /// Not attempted, and never will be: the endpoint's rotation chain ended, an operator
    /// disabled it, or its backlog was full.
    Dropped,
}

impl Outcome {
    /// Whether the event is delivered.
    pub const fn delivered(self) -> bool {
        matches!(self, Self::Status(200..=299))
    }

    /// The kind of outcome, as the API and the store write it: `delivered`, `http_error`,
    /// `timeout`, `connection_error`, `refused_address` or `dropped`.
    pub const fn kind(self) -> &'static str {
        match self {
            Self::Status(200..=299) => "delivered",
            Self::Status(_) => "http_error",
            Self::Timeout => "timeout",
            Self::ConnectionError => "connection_error",
            Self::RefusedAddress => "refused_address",
            Self::Dropped => "dropped",
        }
    }

    /// The HTTP status, when the endpoint answered.
    pub const fn status(self) -> Option<u16> {
        match self {
            Self::Status(status) => Some(status),
            _ => None,
        }
    }

    /// The outcome a stored kind and status make.
    pub fn stored(kind: &str, status: Option<u16>) -> Option<Self> {
        match (kind, status) {
            ("delivered" | "http_error", Some(status)) => Some(Self::Status(status)),
            ("timeout", None) => Some(Self::Timeout),
            ("connection_error", None) => Some(Self::ConnectionError),
            ("refused_address", None) => Some(Self::RefusedAddress),
            ("dropped", None) => Some(Self::Dropped),
            _ => None,
        }
    }
}

/// A delivery due now, claimed by one instance for a while (its lease), with what it
/// needs to be attempted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Due {
    /// The delivery.
    pub delivery: DeliveryId,
    /// Which attempt this is: 1 for the first.
    pub attempt: u32,
    /// Where it goes.
    pub endpoint: Endpoint,
    /// What it carries.
    pub event: Event,
}

impl Due {
    /// This attempt, made `at`, to record: what came of it, and when the next is due
    /// (`None` once delivered, or given up).
    #[must_use]
    pub fn attempted(
        &self,
        at: DateTime<Utc>,
        outcome: Outcome,
        next_attempt_at: Option<DateTime<Utc>>,
    ) -> Attempted {
        Attempted {
            delivery: self.delivery,
            endpoint: self.endpoint.id,
            event: self.event.id,
            attempt: self.attempt,
            at,
            outcome,
            next_attempt_at,
        }
    }
}

/// An attempt made, to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempted {
    /// The delivery.
    pub delivery: DeliveryId,
    /// Its endpoint.
    pub endpoint: EndpointId,
    /// Its event.
    pub event: EventId,
    /// Which attempt it was: 1 for the first.
    pub attempt: u32,
    /// When it was made, to the second.
    pub at: DateTime<Utc>,
    /// What it came to.
    pub outcome: Outcome,
    /// When the next attempt is due: `None` once delivered, or given up.
    pub next_attempt_at: Option<DateTime<Utc>>,
}

/// An attempt as the deliveries' listing shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// Its id: a later attempt has a greater one.
    pub id: AttemptId,
    /// The event it carried.
    pub event: EventId,
    /// Which attempt of the event it was: 1 for the first.
    pub attempt: u32,
    /// When it was made, to the second.
    pub at: DateTime<Utc>,
    /// What it came to.
    pub outcome: Outcome,
    /// When the next attempt is due: `None` once delivered, or given up.
    pub next_attempt_at: Option<DateTime<Utc>>,
}

/// What [`WebhookDeliveries::close`](crate::WebhookDeliveries::close) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Closed {
    /// Endpoints disabled because their key's rotation chain ended.
    pub endpoints: u64,
    /// Deliveries dropped because their endpoint was disabled for good.
    pub dropped: u64,
}

/// How many deliveries wait, for the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Backlog {
    /// Deliveries not yet delivered nor given up.
    pub pending: u64,
    /// When the oldest of them was queued.
    pub oldest: Option<DateTime<Utc>>,
}

/// When to attempt again after a failed attempt: the waits after the first attempt, the
/// second, and so on, as Standard Webhooks suggests and then every 10 hours, adding up to 3
/// days; after the last, the delivery is given up. Each wait is stretched or shrunk by up
/// to a tenth at random (jitter), so that deliveries failed together do not come back
/// together.
pub const RETRY_WAITS: [Duration; 12] = [
    Duration::from_secs(5),
    Duration::from_secs(5 * 60),
    Duration::from_secs(30 * 60),
    Duration::from_secs(2 * 60 * 60),
    Duration::from_secs(5 * 60 * 60),
    Duration::from_secs(10 * 60 * 60),
    Duration::from_secs(10 * 60 * 60),
    Duration::from_secs(10 * 60 * 60),
    Duration::from_secs(10 * 60 * 60),
    Duration::from_secs(10 * 60 * 60),
    Duration::from_secs(10 * 60 * 60),
    Duration::from_secs(10 * 60 * 60),
];

/// An endpoint whose every attempt failed for this long is disabled.
pub const DISABLE_AFTER: Duration = Duration::from_secs(3 * 24 * 60 * 60);

/// The retry schedule, in units of [`RETRY_WAITS`]'s seconds: one second in production;
/// tests shorten it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    /// What one second of [`RETRY_WAITS`] lasts.
    pub unit: Duration,
}

impl Default for Schedule {
    fn default() -> Self {
        Self { unit: Duration::from_secs(1) }
    }
}

impl Schedule {
    /// When the attempt after attempt `attempt` (1 for the first) that failed at `at` is
    /// due; `None` when it was the last. `jitter` in `-1.0..=1.0` picks the wait's place
    /// within a tenth of its length either way.
    pub fn next(self, attempt: u32, at: DateTime<Utc>, jitter: f64) -> Option<DateTime<Utc>> {
        let wait = RETRY_WAITS.get(usize::try_from(attempt).ok()?.checked_sub(1)?)?;
        let scaled = self.unit.mul_f64(wait.as_secs_f64() * (1.0 + jitter.clamp(-1.0, 1.0) / 10.0));
        Some(at + chrono::Duration::from_std(scaled).ok()?)
    }

    /// How long an endpoint's attempts may all fail before it is disabled.
    pub fn disable_after(self) -> Duration {
        self.unit.mul_f64(DISABLE_AFTER.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_backs_off_for_three_days_then_gives_up() {
        let at = DateTime::from_timestamp(1_900_000_000, 0).expect("an instant");
        let schedule = Schedule::default();
        assert_eq!(schedule.next(1, at, 0.0), Some(at + chrono::Duration::seconds(5)));
        assert_eq!(schedule.next(2, at, 0.0), Some(at + chrono::Duration::minutes(5)));
        let total: Duration = RETRY_WAITS.iter().sum();
        assert!(total >= DISABLE_AFTER, "the waits add up to 3 days at least: {total:?}");
        assert_eq!(schedule.next(u32::try_from(RETRY_WAITS.len()).unwrap() + 1, at, 0.0), None);
        assert_eq!(schedule.next(0, at, 0.0), None);
        let late = schedule.next(2, at, 1.0).expect("a wait");
        let early = schedule.next(2, at, -1.0).expect("a wait");
        assert_eq!((late - at).num_seconds(), 330, "a tenth longer");
        assert_eq!((early - at).num_seconds(), 270, "a tenth shorter");
        let fast = Schedule { unit: Duration::from_millis(1) };
        assert_eq!(fast.next(1, at, 0.0), Some(at + chrono::Duration::milliseconds(5)));
    }

    #[test]
    fn outcomes_read_back_as_stored() {
        for outcome in [
            Outcome::Status(204),
            Outcome::Status(500),
            Outcome::Status(301),
            Outcome::Timeout,
            Outcome::ConnectionError,
            Outcome::RefusedAddress,
            Outcome::Dropped,
        ] {
            assert_eq!(Outcome::stored(outcome.kind(), outcome.status()), Some(outcome));
        }
        assert!(Outcome::Status(299).delivered() && !Outcome::Status(302).delivered());
    }
}
