//! Authentication: one 401 for every kind of bad key, revocation, last use, an unreachable key store.

use std::sync::Arc;
use std::time::Duration;

use animal_store_api::{ApiConfig, AppState, Services, app};
use animal_store_domain::{
    ApiKeyStore, Clock, Environment, KeyService, OrderService, PetService, Plan, RateLimitPolicy,
    RepositoryError,
};
use animal_store_infra::{
    ManualClock, MemoryApiKeyStore, MemoryOrderRepository, MemoryPetRepository, MokaRateLimiter,
};
use async_trait::async_trait;
use poem::Endpoint;
use poem::http::{Method, StatusCode};

use crate::helpers::*;

#[tokio::test]
async fn every_bad_key_gets_the_same_401() {
    let h = Harness::new().await;
    let staging = KeyService::new(
        Arc::new(MemoryApiKeyStore::new()),
        Arc::new(h.clock.clone()),
        Environment::Staging,
    );
    let staging_key =
        staging.issue(None, Plan::Free).await.expect("issue").secret.expose().to_owned();
    let revoked = h.keys.issue(None, Plan::Pro).await.expect("issue");
    h.keys.revoke(&revoked.key.id).await.expect("revoke");
    // The last character changed to another one.
    let last = if h.key.ends_with('x') { 'y' } else { 'x' };
    let tampered = format!("{}{last}", &h.key[..h.key.len() - 1]);
    let cases = [
        None,
        Some("Basic dXNlcjpwYXNz".to_owned()),
        Some("Bearer".to_owned()),
        Some("Bearer not-a-key".to_owned()),
        Some(format!("Bearer {tampered}")),
        Some(format!("Bearer {}", revoked.secret.expose())),
        Some(format!("Bearer {staging_key}")),
        Some(format!("Bearer {}", h.key.replace("as_live_", "as_test_"))),
    ];
    let mut bodies = Vec::new();
    for auth in &cases {
        for (method, uri) in
            [(Method::GET, "/v1/pets"), (Method::POST, "/v1/pets"), (Method::GET, "/v1/pets/1")]
        {
            let reply = h.send(method, uri, auth.as_deref(), None).await;
            reply.assert_error(401, "unauthorized");
            assert_eq!(reply.header("www-authenticate"), Some("Bearer"));
            bodies.push(reply.body);
        }
    }
    bodies.dedup();
    assert_eq!(bodies.len(), 1, "the 401s cannot be told apart");

    for scheme in ["Bearer", "bearer", "BEARER"] {
        let reply =
            h.send(Method::GET, "/v1/pets", Some(&format!("{scheme} {}", h.key)), None).await;
        assert_eq!(reply.status, StatusCode::OK, "{scheme}");
    }
}

#[tokio::test]
async fn a_revoked_key_stops_working_and_last_use_is_recorded() {
    let h = Harness::new().await;
    assert_eq!(h.get("/v1/pets").await.status, StatusCode::OK);
    let key = h.keys.list().await.expect("list").remove(0);
    assert_eq!(key.last_used_at, Some(h.clock.now()), "the first use is recorded");
    assert!(!format!("{key:?}").contains(&h.key[21..]), "the store holds no secret");
    h.keys.revoke(&key.id).await.expect("revoke");
    h.get("/v1/pets").await.assert_error(401, "unauthorized");
}

/// `GET /v1/pets` with `key`.
async fn get_with(h: &Harness, key: &str) -> Reply {
    h.send(Method::GET, "/v1/pets", Some(&format!("Bearer {key}")), None).await
}

#[tokio::test]
async fn an_expired_key_gets_the_401_of_any_invalid_key() {
    let h = Harness::new().await;
    let issued = h
        .keys
        .issue_as(
            None,
            Plan::Free,
            animal_store_domain::Scope::Write,
            Some(Duration::from_secs(60)),
        )
        .await
        .expect("issue");
    let key = issued.secret.expose().to_owned();
    assert_eq!(get_with(&h, &key).await.status, StatusCode::OK);
    h.clock.advance(Duration::from_secs(59));
    assert_eq!(get_with(&h, &key).await.status, StatusCode::OK, "until its expiry");
    h.clock.advance(Duration::from_secs(1));
    let expired = get_with(&h, &key).await;
    let unknown = get_with(&h, "as_live_aaaaaaaaaaaa_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa").await;
    expired.assert_error(401, "unauthorized");
    assert_eq!(expired.body, unknown.body, "the same 401 as any invalid key");
}

#[tokio::test]
async fn a_rotated_key_works_through_its_grace_then_only_its_successor_does() {
    let h = Harness::new().await;
    let old = h.keys.list().await.expect("list").remove(0);
    let rotated = h.keys.rotate(&old.id, Duration::from_secs(3_600), None).await.expect("rotate");
    let new = rotated.new.secret.expose().to_owned();
    assert_eq!(rotated.new.key.plan, old.plan, "the same plan");
    assert_eq!(rotated.new.key.owner, old.id, "one line, one quota");
    assert_eq!(h.get("/v1/pets").await.status, StatusCode::OK, "the old key, in its grace");
    assert_eq!(get_with(&h, &new).await.status, StatusCode::OK);
    h.clock.advance(Duration::from_secs(3_600));
    h.get("/v1/pets").await.assert_error(401, "unauthorized");
    assert_eq!(get_with(&h, &new).await.status, StatusCode::OK);
}

/// A store whose key lookups fail: authentication is then a 503, not a 401 or a 500.
struct UnreachableKeys;

#[async_trait]
impl ApiKeyStore for UnreachableKeys {
    async fn create(&self, _: &animal_store_domain::ApiKey) -> Result<(), RepositoryError> {
        Err(RepositoryError::Unavailable(Box::new(DiskOnFire)))
    }
    async fn find_by_digest(
        &self,
        _: &animal_store_domain::KeyDigest,
    ) -> Result<Option<animal_store_domain::ApiKey>, RepositoryError> {
        Err(RepositoryError::Unavailable(Box::new(DiskOnFire)))
    }
    async fn list(&self) -> Result<Vec<animal_store_domain::ApiKey>, RepositoryError> {
        Ok(Vec::new())
    }
    async fn revoke(
        &self,
        _: &animal_store_domain::KeyId,
        _: std::time::SystemTime,
    ) -> Result<Option<animal_store_domain::ApiKey>, RepositoryError> {
        Ok(None)
    }
    async fn rotate(
        &self,
        _: &animal_store_domain::ApiKey,
        _: &animal_store_domain::KeyId,
        _: std::time::SystemTime,
        _: std::time::SystemTime,
    ) -> Result<animal_store_domain::Rotation, RepositoryError> {
        Err(RepositoryError::Unavailable(Box::new(DiskOnFire)))
    }
    async fn touch(
        &self,
        _: &animal_store_domain::KeyId,
        _: std::time::SystemTime,
    ) -> Result<(), RepositoryError> {
        Ok(())
    }
}

#[tokio::test]
async fn an_unreachable_key_store_is_503() {
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::at_unix(NOW));
    let keys = KeyService::new(Arc::new(UnreachableKeys), clock.clone(), Environment::Production);
    let (_, secret) = animal_store_domain::ApiKeySecret::generate(Environment::Production);
    let state = AppState::new(Services {
        pets: PetService::new(
            Arc::new(MemoryPetRepository::new()),
            Arc::new(MemoryPetRepository::new()),
        ),
        orders: OrderService::new(
            Arc::new(MemoryOrderRepository::new(Arc::new(MemoryPetRepository::new()))),
            clock.clone(),
        ),
        idempotency: crate::helpers::unused_idempotency(clock.clone()),
        events: crate::helpers::unused_events(clock.clone()),
        webhooks: crate::helpers::unused_webhooks(clock.clone()),
        keys,
        limiter: Arc::new(MokaRateLimiter::new(RateLimitPolicy::default(), 10_000, clock.clone())),
        clock,
        config: Arc::new(ApiConfig::default()),
        readiness: Arc::default(),
        metrics: None,
    });
    let resp = app(state)
        .call(
            poem::Request::builder()
                .uri_str("/v1/pets")
                .header("Authorization", format!("Bearer {}", secret.expose()))
                .finish(),
        )
        .await
        .expect("a response");
    assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
}
