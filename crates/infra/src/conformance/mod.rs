//! The contract of each port, as executable checks.
//!
//! Every adapter of a port must pass its suite, starting from an empty store: this crate's
//! tests run them against the memory, SQLite and PostgreSQL adapters, and a new adapter
//! proves itself the same way. A failed check panics with a message naming the rule.
//!
//! [`faults`] checks what stores over a real database promise when that database fails.

mod changes;
mod events;
pub mod faults;
mod idempotency;
mod orders;
mod rotation;
mod webhooks;

pub use changes::{PetChangeStores, pet_changes};
pub use events::{EventStores, events};
pub use idempotency::{IdempotencyStores, idempotency_store};
pub use orders::{OrderStores, order_repository};
pub use webhooks::{WebhookStores, webhooks};

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

use crate::testing::ManualClock;

use futures_util::future::join_all;

use std::sync::Arc;

use animal_store_domain::rate_limit::DAY;
use animal_store_domain::{
    ApiKey, ApiKeySecret, ApiKeyStore, CategoryId, Clock, Environment, KeyId, KeyName, NewPet,
    PetId, PetName, PetRepository, PetStatus, Plan, Quota, RateLimitPolicy, RateLimiter,
    RepositoryError, Scope, Subject, Verdict,
};
use animal_store_domain::{Decision, GiveBack};

/// A new pet with every field set, optional ones included (`Some`), so that the round trips
/// of the suites cover every field: a field added to `NewPet` does not compile here until it
/// is given a value.
fn new_pet(name: &str, category: i64, status: PetStatus) -> NewPet {
    NewPet {
        name: PetName::new(name).expect("a valid name"),
        category_id: CategoryId::new(category).expect("a valid category"),
        status,
    }
}

/// Checks a [`PetRepository`] that starts empty.
pub async fn pet_repository(repo: &dyn PetRepository) {
    assert!(repo.list(None, None, 100).await.expect("list").is_empty(), "a new store is empty");
    assert!(
        repo.get(PetId::new(1)).await.expect("get").is_none(),
        "nothing to get in an empty store"
    );

    // Creation returns the pet as stored, with a growing id.
    let statuses = [PetStatus::Available, PetStatus::Pending, PetStatus::Sold];
    let mut created = Vec::new();
    for i in 0..12_i64 {
        let status = statuses[usize::try_from(i).expect("small") % 3];
        let pet =
            repo.create(new_pet(&format!("Pet {i} é🐾"), i + 1, status)).await.expect("create");
        assert_eq!(pet.name.as_str(), format!("Pet {i} é🐾"), "the name is kept verbatim");
        assert_eq!(pet.category_id.get(), i + 1);
        assert_eq!(pet.status, status);
        if let Some(previous) = created.last() {
            let previous: &animal_store_domain::Pet = previous;
            assert!(pet.id > previous.id, "ids grow: {} after {}", pet.id, previous.id);
        }
        created.push(pet);
    }

    // Every created pet can be fetched back, equal to what creation returned.
    for pet in &created {
        assert_eq!(
            repo.get(pet.id).await.expect("get").as_ref(),
            Some(pet),
            "get returns the stored pet"
        );
    }
    let max = created.iter().map(|p| p.id.get()).max().expect("pets");
    assert!(
        repo.get(PetId::new(max + 1)).await.expect("get").is_none(),
        "an unknown id finds nothing"
    );
    assert!(repo.get(PetId::new(-1)).await.expect("get").is_none(), "a negative id finds nothing");

    // Listing is by id ascending, honours the limit, the cursor and the status filter.
    assert_eq!(
        repo.list(None, None, 100).await.expect("list"),
        created,
        "all pets by id ascending"
    );
    assert_eq!(repo.list(None, None, 5).await.expect("list"), created[..5], "limit caps the page");
    assert_eq!(
        repo.list(None, Some(created[4].id), 3).await.expect("list"),
        created[5..8],
        "after starts just past the cursor"
    );
    assert!(
        repo.list(None, Some(PetId::new(max)), 10).await.expect("list").is_empty(),
        "nothing after the last pet"
    );
    for status in statuses {
        let expected: Vec<_> = created.iter().filter(|p| p.status == status).cloned().collect();
        assert_eq!(
            repo.list(Some(status), None, 100).await.expect("list"),
            expected,
            "status filter {status}"
        );
        let after = expected[0].id;
        assert_eq!(
            repo.list(Some(status), Some(after), 2).await.expect("list"),
            expected[1..3],
            "status filter with a cursor"
        );
    }

    // Concurrent creations all succeed with distinct ids.
    let concurrent = join_all(
        (0..40).map(|i| repo.create(new_pet(&format!("Racer {i}"), 7, PetStatus::Pending))),
    )
    .await;
    let ids: BTreeSet<_> =
        concurrent.iter().map(|r| r.as_ref().expect("concurrent create").id).collect();
    assert_eq!(ids.len(), 40, "concurrent creations get distinct ids");
    assert_eq!(repo.list(None, None, 100).await.expect("list").len(), 52, "every pet is kept");
}

fn key(plan: Plan, name: Option<&str>, created_secs: u64) -> (ApiKey, ApiKeySecret) {
    let (id, secret) = ApiKeySecret::generate(Environment::Production);
    let key = ApiKey {
        id,
        name: name.map(|n| KeyName::new(n).expect("a valid key name")),
        plan,
        // Keys with a name read only, the others write: the round trips cover both scopes.
        scope: if name.is_some() { Scope::Read } else { Scope::Write },
        environment: Environment::Production,
        digest: secret.digest(),
        // Whole milliseconds: what every store can keep exactly.
        created_at: SystemTime::UNIX_EPOCH + Duration::from_millis(created_secs * 1000 + 123),
        last_used_at: None,
        revoked_at: None,
        expires_at: None,
        rotated_to: None,
        owner: id_placeholder(),
    };
    (ApiKey { owner: key.id.clone(), ..key }, secret)
}

fn id_placeholder() -> KeyId {
    KeyId::new("000000000000").expect("a valid id")
}

/// Checks an [`ApiKeyStore`] that starts empty.
pub async fn api_key_store(store: &dyn ApiKeyStore) {
    assert!(store.list().await.expect("list").is_empty(), "a new store is empty");

    let enterprise = Plan::new("enterprise", Some(7), Some(70)).expect("a valid plan");
    let (free, free_secret) = key(Plan::Free, Some("ci bot"), 1_700_000_000);
    let (custom, custom_secret) = key(enterprise, None, 1_700_000_100);
    store.create(&free).await.expect("create");
    store.create(&custom).await.expect("create");

    // Keys are found by digest, exactly as stored, plan and quota included.
    assert_eq!(
        store.find_by_digest(&free_secret.digest()).await.expect("find").as_ref(),
        Some(&free)
    );
    assert_eq!(
        store.find_by_digest(&custom_secret.digest()).await.expect("find").as_ref(),
        Some(&custom)
    );
    let (_, stranger) = ApiKeySecret::generate(Environment::Production);
    assert!(
        store.find_by_digest(&stranger.digest()).await.expect("find").is_none(),
        "unknown digests find nothing"
    );
    assert_eq!(
        store.list().await.expect("list"),
        vec![free.clone(), custom.clone()],
        "oldest first"
    );

    // Ids and digests are unique.
    let mut same_id = key(Plan::Pro, None, 1_700_000_200).0;
    same_id.id = free.id.clone();
    assert!(
        matches!(store.create(&same_id).await, Err(RepositoryError::Duplicate)),
        "a second key with the same id is a duplicate"
    );
    let mut same_digest = key(Plan::Pro, None, 1_700_000_200).0;
    same_digest.digest = free.digest.clone();
    assert!(
        matches!(store.create(&same_digest).await, Err(RepositoryError::Duplicate)),
        "a second key with the same digest is a duplicate"
    );
    assert_eq!(store.list().await.expect("list").len(), 2, "a refused key is not stored");

    // Touch records the last use.
    let used = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_500);
    store.touch(&free.id, used).await.expect("touch");
    let found = store.find_by_digest(&free_secret.digest()).await.expect("find").expect("the key");
    assert_eq!(found.last_used_at, Some(used), "touch records the time");

    // Revocation keeps the first time and leaves other keys alone.
    let first = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_001_000);
    let revoked = store.revoke(&free.id, first).await.expect("revoke").expect("the key exists");
    assert_eq!(revoked.revoked_at, Some(first));
    let again = store
        .revoke(&free.id, first + Duration::from_mins(1))
        .await
        .expect("revoke")
        .expect("the key exists");
    assert_eq!(again.revoked_at, Some(first), "revoking twice keeps the first time");
    let found = store
        .find_by_digest(&free_secret.digest())
        .await
        .expect("find")
        .expect("revoked keys are still found");
    assert_eq!(found.revoked_at, Some(first));
    let other =
        store.find_by_digest(&custom_secret.digest()).await.expect("find").expect("the key");
    assert_eq!(other.revoked_at, None, "other keys stay live");
    let unknown = KeyId::new("zzzzzzzzzzzz").expect("a valid id");
    assert!(
        store.revoke(&unknown, first).await.expect("revoke").is_none(),
        "revoking an unknown id finds nothing"
    );

    rotation::rotations(store).await;
}

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
