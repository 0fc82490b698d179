//! The cost of one rate-limit decision in the in-process limiter: alone, and with two threads
//! deciding at once on one key (they contend for its lock) or on distinct keys.
//!
//! Run with `cargo bench -p animal-store-infra --bench rate_limiter`. The quota is large enough
//! that every request is admitted: the measured path is the common one.

#![expect(missing_docs, reason = "criterion's macros generate undocumented functions")]

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use animal_store_domain::{KeyId, Quota, RateLimitPolicy, RateLimiter, Subject};
use animal_store_infra::{MokaRateLimiter, SystemClock};
use criterion::{Criterion, criterion_group, criterion_main};
use futures_util::FutureExt;

fn key(n: usize) -> Subject {
    Subject::Key(KeyId::new(&format!("{n:012}")).expect("a valid id"))
}

type Limiter = Arc<dyn RateLimiter>;

fn limiter() -> Limiter {
    let (policy, clock) = (RateLimitPolicy::default(), Arc::new(SystemClock));
    Arc::new(MokaRateLimiter::new(policy, 1_000_000, clock))
}

fn decide(limiter: &Limiter, subject: &Subject, quota: Quota) -> bool {
    // The limiter never waits: its futures are ready at the first poll.
    limiter.check(subject, quota).now_or_never().expect("ready at once").is_admitted()
}

/// Runs `iters` decisions split over two threads and returns the wall-clock time, so the
/// figure is the time per decision with both cores busy.
fn two_threads(limiter: &Limiter, subjects: [Subject; 2], quota: Quota, iters: u64) -> Duration {
    let barrier = Arc::new(Barrier::new(3));
    let workers: Vec<_> = subjects
        .into_iter()
        .map(|subject| {
            let (limiter, barrier) = (limiter.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                for _ in 0..iters / 2 {
                    black_box(decide(&limiter, &subject, quota));
                }
            })
        })
        .collect();
    barrier.wait();
    let started = Instant::now();
    for worker in workers {
        worker.join().expect("a worker");
    }
    started.elapsed()
}

fn decisions(c: &mut Criterion) {
    let quota = Quota::new(u32::MAX, u32::MAX).expect("a quota");
    let mut group = c.benchmark_group("limiter decision/moka");

    let single = limiter();
    let subject = key(1);
    group.bench_function("uncontended", |b| {
        b.iter(|| decide(&single, black_box(&subject), quota));
    });

    let shared = limiter();
    group.bench_function("2 threads, one key", |b| {
        b.iter_custom(|iters| two_threads(&shared, [key(7), key(7)], quota, iters));
    });

    let distinct = limiter();
    group.bench_function("2 threads, distinct keys", |b| {
        b.iter_custom(|iters| two_threads(&distinct, [key(8), key(9)], quota, iters));
    });
    group.finish();
}

criterion_group!(benches, decisions);
criterion_main!(benches);
