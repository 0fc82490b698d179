//! The one wiring of the service from its parts.
//!
//! `serve` builds its service here, and so does the test kit (`testing`), so that a test runs
//! exactly what production runs. Each part is given once and reaches every piece that needs
//! it: the clock drives the rate limiter, the key cache, key bookkeeping and the sunsets; the
//! policy is the limiter's and nobody else keeps a copy.
//!
//! The wiring lives in the binary's library rather than in `animal-store-api`: it names
//! adapters (the key cache, the rate limiters), and the HTTP crate depends on the domain only.

use std::sync::Arc;

use animal_store_api::probes::Readiness;
use animal_store_api::telemetry::SharedExporter;
use animal_store_api::{ApiConfig, AppState, Services};
use std::time::Duration;

use animal_store_domain::{
    AddressCheck, ApiKeyStore, Clock, EVENT_RETENTION, Environment, EventLog, EventService,
    HealthCheck, IdempotencyService, IdempotencyStore, KeyService, OrderRepository, OrderService,
    PetChanges, PetRepository, PetService, RateLimitPolicy, RateLimiter, WebhookDeliveries,
    WebhookEndpoints, WebhookService,
};
use animal_store_infra::faults::{Faults, FaultyApiKeyStore, Injector};
use animal_store_infra::{CachedApiKeyStore, DnsAddressCheck, MokaRateLimiter, SystemClock};

pub use crate::cli::RateLimiterKind;

/// The parts of the service, with the production defaults: the system clock, the default
/// policy, production keys, the default document addresses, no trusted proxy, the compact
/// in-process rate limiter; and no metrics, which `serve` adds.
pub struct Wiring {
    stores: Ports,
    address_check: Arc<dyn AddressCheck>,
    webhooks_allow_private: bool,
    clock: Arc<dyn Clock>,
    event_retention: Duration,
    policy: RateLimitPolicy,
    environment: Environment,
    config: ApiConfig,
    limiter: Limiter,
    health_checks: Vec<Arc<dyn HealthCheck>>,
    metrics: Option<SharedExporter>,
    key_checks_fail_every: Option<u64>,
}

/// The stores the service runs on. `changes` must change the pets of `pets`, `orders` keep
/// its orders beside them (placing an order changes its pet's status, and an open order
/// holds its pet against changes), `idempotency` its records beside both (a record commits
/// with the pet or order it records), `events` the events the other stores write with their
/// changes, and `webhooks` and `deliveries` the endpoints those events are queued for.
pub struct Ports {
    /// The pets.
    pub pets: Arc<dyn PetRepository>,
    /// Their changes.
    pub changes: Arc<dyn PetChanges>,
    /// The orders.
    pub orders: Arc<dyn OrderRepository>,
    /// The idempotency records.
    pub idempotency: Arc<dyn IdempotencyStore>,
    /// The events.
    pub events: Arc<dyn EventLog>,
    /// The webhook endpoints.
    pub webhooks: Arc<dyn WebhookEndpoints>,
    /// Their deliveries.
    pub deliveries: Arc<dyn WebhookDeliveries>,
    /// The API keys.
    pub keys: Arc<dyn ApiKeyStore>,
}

/// Which rate limiter the service counts with.
enum Limiter {
    /// One of the in-process limiters, built with the wiring's clock and policy.
    Kind { kind: RateLimiterKind, capacity: u64 },
    /// A limiter built elsewhere, with its own clock and policy.
    Given(Arc<dyn RateLimiter>),
}

impl Wiring {
    /// The most subjects the in-process limiters keep, unless told otherwise.
    pub const DEFAULT_LIMITER_CAPACITY: u64 = 2_000_000;

    /// The service over `stores`, with the defaults above: webhook addresses resolved by
    /// the system's resolver, private addresses refused.
    pub fn new(stores: Ports) -> Self {
        Self {
            stores,
            address_check: Arc::new(DnsAddressCheck),
            webhooks_allow_private: false,
            clock: Arc::new(SystemClock),
            event_retention: EVENT_RETENTION,
            policy: RateLimitPolicy::default(),
            environment: Environment::Production,
            config: ApiConfig::default(),
            limiter: Limiter::Kind {
                kind: RateLimiterKind::Moka,
                capacity: Self::DEFAULT_LIMITER_CAPACITY,
            },
            health_checks: Vec::new(),
            metrics: None,
            key_checks_fail_every: None,
        }
    }

    /// What `/metrics` serves; without one, `/metrics` answers 404.
    #[must_use]
    pub fn metrics(mut self, exporter: SharedExporter) -> Self {
        self.metrics = Some(exporter);
        self
    }

    /// A dependency `/readyz` checks (the database).
    #[must_use]
    pub fn health_check(mut self, check: Arc<dyn HealthCheck>) -> Self {
        self.health_checks.push(check);
        self
    }

    /// The clock of every part.
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Whether webhook endpoints may be `http` and at any address, private ones included
    /// (tests and local development).
    #[must_use]
    pub fn webhooks_allow_private(mut self, allow: bool) -> Self {
        self.webhooks_allow_private = allow;
        self
    }

    /// What resolves and checks webhook addresses at registration.
    #[must_use]
    pub fn address_check(mut self, check: Arc<dyn AddressCheck>) -> Self {
        self.address_check = check;
        self
    }

    /// How long events are kept.
    #[must_use]
    pub fn event_retention(mut self, retention: Duration) -> Self {
        self.event_retention = retention;
        self
    }

    /// For harnesses (`memory://?key-store-unavailable-every=N`): every Nth check of a key
    /// fails as an unreachable key store would, in front of the key cache, so that it counts
    /// every request with a key; `None` for none.
    #[must_use]
    pub fn failing_key_checks(mut self, every: Option<u64>) -> Self {
        self.key_checks_fail_every = every;
        self
    }

    /// The rate-limit policy: suspensions, and the quota of requests without a valid key.
    #[must_use]
    pub fn policy(mut self, policy: RateLimitPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The environment whose keys are accepted.
    #[must_use]
    pub fn environment(mut self, environment: Environment) -> Self {
        self.environment = environment;
        self
    }

    /// The document's addresses and the trusted proxies.
    #[must_use]
    pub fn config(mut self, config: ApiConfig) -> Self {
        self.config = config;
        self
    }

    /// One of the in-process rate limiters, keeping at most `capacity` subjects.
    #[must_use]
    pub fn rate_limiter(mut self, kind: RateLimiterKind, capacity: u64) -> Self {
        self.limiter = Limiter::Kind { kind, capacity };
        self
    }

    /// A rate limiter of your own (an adapter under test, say). It keeps its own clock and
    /// policy: give it the same ones.
    #[must_use]
    pub fn rate_limiter_adapter(mut self, limiter: Arc<dyn RateLimiter>) -> Self {
        self.limiter = Limiter::Given(limiter);
        self
    }

    /// The services the HTTP API runs on. The key store is wrapped in the key cache, as in
    /// production.
    pub fn state(self) -> AppState {
        let Self {
            stores: Ports { pets, changes, orders, idempotency, events, webhooks, deliveries, keys },
            address_check,
            webhooks_allow_private,
            clock,
            event_retention,
            policy,
            environment,
            config,
            limiter,
            health_checks,
            metrics,
            key_checks_fail_every,
        } = self;
        let limiter: Arc<dyn RateLimiter> = match limiter {
            // Redis needs a connection first: `serve` connects and hands the adapter in.
            Limiter::Kind { kind: RateLimiterKind::Moka | RateLimiterKind::Redis, capacity } => {
                Arc::new(MokaRateLimiter::new(policy, capacity, clock.clone()))
            }
            Limiter::Given(limiter) => limiter,
        };
        let mut keys: Arc<dyn ApiKeyStore> = Arc::new(CachedApiKeyStore::new(keys, clock.clone()));
        if let Some(every) = key_checks_fail_every {
            let injector = Injector::new(Faults { fail_every: Some(every), ..Faults::default() });
            keys = Arc::new(FaultyApiKeyStore::failing_lookups(keys, injector));
        }
        AppState::new(Services {
            pets: PetService::new(pets, changes),
            orders: OrderService::new(orders, clock.clone()),
            idempotency: IdempotencyService::new(
                idempotency,
                clock.clone(),
                Arc::new(animal_store_api::Answers),
            ),
            events: EventService::new(events, clock.clone(), event_retention),
            webhooks: WebhookService::new(
                webhooks,
                deliveries,
                address_check,
                clock.clone(),
                webhooks_allow_private,
            ),
            keys: KeyService::new(keys, clock.clone(), environment),
            limiter,
            clock,
            config: Arc::new(config),
            readiness: Arc::new(Readiness::new(health_checks)),
            metrics,
        })
    }
}
