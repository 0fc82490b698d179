//! The contract of a [`RateLimiter`]: one limiter on its own, and several sharing one store.

use std::sync::Arc;
use std::time::Duration;

use animal_store_domain::limits::model::DAY;
use animal_store_domain::{
    Clock, Decision, GiveBack, KeyId, Plan, Quota, RateLimitPolicy, RateLimiter, Subject, Verdict,
};

use crate::testing::ManualClock;

/// 2026-11-22T00:00:00Z, a UTC midnight: where the limiter suite starts its clock.
pub const LIMITER_EPOCH: u64 = 1_795_305_600;

/// Checks a [`RateLimiter`]. `make` builds a fresh limiter on the given clock and policy;
/// the suite moves the clock itself.
pub async fn rate_limiter<F>(make: F)
where
    F: Fn(Arc<dyn Clock>, RateLimitPolicy) -> Arc<dyn RateLimiter>,
{
    let policy = RateLimitPolicy::default();
    let key = |n: u8| Subject::Key(KeyId::new(&format!("key{n:09}")).expect("a valid id"));
    let free = Plan::Free.quota();

    // A minute quota: exactly 60 admitted, remaining counting down, then limited until the
    // minute ends; refused requests count in neither window.
    let clock = ManualClock::at_unix(LIMITER_EPOCH + 3_600 + 15);
    let limiter = make(Arc::new(clock.clone()), policy);
    for expected in (0..60).rev() {
        let d = limiter.check(&key(1), free).await;
        assert!(d.is_admitted(), "request {} of 60 is admitted", 60 - expected);
        assert_eq!(d.minute.remaining, expected);
        assert_eq!(d.binding(), d.minute);
    }
    for _ in 0..5 {
        let d = limiter.check(&key(1), free).await;
        assert_eq!(
            d.verdict,
            Verdict::Limited { retry_after: 45 },
            "limited until the minute ends"
        );
        assert_eq!((d.minute.remaining, d.day.remaining), (0, 940), "refusals are not counted");
        assert_eq!(d.binding().reset, LIMITER_EPOCH + 3_660);
    }
    let peeked = limiter.peek(&key(1), free).await;
    assert!(matches!(peeked.verdict, Verdict::Limited { .. }), "peek sees the limit");
    let fresh = limiter.peek(&key(2), free).await;
    assert!(fresh.is_admitted() && fresh.minute.remaining == 59, "peek on a new subject");
    assert!(limiter.check(&key(2), free).await.is_admitted(), "other subjects are counted apart");
    assert_eq!(limiter.peek(&key(2), free).await.minute.remaining, 58, "peek counts nothing");
    clock.advance(Duration::from_secs(45));
    let d = limiter.check(&key(1), free).await;
    assert!(d.is_admitted(), "the next minute has room");
    assert_eq!((d.minute.remaining, d.day.remaining), (59, 939));

    // A day quota binds until UTC midnight, then resets.
    let clock = ManualClock::at_unix(LIMITER_EPOCH + DAY - 90);
    let limiter = make(Arc::new(clock.clone()), policy);
    let small_day = Quota::new(100, 3).expect("a quota");
    for _ in 0..3 {
        assert!(limiter.check(&key(3), small_day).await.is_admitted());
    }
    clock.advance(Duration::from_secs(60));
    let d = limiter.check(&key(3), small_day).await;
    assert_eq!(
        d.verdict,
        Verdict::Limited { retry_after: 30 },
        "a new minute does not lift a full day"
    );
    assert_eq!(d.binding(), d.day);
    assert_eq!(d.binding().reset, LIMITER_EPOCH + DAY);
    clock.advance(Duration::from_secs(30));
    let d = limiter.check(&key(3), small_day).await;
    assert!(d.is_admitted(), "UTC midnight starts a new day");
    assert_eq!(d.day.remaining, 2);

    // Calling on while limited suspends a key; the suspension ends on time.
    let clock = ManualClock::at_unix(LIMITER_EPOCH + 7_200);
    let strict =
        RateLimitPolicy { suspend_after: 3, suspension: Duration::from_secs(600), ..policy };
    let limiter = make(Arc::new(clock.clone()), strict);
    let tiny = Quota::new(1, 100).expect("a quota");
    assert!(limiter.check(&key(4), tiny).await.is_admitted());
    for _ in 0..10 {
        let peeked = limiter.peek(&key(4), tiny).await;
        assert!(
            matches!(peeked.verdict, Verdict::Limited { .. }),
            "peeks are not refusals, so they never suspend"
        );
    }
    for _ in 0..4 {
        assert!(matches!(limiter.check(&key(4), tiny).await.verdict, Verdict::Limited { .. }));
    }
    let d = limiter.check(&key(4), tiny).await;
    assert_eq!(d.verdict, Verdict::Suspended { until: LIMITER_EPOCH + 7_800, retry_after: 600 });
    assert_eq!(d.binding().remaining, 0);
    clock.advance(Duration::from_secs(599));
    let d = limiter.check(&key(4), tiny).await;
    assert_eq!(
        d.verdict,
        Verdict::Suspended { until: LIMITER_EPOCH + 7_800, retry_after: 1 },
        "still suspended"
    );
    clock.advance(Duration::from_secs(1));
    assert!(limiter.check(&key(4), tiny).await.is_admitted(), "the suspension is over");

    // Addresses are limited, never suspended.
    let address = Subject::Address(std::net::IpAddr::from([127, 0, 0, 1]));
    for i in 0..100 {
        let d = limiter.check(&address, strict.per_address).await;
        assert!(!matches!(d.verdict, Verdict::Suspended { .. }), "request {i}");
        assert_eq!(d.is_admitted(), i < 60);
    }

    // Concurrent requests of one subject: exactly the quota is admitted.
    let limiter = make(Arc::new(ManualClock::at_unix(LIMITER_EPOCH + 30)), policy);
    let tasks: Vec<_> = (0..200)
        .map(|_| {
            let limiter = limiter.clone();
            tokio::spawn(async move { limiter.check(&key(5), free).await.is_admitted() })
        })
        .collect();
    let mut admitted = 0;
    for task in tasks {
        admitted += usize::from(task.await.expect("a task"));
    }
    assert_eq!(admitted, 60, "200 concurrent requests admit exactly the quota");

    give_back(&make).await;
}

/// Slots given back: a client address's slots, taken by 200 concurrent requests, admit
/// exactly its quota; a slot given back admits one more request, in both windows; a refusal
/// given back and a slot of a minute that has ended since change nothing.
async fn give_back<F>(make: &F)
where
    F: Fn(Arc<dyn Clock>, RateLimitPolicy) -> Arc<dyn RateLimiter>,
{
    let policy = RateLimitPolicy::default();
    let clock = ManualClock::at_unix(LIMITER_EPOCH + 10_800 + 20);
    let limiter = make(Arc::new(clock.clone()), policy);
    let address = Subject::Address(std::net::IpAddr::from([192, 0, 2, 7]));
    let tasks: Vec<_> = (0..200)
        .map(|_| {
            let (limiter, address) = (limiter.clone(), address.clone());
            tokio::spawn(async move { limiter.check(&address, policy.per_address).await })
        })
        .collect();
    let mut taken = Vec::new();
    let mut refused = None;
    for task in tasks {
        let decision = task.await.expect("a task");
        if decision.is_admitted() {
            taken.push(decision);
        } else {
            refused = Some(decision);
        }
    }
    assert_eq!(taken.len(), 60, "200 concurrent takes admit exactly the address's quota");
    let refused = refused.expect("140 takes were refused");
    limiter.give_back(&address, &refused, GiveBack::Both).await;
    let peeked = limiter.peek(&address, policy.per_address).await;
    assert!(!peeked.is_admitted(), "a refusal given back frees nothing");

    limiter.give_back(&address, &taken[0], GiveBack::Both).await;
    let peeked = limiter.peek(&address, policy.per_address).await;
    assert!(peeked.is_admitted(), "a slot given back is free again");
    let again = limiter.check(&address, policy.per_address).await;
    assert!(again.is_admitted(), "and the next request takes it");
    assert_eq!((again.minute.remaining, again.day.remaining), (0, 86_400 - 60));
    assert!(!limiter.check(&address, policy.per_address).await.is_admitted(), "only that one");

    // Given back in both windows: the day counts the requests that kept their slots.
    limiter.give_back(&address, &taken[1], GiveBack::Both).await;
    let peeked = limiter.peek(&address, policy.per_address).await.as_it_stands();
    assert_eq!((peeked.minute.remaining, peeked.day.remaining), (1, 86_400 - 59));

    // A slot of a minute that has ended is not given back to the next one.
    clock.advance(Duration::from_secs(60));
    let fresh = limiter.check(&address, policy.per_address).await;
    assert_eq!(fresh.minute.remaining, 59);
    limiter.give_back(&address, &taken[2], GiveBack::Both).await;
    let peeked = limiter.peek(&address, policy.per_address).await.as_it_stands();
    assert_eq!(peeked.minute.remaining, 59, "the new minute never held that slot");
    assert_eq!(peeked.day.remaining, 86_400 - 59, "the day it was counted in did");

    // Given back in the day only (a 304): the minute still counts the request, the day
    // does not.
    let key = Subject::Key(KeyId::new("givebackday1").expect("a key id"));
    let quota = Quota::new(3, 5).expect("a quota");
    let slots: Vec<Decision> = {
        let mut slots = Vec::new();
        for _ in 0..3 {
            slots.push(limiter.check(&key, quota).await);
        }
        slots
    };
    assert!(slots.iter().all(Decision::is_admitted));
    limiter.give_back(&key, &slots[0], GiveBack::Day).await;
    let peeked = limiter.peek(&key, quota).await.as_it_stands();
    assert_eq!(
        (peeked.minute.remaining, peeked.day.remaining),
        (0, 3),
        "the minute keeps the slot, the day has it back"
    );
    assert!(!limiter.check(&key, quota).await.is_admitted(), "the minute still refuses");
    clock.advance(Duration::from_secs(60));
    for _ in 0..3 {
        assert!(limiter.check(&key, quota).await.is_admitted(), "the day's quota held 3 more");
    }
    assert!(!limiter.check(&key, quota).await.is_admitted(), "and no more");
}

/// Checks limiters that share one store, as several instances of the service do: 32 tasks,
/// half on each of two limiters, send 10 requests each for one key, and exactly its quota
/// is admitted between them; afterwards both see the key's windows spent. `make` builds two
/// limiters over one fresh store (for a store in the process, one limiter twice).
pub async fn shared_rate_limiters<F>(make: F)
where
    F: Fn(Arc<dyn Clock>, RateLimitPolicy) -> [Arc<dyn RateLimiter>; 2],
{
    let free = Plan::Free.quota();
    let key = Subject::Key(KeyId::new("shared000001").expect("a valid id"));
    // Suspensions out of the way: 260 refusals would otherwise suspend the key.
    let policy = RateLimitPolicy { suspend_after: 1_000, ..RateLimitPolicy::default() };
    let limiters = make(Arc::new(ManualClock::at_unix(LIMITER_EPOCH + 30)), policy);
    let tasks: Vec<_> = (0..32)
        .map(|task| {
            let (limiter, key) = (limiters[task % 2].clone(), key.clone());
            tokio::spawn(async move {
                let mut admitted = 0_u32;
                for _ in 0..10 {
                    admitted += u32::from(limiter.check(&key, free).await.is_admitted());
                }
                admitted
            })
        })
        .collect();
    let mut admitted = 0;
    for task in tasks {
        admitted += task.await.expect("a task");
    }
    assert_eq!(admitted, 60, "320 requests over two limiters admit exactly the quota");
    for limiter in &limiters {
        let peeked = limiter.peek(&key, free).await;
        assert_eq!(peeked.minute.remaining, 0, "every limiter sees the minute spent");
        assert_eq!(peeked.day.remaining, 940, "and the day counting the admitted only");
    }
}
