//! The contract of each port, as executable checks.
//!
//! Every adapter of a port must pass its suite, starting from an empty store: this crate's
//! tests run them against the memory, SQLite and PostgreSQL adapters, and a new adapter
//! proves itself the same way. A failed check panics with a message naming the rule.
//!
//! [`faults`] checks what stores over a real database promise when that database fails.

mod changes;
mod delivery_ends;
mod events;
pub mod faults;
mod idempotency;
mod orders;
mod rate_limits;
mod rotation;
mod webhooks;

pub use changes::{PetChangeStores, pet_changes};
pub use delivery_ends::delivery_ends;
pub use events::{EventStores, events, events_on_one_clock};
pub use idempotency::{IdempotencyStores, idempotency_store};
pub use orders::{OrderStores, order_repository};
pub use rate_limits::{LIMITER_EPOCH, rate_limiter, shared_rate_limiters};
pub use webhooks::{WebhookStores, webhooks};

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

use animal_store_domain::{
    ApiKey, ApiKeySecret, ApiKeyStore, CategoryId, Environment, KeyId, KeyName, NewPet, PetId,
    PetName, PetRepository, PetStatus, Plan, RepositoryError, Scope,
};
use futures_util::future::join_all;

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

    // Reading by ids finds the pets that exist, by id ascending.
    let wanted = [created[7].id, created[2].id, PetId::new(max + 5), created[9].id];
    let mut ids = wanted.to_vec();
    ids.sort_unstable();
    let expected = [created[2].clone(), created[7].clone(), created[9].clone()];
    assert_eq!(repo.get_many(&ids).await.expect("get_many"), expected, "by ids, missing absent");
    assert!(repo.get_many(&[]).await.expect("get_many").is_empty(), "no ids, no pets");

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
