//! Resident memory of the in-process rate limiter holding the counters of 1,000,000
//! distinct keys (each seen once, then idle): the growth of the resident set, read from
//! `/proc/self/statm`.
//!
//! Run with `cargo bench -p animal-store-infra --bench rate_limiter_memory`.

use std::sync::Arc;
use std::time::Instant;

use animal_store_domain::{KeyId, Plan, RateLimitPolicy, RateLimiter, Subject};
use animal_store_infra::{MokaRateLimiter, SystemClock};
use futures_util::FutureExt;

const KEYS: usize = 1_000_000;

fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

fn measure() {
    let Some(before) = resident_bytes() else {
        println!("limiter memory: /proc/self/statm is not readable here; nothing measured");
        return;
    };
    let (policy, clock) = (RateLimitPolicy::default(), Arc::new(SystemClock));
    let limiter: Box<dyn RateLimiter> = Box::new(MokaRateLimiter::new(policy, 2_000_000, clock));
    let quota = Plan::Free.quota();
    let started = Instant::now();
    for n in 0..KEYS {
        let subject = Subject::Key(KeyId::new(&format!("{n:012}")).expect("a valid id"));
        let decision = limiter.check(&subject, quota).now_or_never().expect("ready at once");
        assert!(decision.is_admitted());
    }
    let elapsed = started.elapsed();
    let grown = resident_bytes().unwrap_or(before).saturating_sub(before);
    #[allow(clippy::cast_precision_loss, reason = "a report")]
    let (mib, per_key) = (grown as f64 / 1_048_576.0, grown as f64 / KEYS as f64);
    println!(
        "limiter memory: moka: {KEYS} keys: resident set grew by {mib:.1} MiB ({per_key:.0} bytes per key); \
         inserted in {elapsed:.2?}"
    );
    std::hint::black_box(limiter);
}

fn main() {
    // `cargo bench` passes `--bench` and maybe a filter; honour a filter that excludes us.
    if std::env::args()
        .skip(1)
        .any(|arg| !arg.starts_with('-') && !"limiter_memory".contains(arg.as_str()))
    {
        return;
    }
    measure();
}
