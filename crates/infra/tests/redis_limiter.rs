//! The Redis rate limiter on a real `redis-server` (`cargo xtask redis -- cargo nextest run`,
//! or `cargo xtask ci`): the limiter conformance suite, limiters of several instances sharing
//! one Redis, and what a decision does when Redis stalls, fails or answers garbage.

use std::sync::Arc;
use std::time::{Duration, Instant};

use animal_store_domain::{KeyId, Plan, RateLimitPolicy, RateLimiter, Subject, Verdict};
use animal_store_infra::testing::databases::{redis_url, unique_prefix};
use animal_store_infra::{
    LimiterFailure, RedisLimiterOptions, RedisRateLimiter, SystemClock, conformance,
};

fn options(prefix: &str, failure: LimiterFailure) -> RedisLimiterOptions {
    RedisLimiterOptions {
        key_prefix: prefix.to_owned(),
        timeout: Duration::from_millis(50),
        failure,
        local_capacity: 10_000,
    }
}

fn key(id: &str) -> Subject {
    Subject::Key(KeyId::new(id).expect("a valid id"))
}

/// A command straight to the test server, bypassing the limiter.
async fn redis_command(url: &str, args: &[&str]) -> redis::RedisResult<redis::Value> {
    let client = redis::Client::open(url)?;
    let mut connection = client.get_multiplexed_async_connection().await?;
    let mut command = redis::cmd(args[0]);
    for arg in &args[1..] {
        command.arg(*arg);
    }
    command.query_async(&mut connection).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_rate_limiter() {
    let Some(url) = redis_url() else { return };
    conformance::rate_limiter(|clock, policy| {
        let options = options(&unique_prefix(), LimiterFailure::Closed);
        Arc::new(RedisRateLimiter::with_test_clock(&url, policy, options, clock).expect("a URL"))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_rate_limiters_of_two_instances_share_their_counters() {
    let Some(url) = redis_url() else { return };
    conformance::shared_rate_limiters(|clock, policy| {
        let prefix = unique_prefix();
        let limiter = |clock| -> Arc<dyn RateLimiter> {
            let options = options(&prefix, LimiterFailure::Closed);
            Arc::new(
                RedisRateLimiter::with_test_clock(&url, policy, options, clock).expect("a URL"),
            )
        };
        [limiter(clock.clone()), limiter(clock)]
    })
    .await;
}

#[tokio::test]
async fn the_windows_follow_redis_clock_without_a_test_clock() {
    let Some(url) = redis_url() else { return };
    let limiter = RedisRateLimiter::connect(
        &url,
        RateLimitPolicy::default(),
        options(&unique_prefix(), LimiterFailure::Closed),
        Arc::new(SystemClock),
    )
    .await
    .expect("Redis answers");
    let decision = limiter.check(&key("clock0000001"), Plan::Free.quota()).await;
    assert!(decision.is_admitted());
    let now =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("after 1970");
    assert!(decision.at.abs_diff(now.as_secs()) <= 2, "Redis's time is the host's here");
    assert_eq!(decision.minute.reset % 60, 0);
    assert_eq!(decision.minute.remaining, 59);
}

#[tokio::test]
async fn a_key_of_the_wrong_type_is_a_store_failure_not_a_panic() {
    let Some(url) = redis_url() else { return };
    let prefix = unique_prefix();
    redis_command(&url, &["SET", &format!("{prefix}:{{key:garbage00001}}"), "not a hash"])
        .await
        .expect("SET");
    let limiter = RedisRateLimiter::connect(
        &url,
        RateLimitPolicy::default(),
        options(&prefix, LimiterFailure::Closed),
        Arc::new(SystemClock),
    )
    .await
    .expect("Redis answers");
    let decision = limiter.check(&key("garbage00001"), Plan::Free.quota()).await;
    assert_eq!(decision.verdict, Verdict::Unavailable { retry_after: 1 });
    assert_eq!(decision.minute.remaining, 0);
}

#[tokio::test]
async fn an_unreachable_redis_counts_locally_without_waiting() {
    // A port nothing listens on: connections are refused at once.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let url = format!("redis://127.0.0.1:{port}");
    let local = options("unreachable", LimiterFailure::Local);
    let limiter =
        RedisRateLimiter::connect(&url, RateLimitPolicy::default(), local, Arc::new(SystemClock))
            .await
            .expect("with the local fallback an unreachable Redis is no error");
    let subject = key("local0000001");
    let started = Instant::now();
    let verdicts: Vec<bool> = futures_util::future::join_all(
        (0..61).map(|_| limiter.check(&subject, Plan::Free.quota())),
    )
    .await
    .iter()
    .map(animal_store_domain::Decision::is_admitted)
    .collect();
    assert!(started.elapsed() < Duration::from_millis(500), "{:?}", started.elapsed());
    assert_eq!(verdicts.iter().filter(|admitted| **admitted).count(), 60, "the local quota holds");

    let closed = RedisRateLimiter::connect(
        &url,
        RateLimitPolicy::default(),
        options("unreachable", LimiterFailure::Closed),
        Arc::new(SystemClock),
    )
    .await;
    assert!(closed.is_err(), "without the local fallback an unreachable Redis stops the start");
}
