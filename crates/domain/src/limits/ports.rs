//! The port of a rate limiter: what counts requests and decides which go through, and
//! where it keeps its counters.

use async_trait::async_trait;

use super::model::{Decision, GiveBack, RateLimitPolicy, Subject};
use crate::keys::plan::Quota;

/// Where a limiter keeps its counters, and whether it can reach them now: what the
/// readiness probe reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimiterStore {
    /// In this process's memory: always at hand.
    InProcess,
    /// A store shared by several instances, which answers.
    Shared,
    /// A shared store that does not answer now: decisions follow the fallback.
    Unreachable {
        /// What decisions do meanwhile.
        fallback: StoreFallback,
    },
}

/// What a limiter whose shared store does not answer does with requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreFallback {
    /// Counts them in this instance.
    CountLocally,
    /// Admits them, uncounted.
    Admit,
    /// Refuses them.
    Refuse,
}

/// Counts requests and decides which go through. Adapters read the time from a
/// [`Clock`](crate::Clock) of their own, so tests can move it.
#[async_trait]
pub trait RateLimiter: Send + Sync + 'static {
    /// Decides on one request of `subject`, whose quota is `quota`, now, and counts it if
    /// admitted. Atomic per subject: however many requests of one subject arrive at once, no
    /// more than its quota are admitted.
    async fn check(&self, subject: &Subject, quota: Quota) -> Decision;

    /// The decision a request of `subject` would get now, without counting it.
    async fn peek(&self, subject: &Subject, quota: Quota) -> Decision;

    /// Gives back, in `windows`, the slot of `subject` that [`Self::check`] admitted in `taken`,
    /// for a request that turned out not to need it: both windows for a client address's slot taken
    /// before its key was looked up, when the key proved valid or could not be checked; the day's
    /// only for a `304 Not Modified`, which spends nothing of the day's quota but still counts in
    /// its minute. The windows given back, if they are still current, admit one more request; a
    /// window that has ended since is left alone (see
    /// [`RateLimitState::give_back`](super::model::RateLimitState::give_back)). Giving back a
    /// refused decision does nothing. Never waits longer than a decision does; a store that cannot
    /// be reached keeps the slot.
    async fn give_back(&self, subject: &Subject, taken: &Decision, windows: GiveBack);

    /// The policy this limiter applies: suspensions, and the quota of a client address.
    fn policy(&self) -> RateLimitPolicy;

    /// How many subjects' counters this limiter keeps, when it can tell cheaply (for the
    /// metrics); `None` otherwise.
    fn subjects(&self) -> Option<u64> {
        None
    }

    /// Where the counters are kept, checked now (a round trip to a shared store, bounded by
    /// the limiter's own timeout).
    async fn store(&self) -> LimiterStore {
        LimiterStore::InProcess
    }
}
