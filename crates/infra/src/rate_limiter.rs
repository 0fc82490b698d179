//! Rate limiter adapters: [`MemoryRateLimiter`], compact sharded maps and the server's
//! default, and [`MokaRateLimiter`], counters in a moka cache.
//!
//! Both keep one [`RateLimitState`] per subject and run the domain's [`RateLimitState::check`] under
//! a per-subject lock, so concurrent requests of one subject are decided one after another
//! and a subject never gets more than its quota admitted.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use animal_store_domain::rate_limit::{DAY, unix_seconds, window_start};
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
/// new addresses cannot push a key, suspended or limited, out of its counters. (moka
/// chooses what it evicts: a restricted address can still be evicted by other addresses;
/// the default [`MemoryRateLimiter`] never does that.)
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

/// Counters in sharded hash maps: the compact adapter, and the server's default.
///
/// A subject costs its 17-byte key and 32-byte [`RateLimitState`] plus the map's slack: under a
/// third of a moka entry (see `docs/benchmarks.md`). Subjects hash to one of [`SHARDS`]
/// shards, each behind its own lock, so two cores rarely meet. A shard forgets the states
/// whose windows and suspension are over when it has doubled since its last sweep, and when
/// it reaches its share of the capacity it forgets the unrestricted client address that
/// stops mattering soonest; restricted subjects and keys are never forgotten early (see
/// `Shard::make_room`). The capacity bounds client addresses; keys, which clients cannot
/// multiply, are kept beyond it.
pub struct MemoryRateLimiter {
    shards: Box<[Mutex<Shard>]>,
    hasher: RandomState,
    shard_capacity: usize,
    policy: RateLimitPolicy,
    clock: Arc<dyn Clock>,
}

/// Number of shards: a power of two well above the core count.
pub const SHARDS: usize = 64;

#[derive(Default)]
struct Shard {
    states: HashMap<CounterKey, RateLimitState>,
    /// The size at which the next sweep runs.
    sweep_at: usize,
}

impl Shard {
    /// Makes room for one more subject at `now`, if it can; says whether it did.
    ///
    /// Only client addresses are forgotten to make room, and only those that are not
    /// restricted (see [`RateLimitState::is_restricted`]), the one whose windows end first:
    /// forgetting a suspended or limited subject would hand it fresh quotas, and a flood of
    /// new addresses could buy that for any key. Keys are never forgotten before their
    /// windows end: they are as many as the keys issued, which clients cannot multiply, so
    /// a key is kept even in a full shard. A new address in a shard full of keys and
    /// restricted addresses gets no room.
    fn make_room(&mut self, now: u64, capacity: usize, for_key: bool) -> bool {
        if self.states.len() >= self.sweep_at.max(64) {
            self.states.retain(|_, state| state.relevant_until() > now);
            self.sweep_at = self.states.len() * 2;
        }
        if self.states.len() < capacity {
            return true;
        }
        let evictable = self
            .states
            .iter()
            .filter(|(key, state)| !key.is_key() && !state.is_restricted(now))
            .min_by_key(|(_, state)| state.relevant_until())
            .map(|(key, _)| *key);
        match evictable {
            Some(key) => {
                self.states.remove(&key);
                true
            }
            None => for_key,
        }
    }
}

impl MemoryRateLimiter {
    /// A limiter applying `policy` on `clock`, keeping at most about `capacity` subjects.
    pub fn new(policy: RateLimitPolicy, capacity: u64, clock: Arc<dyn Clock>) -> Self {
        let capacity = usize::try_from(capacity).unwrap_or(usize::MAX);
        Self {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            hasher: RandomState::new(),
            shard_capacity: capacity.div_ceil(SHARDS).max(1),
            policy,
            clock,
        }
    }

    fn shard(&self, key: CounterKey) -> std::sync::MutexGuard<'_, Shard> {
        #[allow(clippy::cast_possible_truncation, reason = "only the low bits pick a shard")]
        let index = self.hasher.hash_one(key) as usize % SHARDS;
        self.shards[index].lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many subjects are kept.
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(PoisonError::into_inner).states.len())
            .sum()
    }

    /// Whether no subject is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[async_trait]
impl RateLimiter for MemoryRateLimiter {
    async fn check(&self, subject: &Subject, quota: Quota) -> Decision {
        let key = CounterKey::of(subject);
        let now = unix_seconds(self.clock.now());
        let mut shard = self.shard(key);
        let suspendable = matches!(subject, Subject::Key(_));
        if !shard.states.contains_key(&key)
            && !shard.make_room(now, self.shard_capacity, suspendable)
        {
            // Full of subjects that must not be forgotten: a new address is refused.
            return RateLimitState::spent(quota, now).check(quota, &self.policy, false, now);
        }
        shard.states.entry(key).or_default().check(quota, &self.policy, suspendable, now)
    }

    async fn peek(&self, subject: &Subject, quota: Quota) -> Decision {
        let key = CounterKey::of(subject);
        let now = unix_seconds(self.clock.now());
        let state = self.shard(key).states.get(&key).copied().unwrap_or_default();
        state.peek(quota, &self.policy, matches!(subject, Subject::Key(_)), now)
    }

    async fn give_back(&self, subject: &Subject, taken: &Decision, windows: GiveBack) {
        if !taken.is_admitted() {
            return;
        }
        let key = CounterKey::of(subject);
        if let Some(state) = self.shard(key).states.get_mut(&key) {
            state.give_back(taken.at, windows);
        }
    }

    fn policy(&self) -> RateLimitPolicy {
        self.policy
    }

    fn subjects(&self) -> Option<u64> {
        Some(self.len() as u64)
    }
}
