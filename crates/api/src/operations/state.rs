//! What every request handler shares.

use std::sync::Arc;
use std::time::Duration;

use animal_store_domain::{
    Clock, EventService, IdempotencyService, KeyService, OrderService, PetService, RateLimiter,
    WebhookService,
};

use crate::operations::probes::Readiness;
use crate::operations::telemetry::SharedExporter;
use crate::wire::client_address::ClientAddressing;

/// The services and settings the API runs on, shared: a clone is one reference counted, as
/// every request's is (`app` hands the state to each).
#[derive(Clone)]
pub struct AppState(Arc<Services>);

impl AppState {
    /// The state of `services`.
    #[must_use]
    pub fn new(services: Services) -> Self {
        Self(Arc::new(services))
    }
}

impl std::ops::Deref for AppState {
    type Target = Services;

    fn deref(&self) -> &Services {
        &self.0
    }
}

/// The services and settings the API runs on (see [`AppState`]).
pub struct Services {
    /// The pet catalogue.
    pub pets: PetService,
    /// Orders, each visible to its owner only.
    pub orders: OrderService,
    /// Events, each seen by the keys it concerns.
    pub events: EventService,
    /// Each owner's webhook endpoints.
    pub webhooks: WebhookService,
    /// Idempotent retries of `createPet` and `placeOrder`.
    pub idempotency: IdempotencyService,
    /// API keys: authentication.
    pub keys: KeyService,
    /// The time, for sunsets.
    pub clock: Arc<dyn Clock>,
    /// Counts requests per key and per client address, under its policy (suspensions, the
    /// quota of requests without a valid key).
    pub limiter: Arc<dyn RateLimiter>,
    /// Settings.
    pub config: Arc<ApiConfig>,
    /// What `/readyz` checks, and whether the server is draining.
    pub readiness: Arc<Readiness>,
    /// What `/metrics` serves; `None` turns metrics off (404).
    pub metrics: Option<SharedExporter>,
}

/// The production address the document lists unless configured otherwise.
pub const DEFAULT_PRODUCTION_URL: &str = "https://api.animal-store.example/v1";
/// The staging address the document lists unless configured otherwise.
pub const DEFAULT_STAGING_URL: &str = "https://staging.api.animal-store.example/v1";

/// How long a request may take unless configured otherwise.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Settings of the HTTP API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiConfig {
    /// The production address, `/v1` included, listed in the document's `servers`.
    pub production_url: String,
    /// The staging address, `/v1` included, listed in the document's `servers`.
    pub staging_url: String,
    /// How the client of a request without a valid key is found (trusted proxies and their
    /// header) and counted (IPv6 networks).
    pub clients: ClientAddressing,
    /// A request not answered within this time is answered 503 `service_unavailable`.
    pub request_timeout: Duration,
    /// Whether the experimental operations are served; when not, they answer 404 and the
    /// document leaves them out.
    pub experimental: bool,
    /// Whether each answer's `Date` is the service clock's time (a harness's clock file),
    /// rather than the system's, which the server writes otherwise.
    pub date_from_clock: bool,
}

impl Default for ApiConfig {
    fn default() -> Self {
        Self {
            production_url: DEFAULT_PRODUCTION_URL.to_owned(),
            staging_url: DEFAULT_STAGING_URL.to_owned(),
            clients: ClientAddressing::default(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            experimental: true,
            date_from_clock: false,
        }
    }
}
