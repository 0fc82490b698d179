//! The harness: the whole API over in-memory stores and a manual clock, and typed replies.

use std::sync::Arc;
use std::time::Duration;

use animal_store_api::probes::Readiness;
use animal_store_api::{ApiConfig, AppState, Services, app};
use animal_store_domain::{
    ApiKeyStore, Environment, KeyService, OrderService, Pet, PetRepository, PetService, Plan,
    RateLimitPolicy,
};
use animal_store_infra::faults::{Faults, FaultyApiKeyStore, FaultyPetRepository, Injector};
use animal_store_infra::{
    ManualClock, MemoryApiKeyStore, MemoryOrderRepository, MemoryPetRepository, MokaRateLimiter,
};
use poem::Response;
use poem::http::{Method, StatusCode};
use poem::test::TestClient;
use serde_json::Value;

/// 2026-11-22T00:00:00Z: before the sunset of getPet.
pub const NOW: u64 = 1_795_305_600;

pub struct Harness {
    pub client: TestClient<poem::endpoint::BoxEndpoint<'static, Response>>,
    pub pets: Arc<dyn PetRepository>,
    pub keys: KeyService,
    pub clock: ManualClock,
    pub key: String,
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: poem::http::HeaderMap,
    pub body: Value,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Asserts the contract's Error body with this status and code.
    pub fn assert_error(&self, status: u16, code: &str) {
        assert_eq!(self.status.as_u16(), status, "{:?}", self.body);
        assert_eq!(self.body["code"], code, "{:?}", self.body);
        assert_eq!(self.body["status"], status);
        assert!(self.body["message"].as_str().is_some_and(|m| !m.is_empty()));
        assert!(self.header("content-type").is_some_and(|c| c.starts_with("application/json")));
    }
}

impl Harness {
    pub async fn new() -> Self {
        Self::with_pets(Arc::new(MemoryPetRepository::new())).await
    }

    pub async fn with_pets(pets: Arc<dyn PetRepository>) -> Self {
        Self::build(pets, Arc::default()).await
    }

    pub async fn with_readiness(readiness: Arc<Readiness>) -> Self {
        Self::build(Arc::new(MemoryPetRepository::new()), readiness).await
    }

    /// The API whose key store and animals answer `latency` late once its key is issued, and
    /// whose requests time out after `timeout`.
    pub async fn slow(latency: Duration, timeout: Duration) -> Self {
        let injector = Injector::new(Faults::default());
        let keys = FaultyApiKeyStore::new(Arc::new(MemoryApiKeyStore::new()), injector.clone());
        let pets = FaultyPetRepository::new(Arc::new(MemoryPetRepository::new()), injector.clone());
        let config = ApiConfig { request_timeout: timeout, ..ApiConfig::default() };
        let harness = Self::assemble(Arc::new(pets), Arc::default(), Arc::new(keys), config).await;
        injector.set(Faults { latency, ..Faults::default() });
        harness
    }

    async fn build(pets: Arc<dyn PetRepository>, readiness: Arc<Readiness>) -> Self {
        let keys = Arc::new(MemoryApiKeyStore::new());
        Self::assemble(pets, readiness, keys, ApiConfig::default()).await
    }

    async fn assemble(
        pets: Arc<dyn PetRepository>,
        readiness: Arc<Readiness>,
        key_store: Arc<dyn ApiKeyStore>,
        config: ApiConfig,
    ) -> Self {
        let clock = ManualClock::at_unix(NOW);
        let keys = KeyService::new(key_store, Arc::new(clock.clone()), Environment::Production);
        // Business: room for every test's requests within one minute of the manual clock.
        let key = keys.issue(None, Plan::Business).await.expect("issue").secret.expose().to_owned();
        let state = AppState::new(Services {
            // No test of this crate changes pets, places orders or uses idempotency keys: they
            // have stores of their own.
            pets: PetService::new(pets.clone(), Arc::new(MemoryPetRepository::new())),
            orders: OrderService::new(
                Arc::new(MemoryOrderRepository::new(Arc::new(MemoryPetRepository::new()))),
                Arc::new(clock.clone()),
            ),
            idempotency: unused_idempotency(Arc::new(clock.clone())),
            events: unused_events(Arc::new(clock.clone())),
            webhooks: unused_webhooks(Arc::new(clock.clone())),
            keys: keys.clone(),
            clock: Arc::new(clock.clone()),
            limiter: Arc::new(MokaRateLimiter::new(
                RateLimitPolicy::default(),
                10_000,
                Arc::new(clock.clone()),
            )),
            config: Arc::new(config),
            readiness,
            metrics: None,
        });
        Self { client: TestClient::new(app(state)), pets, keys, clock, key }
    }

    pub async fn send(
        &self,
        method: Method,
        uri: &str,
        auth: Option<&str>,
        body: Option<(&str, Vec<u8>)>,
    ) -> Reply {
        let mut req = self.client.request(method, uri);
        if let Some(auth) = auth {
            req = req.header("Authorization", auth);
        }
        if let Some((content_type, bytes)) = body {
            req = req.content_type(content_type).body(bytes);
        }
        let resp = req.send().await.0;
        let (status, headers) = (resp.status(), resp.headers().clone());
        let text = resp.into_body().into_string().await.expect("a body");
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        Reply { status, headers, body }
    }

    pub fn bearer(&self) -> String {
        format!("Bearer {}", self.key)
    }

    pub async fn get(&self, uri: &str) -> Reply {
        self.send(Method::GET, uri, Some(&self.bearer()), None).await
    }

    pub async fn post_json(&self, body: &str) -> Reply {
        self.send(
            Method::POST,
            "/v1/pets",
            Some(&self.bearer()),
            Some(("application/json", body.as_bytes().to_vec())),
        )
        .await
    }

    pub async fn stored(&self) -> Vec<Pet> {
        self.pets.list(None, None, 1000).await.expect("list")
    }
}

/// A storage failure that retrying will not fix.
#[derive(Debug, thiserror::Error)]
#[error("disk on fire")]
pub struct DiskOnFire;

pub async fn seed(h: &Harness, n: usize) {
    for i in 0..n {
        let status = ["available", "pending", "sold"][i % 3];
        let reply = h
            .post_json(&format!(r#"{{"name":"Pet {i}","categoryId":1,"status":"{status}"}}"#))
            .await;
        assert_eq!(reply.status, StatusCode::CREATED);
    }
}

/// Idempotent retries over stores of their own, for the tests that do not retry.
pub fn unused_idempotency(
    clock: Arc<dyn animal_store_domain::Clock>,
) -> animal_store_domain::IdempotencyService {
    let pets = Arc::new(MemoryPetRepository::new());
    let orders = Arc::new(MemoryOrderRepository::new(pets.clone()));
    let store = Arc::new(animal_store_infra::MemoryIdempotencyStore::new(pets, orders));
    animal_store_domain::IdempotencyService::new(store, clock, Arc::new(animal_store_api::Answers))
}

/// Events no test of this crate reads: its own memory store's.
pub fn unused_events(
    clock: Arc<dyn animal_store_domain::Clock>,
) -> animal_store_domain::EventService {
    animal_store_domain::EventService::new(
        Arc::new(MemoryPetRepository::new()),
        clock,
        animal_store_domain::EVENT_RETENTION,
    )
}

/// Webhooks no test of this crate registers: its own memory store's.
pub fn unused_webhooks(
    clock: Arc<dyn animal_store_domain::Clock>,
) -> animal_store_domain::WebhookService {
    let store = Arc::new(MemoryPetRepository::new());
    animal_store_domain::WebhookService::new(
        store.clone(),
        store,
        Arc::new(animal_store_infra::DnsAddressCheck),
        clock,
        false,
    )
}
