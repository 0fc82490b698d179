//! Rate limiter adapters: [`MokaRateLimiter`] for the server, [`MemoryRateLimiter`] as the
//! simplest correct reference for tests.
//!
//! Both keep one [`LimitState`] per subject and run the domain's [`LimitState::check`] under
//! a per-subject lock, so concurrent requests of one subject are decided one after another
//! and a subject never gets more than its quota admitted.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use animal_store_domain::limit::{DAY, unix_seconds, window_start};
use animal_store_domain::{Clock, Decision, LimitPolicy, LimitState, Quota, RateLimiter, Subject};
use async_trait::async_trait;
use moka::Expiry;
use moka::sync::Cache;

/// A subject as a small fixed-size value: no allocation per entry, and cheap to hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum CounterKey {
    Key([u8; 12]),
    Address(u128),
}

impl CounterKey {
    fn of(subject: &Subject) -> Self {
        match subject {
            Subject::Key(id) => Self::Key(id.to_bytes()),
            Subject::Address(IpAddr::V4(ip)) => Self::Address(u128::from(ip.to_ipv6_mapped())),
            Subject::Address(IpAddr::V6(ip)) => Self::Address(u128::from(*ip)),
        }
    }
}

type SharedState = Arc<Mutex<LimitState>>;

/// Counters in a moka cache: bounded in memory by a capacity, and by an expiry that keeps
/// every entry at least until the end of the UTC day (and of any suspension) in which it was
/// last used, so a live window is never forgotten early.
///
/// moka's `time_to_live` would restart at each update and its `time_to_idle` would drop a
/// day counter after an idle hour; the expiry here is computed from the windows instead.
pub struct MokaRateLimiter {
    states: Cache<CounterKey, SharedState>,
    policy: LimitPolicy,
    clock: Arc<dyn Clock>,
}

struct UntilWindowsEnd {
    clock: Arc<dyn Clock>,
    /// Beyond the end of the day: the longest suspension, plus a minute for clock skew.
    slack: u64,
}

impl UntilWindowsEnd {
    fn remaining(&self) -> Duration {
        let now = unix_seconds(self.clock.now());
        let day_end = window_start(now, DAY) + DAY;
        Duration::from_secs(day_end - now + self.slack)
    }
}

impl Expiry<CounterKey, SharedState> for UntilWindowsEnd {
    fn expire_after_create(&self, _: &CounterKey, _: &SharedState, _: Instant) -> Option<Duration> {
        Some(self.remaining())
    }

    fn expire_after_read(
        &self,
        _: &CounterKey,
        _: &SharedState,
        _: Instant,
        _: Option<Duration>,
        _: Instant,
    ) -> Option<Duration> {
        Some(self.remaining())
    }
}

impl MokaRateLimiter {
    /// The default number of subjects kept: more than the keys and busy addresses of one
    /// day. Past it, moka evicts the least valuable entries.
    pub const DEFAULT_CAPACITY: u64 = 2_000_000;

    /// A limiter applying `policy`, keeping at most `capacity` subjects, on `clock`.
    pub fn new(policy: LimitPolicy, capacity: u64, clock: Arc<dyn Clock>) -> Self {
        let expiry = UntilWindowsEnd {
            clock: clock.clone(),
            slack: policy.suspension.as_secs() + 60,
        };
        Self {
            states: Cache::builder()
                .max_capacity(capacity)
                .expire_after(expiry)
                .build(),
            policy,
            clock,
        }
    }

    /// How many subjects are kept (an estimate, moka counts lazily).
    pub fn len(&self) -> u64 {
        self.states.run_pending_tasks();
        self.states.entry_count()
    }

    /// Whether no subject is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[async_trait]
impl RateLimiter for MokaRateLimiter {
    async fn check(&self, subject: &Subject, quota: Quota) -> Decision {
        let state = self
            .states
            .get_with(CounterKey::of(subject), SharedState::default);
        let now = unix_seconds(self.clock.now());
        let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
        state.check(quota, &self.policy, matches!(subject, Subject::Key(_)), now)
    }
}

/// Counters in a plain map that forgets nothing: the reference adapter for tests.
pub struct MemoryRateLimiter {
    states: Mutex<HashMap<Subject, LimitState>>,
    policy: LimitPolicy,
    clock: Arc<dyn Clock>,
}

impl MemoryRateLimiter {
    /// A limiter applying `policy` on `clock`.
    pub fn new(policy: LimitPolicy, clock: Arc<dyn Clock>) -> Self {
        Self {
            states: Mutex::default(),
            policy,
            clock,
        }
    }
}

#[async_trait]
impl RateLimiter for MemoryRateLimiter {
    async fn check(&self, subject: &Subject, quota: Quota) -> Decision {
        let now = unix_seconds(self.clock.now());
        let mut states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        let suspendable = matches!(subject, Subject::Key(_));
        states
            .entry(subject.clone())
            .or_default()
            .check(quota, &self.policy, suspendable, now)
    }
}
