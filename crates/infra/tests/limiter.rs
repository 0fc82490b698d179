//! Runs the rate limiter conformance suite against every limiter adapter.

use std::sync::Arc;

use animal_store_infra::{MemoryRateLimiter, MokaRateLimiter, conformance};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_rate_limiter() {
    conformance::rate_limiter(|clock, policy| Arc::new(MemoryRateLimiter::new(policy, clock)))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn moka_rate_limiter() {
    conformance::rate_limiter(|clock, policy| {
        Arc::new(MokaRateLimiter::new(
            policy,
            MokaRateLimiter::DEFAULT_CAPACITY,
            clock,
        ))
    })
    .await;
}
