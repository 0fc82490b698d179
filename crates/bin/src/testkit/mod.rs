//! The test kit: the whole service in process, wired exactly as `serve` wires it, for
//! integration testers. Built with the `testing` feature only.
//!
//! ```no_run
//! # async fn example() {
//! use animal_store::testkit::TestKit;
//! use animal_store_domain::Plan;
//!
//! let app = TestKit::new().build();
//! let key = app.issue_key(Plan::Free).await;
//! let resp = app.client().get("/v1/pets").header("Authorization", format!("Bearer {key}")).send().await;
//! resp.assert_status_is_ok();
//! app.clock().advance(std::time::Duration::from_secs(60)); // the next minute, no sleeping
//! # }
//! ```
//!
//! Memory stores and a manual clock by default; any port can be swapped for an adapter under
//! test. See `docs/testing.md`.

mod beside;

use std::sync::Arc;
use std::time::Duration;

use animal_store_api::server::{Limits, Server};
use animal_store_api::{AppState, app};
use animal_store_domain::{
    ApiKeyStore, EventLog, IdempotencyStore, OrderRepository, PetChanges, PetRepository, Plan,
    RateLimitPolicy, RateLimiter, WebhookDeliveries, WebhookEndpoints,
};
use animal_store_infra::{
    ManualClock, MemoryApiKeyStore, MemoryIdempotencyStore, MemoryOrderRepository,
    MemoryPetRepository,
};
use poem::Response;
use poem::endpoint::BoxEndpoint;
use poem::test::TestClient;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::wiring::{Ports, Wiring};

pub use beside::{
    ChangesNeedTheirStore, EventsNeedTheirStore, NoChanges, NoEvents, NoOrders, NoWebhooks,
    OrdersNeedTheirStores, RecordsBeside,
};

/// 2026-11-22T00:00:00Z, a UTC midnight: where a kit's clock starts unless told otherwise.
pub const START: u64 = 1_795_305_600;

/// The parts of a test app; [`TestKit::build`] wires them.
pub struct TestKit {
    pets: Arc<dyn PetRepository>,
    changes: Arc<dyn PetChanges>,
    orders: Arc<dyn OrderRepository>,
    idempotency: Arc<dyn IdempotencyStore>,
    events: Arc<dyn EventLog>,
    webhooks: Arc<dyn WebhookEndpoints>,
    deliveries: Arc<dyn WebhookDeliveries>,
    /// Which of the stores beside the pets the test gave.
    given: Given,
    keys: Arc<dyn ApiKeyStore>,
    limiter: Option<Arc<dyn RateLimiter>>,
    policy: RateLimitPolicy,
    clock: ManualClock,
}

/// The stores a test swapped for its adapters.
#[derive(Debug, Clone, Copy, Default)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "independent facts: which stores the test gave, in any order"
)]
struct Given {
    pets: bool,
    changes: bool,
    orders: bool,
    idempotency: bool,
    events: bool,
    webhooks: bool,
}

impl Default for TestKit {
    fn default() -> Self {
        Self::new()
    }
}

impl TestKit {
    /// Memory stores, the default policy, the in-process rate limiter and a manual clock at
    /// [`START`].
    pub fn new() -> Self {
        let clock = ManualClock::at_unix(START);
        let pets = Arc::new(MemoryPetRepository::with_clock(Arc::new(clock.clone())));
        let orders = Arc::new(MemoryOrderRepository::new(pets.clone()));
        Self {
            idempotency: Arc::new(MemoryIdempotencyStore::new(pets.clone(), orders.clone())),
            orders,
            changes: pets.clone(),
            events: pets.clone(),
            webhooks: pets.clone(),
            deliveries: pets.clone(),
            pets,
            given: Given::default(),
            keys: Arc::new(MemoryApiKeyStore::new()),
            limiter: None,
            policy: RateLimitPolicy::default(),
            clock,
        }
    }

    /// Pets in `pets`, an adapter under test for example. Every pet write reaches it,
    /// keyed createPet included (its records are kept beside it, [`RecordsBeside`], unless
    /// [`TestKit::with_idempotency`] gives them). Orders move their pets' statuses, which a
    /// pet adapter's port cannot: given alone, the kit refuses every order operation with
    /// [`OrdersNeedTheirStores`] (a 500, the message in the log); give the adapter's orders
    /// and records too, with [`TestKit::with_orders`] and [`TestKit::with_idempotency`].
    #[must_use]
    pub fn with_pets(mut self, pets: Arc<dyn PetRepository>) -> Self {
        self.pets = pets;
        self.given.pets = true;
        self
    }

    /// The changes (updatePet, deletePet, getInventory) of the pets given to
    /// [`TestKit::with_pets`]: the same adapter, usually, if it implements [`PetChanges`].
    /// Given pets alone, the kit refuses those operations (a 500, [`ChangesNeedTheirStore`]
    /// in the log).
    #[must_use]
    pub fn with_changes(mut self, changes: Arc<dyn PetChanges>) -> Self {
        self.changes = changes;
        self.given.changes = true;
        self
    }

    /// Orders in `orders`, kept beside the pets given to [`TestKit::with_pets`].
    #[must_use]
    pub fn with_orders(mut self, orders: Arc<dyn OrderRepository>) -> Self {
        self.orders = orders;
        self.given.orders = true;
        self
    }

    /// Idempotency records in `idempotency`, kept beside the pets and orders given to
    /// [`TestKit::with_pets`] and [`TestKit::with_orders`].
    #[must_use]
    pub fn with_idempotency(mut self, idempotency: Arc<dyn IdempotencyStore>) -> Self {
        self.idempotency = idempotency;
        self.given.idempotency = true;
        self
    }

    /// The events (listEvents, getEvent) the stores given to [`TestKit::with_pets`],
    /// [`TestKit::with_orders`] and [`TestKit::with_idempotency`] write with their changes.
    /// Given pets alone, the kit refuses those operations (a 500, [`EventsNeedTheirStore`]
    /// in the log).
    #[must_use]
    pub fn with_events(mut self, events: Arc<dyn EventLog>) -> Self {
        self.events = events;
        self.given.events = true;
        self
    }

    /// The webhook endpoints and their deliveries, beside the events given to
    /// [`TestKit::with_events`]. Given pets alone, the kit refuses the webhook operations (a
    /// 500, [`EventsNeedTheirStore`] in the log).
    #[must_use]
    pub fn with_webhooks(
        mut self,
        webhooks: Arc<dyn WebhookEndpoints>,
        deliveries: Arc<dyn WebhookDeliveries>,
    ) -> Self {
        self.webhooks = webhooks;
        self.deliveries = deliveries;
        self.given.webhooks = true;
        self
    }

    /// API keys in `keys`.
    #[must_use]
    pub fn with_keys(mut self, keys: Arc<dyn ApiKeyStore>) -> Self {
        self.keys = keys;
        self
    }

    /// Requests counted by `limiter`; give it [`TestKit::clock`]'s clock and the policy.
    #[must_use]
    pub fn with_rate_limiter(mut self, limiter: Arc<dyn RateLimiter>) -> Self {
        self.limiter = Some(limiter);
        self
    }

    /// The rate-limit policy of the in-process limiter.
    #[must_use]
    pub fn with_policy(mut self, policy: RateLimitPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The clock every part runs on, to hand to an adapter built before [`TestKit::build`].
    pub fn clock(&self) -> &ManualClock {
        &self.clock
    }

    /// The app, wired by [`Wiring`] as `serve` wires it.
    pub fn build(self) -> TestApp {
        let Self {
            pets,
            mut changes,
            mut orders,
            mut idempotency,
            mut events,
            mut webhooks,
            mut deliveries,
            given,
            keys,
            limiter,
            policy,
            clock,
        } = self;
        // The kit's own orders and records are kept beside its own pets: beside pets of
        // the test's, they would reserve and record pets the test never sees.
        if given.pets && !given.changes {
            changes = Arc::new(NoChanges);
        }
        if given.pets && !given.orders {
            orders = Arc::new(NoOrders);
        }
        if given.pets && !given.idempotency {
            idempotency = Arc::new(RecordsBeside::new(pets.clone()));
        }
        if given.pets && !given.events {
            events = Arc::new(NoEvents);
        }
        if given.pets && !given.webhooks {
            (webhooks, deliveries) = (Arc::new(NoWebhooks), Arc::new(NoWebhooks));
        }
        let ports =
            Ports { pets, changes, orders, idempotency, events, webhooks, deliveries, keys };
        let mut wiring = Wiring::new(ports).clock(Arc::new(clock.clone())).policy(policy);
        if let Some(limiter) = limiter {
            wiring = wiring.rate_limiter_adapter(limiter);
        }
        TestApp { state: wiring.state(), clock }
    }
}

/// The service in process.
pub struct TestApp {
    state: AppState,
    clock: ManualClock,
}

impl TestApp {
    /// The clock: move it to cross a minute, a day or a sunset without waiting.
    pub fn clock(&self) -> &ManualClock {
        &self.clock
    }

    /// The services, for assertions on what is stored.
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Issues a key on `plan` and returns it, ready for `Authorization: Bearer <key>`.
    ///
    /// # Panics
    ///
    /// When the key store fails.
    pub async fn issue_key(&self, plan: Plan) -> String {
        let issued = self.state.keys.issue(None, plan).await.expect("the key store stores the key");
        issued.secret.expose().to_owned()
    }

    /// A client that calls the service in process, without a socket.
    pub fn client(&self) -> TestClient<BoxEndpoint<'static, Response>> {
        TestClient::new(app(self.state.clone()))
    }

    /// Serves the app on a free port of 127.0.0.1, until [`Listening::stop`].
    ///
    /// # Panics
    ///
    /// When no port of 127.0.0.1 can be bound.
    pub async fn listen(&self) -> Listening {
        let server =
            Server::bind("127.0.0.1:0", Limits::default()).await.expect("a free port on 127.0.0.1");
        let port = server.local_addr().expect("a TCP address").port();
        let (stop, stopped) = oneshot::channel::<()>();
        let endpoint = app(self.state.clone());
        let server = tokio::spawn(async move {
            let signal = async {
                let _ = stopped.await;
            };
            server.run(endpoint, signal, Duration::from_secs(5)).await;
        });
        Listening { base: format!("http://127.0.0.1:{port}"), stop, server }
    }
}

/// An app serving on loopback.
pub struct Listening {
    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub base: String,
    stop: oneshot::Sender<()>,
    server: JoinHandle<()>,
}

impl Listening {
    /// Stops accepting, lets in-flight requests finish (5 s at most) and waits.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.server.await;
    }
}
