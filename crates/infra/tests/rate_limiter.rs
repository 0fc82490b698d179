//! Runs the rate limiter conformance suite against the in-process limiter.

use std::sync::Arc;

use animal_store_infra::{MokaRateLimiter, conformance};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn moka_rate_limiter() {
    conformance::rate_limiter(|clock, policy| {
        Arc::new(MokaRateLimiter::new(policy, MokaRateLimiter::DEFAULT_CAPACITY, clock))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tiny_moka_rate_limiter_still_passes() {
    // Room for two keys and two addresses, the most the suite keeps at once.
    conformance::rate_limiter(|clock, policy| Arc::new(MokaRateLimiter::new(policy, 2, clock)))
        .await;
}

/// A flood of new client addresses never pushes a key out of its counters: a limited key
/// stays limited, and a suspended one suspended.
#[tokio::test]
async fn a_flood_of_addresses_never_evicts_a_keys_windows() {
    use animal_store_domain::{KeyId, Quota, RateLimitPolicy, RateLimiter, Subject, Verdict};
    use animal_store_infra::ManualClock;

    let clock = ManualClock::at_unix(conformance::LIMITER_EPOCH + 30);
    let policy = RateLimitPolicy { suspend_after: 2, ..RateLimitPolicy::default() };
    let moka = MokaRateLimiter::new(policy, 1_000, Arc::new(clock));
    let (limited, suspended) = (
        Subject::Key(KeyId::new("limited00001").expect("an id")),
        Subject::Key(KeyId::new("suspended001").expect("an id")),
    );
    let one = Quota::new(1, 1_000).expect("a quota");
    for key in [&limited, &suspended] {
        assert!(moka.check(key, one).await.is_admitted());
    }
    assert!(matches!(moka.check(&limited, one).await.verdict, Verdict::Limited { .. }));
    for _ in 0..4 {
        moka.check(&suspended, one).await;
    }
    assert!(matches!(moka.check(&suspended, one).await.verdict, Verdict::Suspended { .. }));
    for n in 0..50_000_u32 {
        let address = Subject::Address(std::net::IpAddr::from(n.to_be_bytes()));
        moka.check(&address, policy.per_address).await;
    }
    assert!(moka.len() <= 3_000, "{} subjects kept for a capacity of 1,000", moka.len());
    assert!(matches!(moka.peek(&limited, one).await.verdict, Verdict::Limited { .. }));
    assert!(matches!(moka.check(&suspended, one).await.verdict, Verdict::Suspended { .. }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_slow_rate_limiter_still_passes() {
    use animal_store_infra::faults::SlowRateLimiter;
    conformance::rate_limiter(|clock, policy| {
        let inner =
            Arc::new(MokaRateLimiter::new(policy, MokaRateLimiter::DEFAULT_CAPACITY, clock));
        Arc::new(SlowRateLimiter::new(inner, std::time::Duration::from_micros(50)))
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
