//! Runs the rate limiter conformance suite against every limiter adapter.

use std::sync::Arc;

use animal_store_infra::{MemoryRateLimiter, MokaRateLimiter, conformance};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_rate_limiter() {
    conformance::rate_limiter(|clock, policy| {
        Arc::new(MemoryRateLimiter::new(policy, 1_000_000, clock))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn moka_rate_limiter() {
    conformance::rate_limiter(|clock, policy| {
        Arc::new(MokaRateLimiter::new(policy, MokaRateLimiter::DEFAULT_CAPACITY, clock))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tiny_memory_rate_limiter_still_passes() {
    // Two subjects per shard, the most the suite keeps at once: even when both land in one
    // shard, neither is pushed out.
    conformance::rate_limiter(|clock, policy| Arc::new(MemoryRateLimiter::new(policy, 128, clock)))
        .await;
}

#[tokio::test]
async fn the_memory_rate_limiter_forgets_subjects_whose_day_is_over() {
    use animal_store_domain::{Plan, RateLimitPolicy, RateLimiter, Subject};
    use animal_store_infra::ManualClock;
    use std::time::Duration;

    let clock = ManualClock::at_unix(conformance::LIMITER_EPOCH);
    let limiter =
        MemoryRateLimiter::new(RateLimitPolicy::default(), 1_000_000, Arc::new(clock.clone()));
    for n in 0..10_000_u32 {
        let subject = Subject::Address(std::net::IpAddr::from(n.to_be_bytes()));
        assert!(limiter.check(&subject, Plan::Free.quota()).await.is_admitted());
    }
    assert_eq!(limiter.len(), 10_000);
    // A day and the longest suspension later, new subjects sweep the old ones away.
    clock.advance(Duration::from_secs(86_400 + 901));
    for n in 0..10_000_u32 {
        let subject = Subject::Address(std::net::IpAddr::from((n + 1_000_000).to_be_bytes()));
        assert!(limiter.check(&subject, Plan::Free.quota()).await.is_admitted());
    }
    assert!(limiter.len() < 15_000, "{} states kept", limiter.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_slow_rate_limiter_still_passes() {
    use animal_store_infra::faults::SlowRateLimiter;
    conformance::rate_limiter(|clock, policy| {
        let inner = Arc::new(MemoryRateLimiter::new(policy, 1_000_000, clock));
        Arc::new(SlowRateLimiter::new(inner, std::time::Duration::from_micros(50)))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_rate_limiters_sharing_their_counters() {
    conformance::shared_rate_limiters(|clock, policy| {
        let limiter: Arc<dyn animal_store_domain::RateLimiter> =
            Arc::new(MemoryRateLimiter::new(policy, 1_000_000, clock));
        [limiter.clone(), limiter]
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn moka_rate_limiters_sharing_their_counters() {
    conformance::shared_rate_limiters(|clock, policy| {
        let limiter: Arc<dyn animal_store_domain::RateLimiter> =
            Arc::new(MokaRateLimiter::new(policy, MokaRateLimiter::DEFAULT_CAPACITY, clock));
        [limiter.clone(), limiter]
    })
    .await;
}
