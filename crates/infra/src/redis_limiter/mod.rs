//! [`RedisRateLimiter`]: rate-limit counters in Redis, shared by every instance of the service.
//!
//! One round trip per decision: a Lua script (`script.lua`, run by EVALSHA and loaded again after
//! `NOSCRIPT`) reads a subject's state, applies the rules of the in-process limiter and stores the
//! result, atomically, so that no interleaving of instances admits one request more than the quota.
//! The script returns the state as it found it, and the decision (verdict and headers) is computed
//! from that with the domain's own [`RateLimitState::check`]: one definition of the rules decides
//! what a client sees.
//!
//! Each subject is one hash, `as:{key:ID}`, `as:{ip:ADDRESS}` or `as:{name:HEX}` (`as` is the
//! configurable prefix; the braces are a Redis Cluster hash tag), that expires once no window or
//! suspension can refuse any more. The windows are numbered by Redis's clock (`TIME`), one clock
//! for every instance.
//!
//! When Redis does not answer within the timeout, or fails, the decision follows
//! [`LimiterFailure`]; Redis is then left alone for [`RETRY_AFTER_FAILURE`] before it is tried
//! again, so that an outage costs requests no waiting beyond the first timeout. The start and the
//! end of an outage are logged once each, and each decision taken without Redis is counted in
//! [`FALLBACK_METRIC`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use animal_store_domain::limits::model::unix_seconds;
use animal_store_domain::{
    Clock, Decision, GiveBack, LimiterStore, Quota, RateLimitPolicy, RateLimitState, RateLimiter,
    StoreFallback, Subject, Verdict,
};
use async_trait::async_trait;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use thiserror::Error;

use crate::rate_limiter::MokaRateLimiter;

mod script;

/// The counter of decisions taken without Redis, by `mode`.
pub const FALLBACK_METRIC: &str = "animal_store_rate_limit_store_fallbacks_total";
/// How long Redis is left alone after a failure before it is tried again.
pub const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(1);
/// How long connecting to Redis may take, at start-up and when reconnecting.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// What a decision does when Redis does not answer in time or fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimiterFailure {
    /// Count in this instance's own memory meanwhile: each instance applies the quotas on
    /// its own, so a subject may get up to one quota per instance while Redis is away.
    Local,
    /// Admit every request, uncounted.
    Open,
    /// Refuse every request with 503 and `Retry-After`.
    Closed,
}

impl LimiterFailure {
    fn label(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::Open => "open",
            Self::Closed => "closed",
        }
    }
}

/// Why the Redis limiter could not start.
#[derive(Debug, Error)]
pub enum RedisLimiterError {
    /// The URL is not a Redis URL.
    #[error("invalid Redis URL")]
    Url(#[source] redis::RedisError),
    /// Redis did not answer.
    #[error("cannot reach Redis")]
    Connect(#[source] redis::RedisError),
}

/// Whether `url` is a Redis URL this limiter can use.
///
/// # Errors
///
/// [`RedisLimiterError::Url`] when it is not.
pub fn check_url(url: &str) -> Result<(), RedisLimiterError> {
    redis::Client::open(url).map(drop).map_err(RedisLimiterError::Url)
}

/// How to reach Redis and what to do without it.
#[derive(Debug, Clone)]
pub struct RedisLimiterOptions {
    /// What every key of the limiter starts with (`as`): deployments that share one Redis
    /// keep apart with prefixes of their own.
    pub key_prefix: String,
    /// How long a decision waits for Redis (more than zero).
    pub timeout: Duration,
    /// What a decision does without Redis.
    pub failure: LimiterFailure,
    /// How many subjects the local fallback keeps.
    pub local_capacity: u64,
}

/// Rate-limit counters in Redis. See the module documentation.
pub struct RedisRateLimiter {
    connection: ConnectionManager,
    script: redis::Script,
    policy: RateLimitPolicy,
    options: RedisLimiterOptions,
    local: MokaRateLimiter,
    /// The clock that passes the time: Redis's own unless a test sets one.
    time: Time,
    /// Until when (milliseconds since `started`) Redis is left alone; 0 when it answers.
    down_until: AtomicU64,
    started: Instant,
}

enum Time {
    Redis(Arc<dyn Clock>),
    Fixed(Arc<dyn Clock>),
}

impl Time {
    /// The clock for what is decided in this process (the fallback, the 503's windows).
    fn clock(&self) -> &Arc<dyn Clock> {
        match self {
            Self::Redis(clock) | Self::Fixed(clock) => clock,
        }
    }
}

impl RedisRateLimiter {
    /// Connects to the Redis at `url` (`redis://[:PASSWORD@]HOST:PORT[/DB]`) and loads the
    /// script. With [`LimiterFailure::Local`] an unreachable Redis is no error: decisions
    /// count locally until it answers. `clock` serves the decisions taken without Redis.
    ///
    /// # Errors
    ///
    /// [`RedisLimiterError`] when the URL is invalid, or Redis cannot be reached and the
    /// failure mode is not `Local`.
    pub async fn connect(
        url: &str,
        policy: RateLimitPolicy,
        options: RedisLimiterOptions,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, RedisLimiterError> {
        let limiter = Self::open(url, policy, options, Time::Redis(clock))?;
        let mut connection = limiter.connection.clone();
        let loading = limiter.script.load_async(&mut connection);
        let loaded = tokio::time::timeout(CONNECT_TIMEOUT, loading)
            .await
            .unwrap_or_else(|_| Err(timed_out()));
        match loaded {
            Ok(_) => Ok(limiter),
            Err(err) if limiter.options.failure == LimiterFailure::Local => {
                tracing::warn!(
                    error = %err,
                    "Redis cannot be reached; rate limits count in this instance until it answers"
                );
                let _ = limiter.mark_down();
                Ok(limiter)
            }
            Err(err) => Err(RedisLimiterError::Connect(err)),
        }
    }

    /// A limiter that connects when first used, with the windows numbered by `clock`
    /// instead of Redis's clock: for tests that stand at a minute's or a day's edge.
    ///
    /// # Errors
    ///
    /// [`RedisLimiterError::Url`] when the URL is invalid.
    pub fn with_test_clock(
        url: &str,
        policy: RateLimitPolicy,
        options: RedisLimiterOptions,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, RedisLimiterError> {
        Self::open(url, policy, options, Time::Fixed(clock))
    }

    fn open(
        url: &str,
        policy: RateLimitPolicy,
        options: RedisLimiterOptions,
        time: Time,
    ) -> Result<Self, RedisLimiterError> {
        let client = redis::Client::open(url).map_err(RedisLimiterError::Url)?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(options.timeout))
            .set_number_of_retries(1)
            .set_max_delay(RETRY_AFTER_FAILURE);
        let connection = ConnectionManager::new_lazy_with_config(client, config)
            .map_err(RedisLimiterError::Url)?;
        let local = MokaRateLimiter::new(policy, options.local_capacity, time.clock().clone());
        Ok(Self {
            connection,
            script: script::script(),
            policy,
            options,
            local,
            time,
            down_until: AtomicU64::new(0),
            started: Instant::now(),
        })
    }

    /// The decision on a request of `subject`, counted (`count`) or not.
    async fn decide(&self, subject: &Subject, quota: Quota, count: bool) -> Decision {
        let suspendable = matches!(subject, Subject::Key(_));
        if !self.is_down() {
            match self.shared(subject, quota, suspendable, count).await {
                Ok(decision) => {
                    if self.down_until.swap(0, Ordering::AcqRel) != 0 {
                        tracing::warn!("Redis answers again; rate limits are shared again");
                    }
                    return decision;
                }
                Err(err) => {
                    // Only the request that finds Redis up logs: concurrent failures share
                    // one line.
                    if self.mark_down() == 0 {
                        tracing::warn!(
                            error = %err,
                            mode = self.options.failure.label(),
                            "Redis does not answer; rate-limit decisions fall back until it does"
                        );
                    }
                }
            }
        }
        self.without_redis(subject, quota, count).await
    }

    async fn shared(
        &self,
        subject: &Subject,
        quota: Quota,
        suspendable: bool,
        count: bool,
    ) -> Result<Decision, redis::RedisError> {
        let now = match &self.time {
            Time::Redis(_) => None,
            Time::Fixed(clock) => Some(unix_seconds(clock.now())),
        };
        let asked = script::Decide { quota, suspendable, policy: &self.policy, count, now };
        let invocation = asked.invocation(&self.script, &self.options.key_prefix, subject);
        let mut connection = self.connection.clone();
        let found: Vec<i64> =
            tokio::time::timeout(self.options.timeout, invocation.invoke_async(&mut connection))
                .await
                .unwrap_or_else(|_| Err(timed_out()))?;
        let (mut state, now) = script::parse_state(&found).ok_or_else(|| {
            redis::RedisError::from((
                redis::ErrorKind::Parse,
                "the rate-limit script answered an unexpected shape",
            ))
        })?;
        Ok(if count {
            state.check(quota, &self.policy, suspendable, now)
        } else {
            state.peek(quota, &self.policy, suspendable, now)
        })
    }

    async fn without_redis(&self, subject: &Subject, quota: Quota, count: bool) -> Decision {
        let mode = self.options.failure;
        metrics::counter!(FALLBACK_METRIC, "mode" => mode.label()).increment(1);
        let now = unix_seconds(self.time.clock().now());
        let fresh = RateLimitState::default().peek(quota, &self.policy, false, now);
        match mode {
            LimiterFailure::Local if count => self.local.check(subject, quota).await,
            LimiterFailure::Local => self.local.peek(subject, quota).await,
            LimiterFailure::Open => fresh,
            LimiterFailure::Closed => {
                let retry_after = RETRY_AFTER_FAILURE.as_secs().max(1);
                let mut decision = fresh;
                decision.verdict = Verdict::Unavailable { retry_after };
                decision.minute.remaining = 0;
                decision.day.remaining = 0;
                decision
            }
        }
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX).max(1)
    }

    fn is_down(&self) -> bool {
        self.elapsed_ms() < self.down_until.load(Ordering::Acquire)
    }

    /// Leaves Redis alone for [`RETRY_AFTER_FAILURE`]; returns the mark it replaced (0 when
    /// Redis was answering).
    fn mark_down(&self) -> u64 {
        let retry = u64::try_from(RETRY_AFTER_FAILURE.as_millis()).unwrap_or(u64::MAX);
        self.down_until.swap(self.elapsed_ms() + retry, Ordering::AcqRel)
    }
}

fn timed_out() -> redis::RedisError {
    redis::RedisError::from((redis::ErrorKind::Io, "Redis did not answer in time"))
}

#[async_trait]
impl RateLimiter for RedisRateLimiter {
    async fn check(&self, subject: &Subject, quota: Quota) -> Decision {
        self.decide(subject, quota, true).await
    }

    async fn peek(&self, subject: &Subject, quota: Quota) -> Decision {
        self.decide(subject, quota, false).await
    }

    async fn give_back(&self, subject: &Subject, taken: &Decision, windows: GiveBack) {
        if !taken.is_admitted() {
            return;
        }
        if self.is_down() {
            // The slot was taken where decisions go while Redis is down.
            if self.options.failure == LimiterFailure::Local {
                self.local.give_back(subject, taken, windows).await;
            }
            return;
        }
        let invocation =
            script::give_back(&self.script, &self.options.key_prefix, subject, taken.at, windows);
        let mut connection = self.connection.clone();
        let given: Result<Result<Vec<i64>, _>, _> =
            tokio::time::timeout(self.options.timeout, invocation.invoke_async(&mut connection))
                .await;
        if !matches!(given, Ok(Ok(_))) {
            // A slot kept counts one request too many in a minute: no reason to fail one.
            tracing::debug!("Redis did not take back a rate-limit slot");
        }
    }

    fn policy(&self) -> RateLimitPolicy {
        self.policy
    }

    async fn store(&self) -> LimiterStore {
        let mut connection = self.connection.clone();
        let ping = redis::cmd("PING");
        let answered =
            tokio::time::timeout(self.options.timeout, ping.query_async::<String>(&mut connection))
                .await;
        if matches!(answered, Ok(Ok(_))) {
            LimiterStore::Shared
        } else {
            let fallback = match self.options.failure {
                LimiterFailure::Local => StoreFallback::CountLocally,
                LimiterFailure::Open => StoreFallback::Admit,
                LimiterFailure::Closed => StoreFallback::Refuse,
            };
            LimiterStore::Unreachable { fallback }
        }
    }
}
