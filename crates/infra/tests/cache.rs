//! The key cache ages its entries on the clock port, not on the wall clock.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use animal_store_domain::{ApiKey, ApiKeySecret, ApiKeyStore, Environment, Plan};
use animal_store_infra::{CachedApiKeyStore, ManualClock, MemoryApiKeyStore};

#[tokio::test]
async fn a_revocation_by_another_process_shows_once_the_clock_passes_the_ttl() {
    let clock = ManualClock::at_unix(1_795_305_600);
    let store = Arc::new(MemoryApiKeyStore::new());
    let cache = CachedApiKeyStore::new(store.clone(), Arc::new(clock.clone()));
    let (id, secret) = ApiKeySecret::generate(Environment::Production);
    let key = ApiKey {
        id: id.clone(),
        owner: id.clone(),
        expires_at: None,
        rotated_to: None,
        name: None,
        plan: Plan::Free,
        scope: animal_store_domain::Scope::Write,
        environment: Environment::Production,
        digest: secret.digest(),
        created_at: SystemTime::UNIX_EPOCH,
        last_used_at: None,
        revoked_at: None,
    };
    store.create(&key).await.expect("create");
    let found = cache.find_by_digest(&secret.digest()).await.expect("find").expect("the key");
    assert_eq!(found.revoked_at, None);

    // Revoked behind the cache's back, as `animal-store keys revoke` does from another process.
    store.revoke(&id, SystemTime::UNIX_EPOCH).await.expect("revoke");
    clock.advance(CachedApiKeyStore::TTL.saturating_sub(Duration::from_millis(1)));
    let cached = cache.find_by_digest(&secret.digest()).await.expect("find").expect("the key");
    assert_eq!(cached.revoked_at, None, "within the TTL, the cached lookup is reused");
    clock.advance(Duration::from_millis(1));
    let fresh = cache.find_by_digest(&secret.digest()).await.expect("find").expect("the key");
    assert!(fresh.revoked_at.is_some(), "once the clock passes the TTL, the store is read again");
}
