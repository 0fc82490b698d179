//! The in-process rate limiter: [`MokaRateLimiter`], counters in moka caches, the server's
//! default (and the local fallback of the Redis limiter).
//!
//! It keeps one [`RateLimitState`] per subject and runs the domain's
//! [`RateLimitState::check`] under a per-subject lock, so concurrent requests of one subject
//! are decided one after another and a subject never gets more than its quota admitted.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use animal_store_domain::limits::model::{DAY, unix_seconds, window_start};
use animal_store_domain::{
    Clock, Decision, GiveBack, Quota, RateLimitPolicy, RateLimitState, RateLimiter, Subject,
};
use async_trait::async_trait;
use moka::Expiry;
use moka::sync::Cache;

/// A subject as 17 bytes: a tag, then a key id or an IPv6 (or IPv4-mapped) address. No
/// allocation per entry, and cheap to hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct CounterKey([u8; 17]);

impl CounterKey {
    fn of(subject: &Subject) -> Self {
        let mut bytes = [0; 17];
        match subject {
            Subject::Key(id) => {
                bytes[0] = 1;
                bytes[1..13].copy_from_slice(&id.to_bytes());
            }
            Subject::Address(ip) => {
                let v6 = match ip {
                    IpAddr::V4(ip) => ip.to_ipv6_mapped(),
                    IpAddr::V6(ip) => *ip,
                };
                bytes[0] = 2;
                bytes[1..].copy_from_slice(&v6.octets());
            }
            Subject::Named(digest) => {
                bytes[0] = 3;
                bytes[1..].copy_from_slice(digest);
            }
            Subject::Inquiry(id) => {
                bytes[0] = 4;
                bytes[1..13].copy_from_slice(&id.to_bytes());
            }
        }
        Self(bytes)
    }

    fn is_key(self) -> bool {
        self.0[0] == 1
    }
}

type SharedState = Arc<Mutex<RateLimitState>>;

/// Counters in a moka cache: bounded in memory by a capacity, and by an expiry that keeps
/// every entry at least until the end of the UTC day (and of any suspension) in which it was
/// last used, so a live window is never forgotten early.
///
/// moka's `time_to_live` would restart at each update and its `time_to_idle` would drop a
/// day counter after an idle hour; the expiry here is computed from the windows instead.
///
/// Keys and client addresses live in two caches of the capacity each, so that a flood of
/// new addresses cannot push a key, suspended or limited, out of its counters: keys are as
/// many as the keys issued, which clients cannot multiply. moka chooses which address it
/// evicts when the addresses' cache is full (`TinyLFU`: the least used first), so a flood
/// can push out another address's counters, never a key's.
pub struct MokaRateLimiter {
    keys: Cache<CounterKey, SharedState>,
    addresses: Cache<CounterKey, SharedState>,
    policy: RateLimitPolicy,
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
    pub fn new(policy: RateLimitPolicy, capacity: u64, clock: Arc<dyn Clock>) -> Self {
        let cache = || {
            let expiry =
                UntilWindowsEnd { clock: clock.clone(), slack: policy.suspension.as_secs() + 60 };
            Cache::builder().max_capacity(capacity).expire_after(expiry).build()
        };
        Self { keys: cache(), addresses: cache(), policy, clock }
    }

    fn cache(&self, key: CounterKey) -> &Cache<CounterKey, SharedState> {
        if key.is_key() { &self.keys } else { &self.addresses }
    }

    /// How many subjects are kept (an estimate, moka counts lazily).
    pub fn len(&self) -> u64 {
        self.keys.run_pending_tasks();
        self.addresses.run_pending_tasks();
        self.keys.entry_count() + self.addresses.entry_count()
    }

    /// Whether no subject is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[async_trait]
impl RateLimiter for MokaRateLimiter {
    async fn check(&self, subject: &Subject, quota: Quota) -> Decision {
        let key = CounterKey::of(subject);
        let state = self.cache(key).get_with(key, SharedState::default);
        let now = unix_seconds(self.clock.now());
        let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
        state.check(quota, &self.policy, matches!(subject, Subject::Key(_)), now)
    }

    async fn peek(&self, subject: &Subject, quota: Quota) -> Decision {
        let key = CounterKey::of(subject);
        let state = self
            .cache(key)
            .get(&key)
            .map(|state| *state.lock().unwrap_or_else(PoisonError::into_inner))
            .unwrap_or_default();
        let now = unix_seconds(self.clock.now());
        state.peek(quota, &self.policy, matches!(subject, Subject::Key(_)), now)
    }

    async fn give_back(&self, subject: &Subject, taken: &Decision, windows: GiveBack) {
        if !taken.is_admitted() {
            return;
        }
        let key = CounterKey::of(subject);
        if let Some(state) = self.cache(key).get(&key) {
            state.lock().unwrap_or_else(PoisonError::into_inner).give_back(taken.at, windows);
        }
    }

    fn policy(&self) -> RateLimitPolicy {
        self.policy
    }

    fn subjects(&self) -> Option<u64> {
        Some(self.len())
    }
}
