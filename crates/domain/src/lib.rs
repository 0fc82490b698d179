//! The domain of Animal Store: what a pet is, what an API key and a plan are, the ports the outside
//! world must provide, and the use cases that tie them together.
//!
//! # Layout
//!
//! One folder per feature, each with its `model` (the values and their rules), its `ports` (the
//! traits adapters implement) and its `service` (the use cases), under those names:
//!
//! - [`pets`]: pets, their changes and the inventory.
//! - [`orders`]: orders reserving pets.
//! - [`keys`]: API keys and their scopes.
//! - [`limits`]: plans, quotas and the rate-limit decision.
//! - [`idempotency`]: idempotent retries of keyed writes.
//! - [`events`]: what changed, as events.
//! - [`webhooks`]: events pushed to endpoints, their deliveries and attempts.
//!
//! Beside them, what every feature shares: [`ports`] (the time, the health checks),
//! [`repository_error`], [`listing`] (a page of a listing), [`ids`] (the id of an order),
//! [`name_rule`] (the rule for names people type) and [`excerpt`](mod@excerpt) (how much of a
//! client's value a message repeats).
//!
//! Every public item is re-exported here, so that the other crates name `Pet`, not its path.
//!
//! This crate performs no I/O and names no web, database or cache crate: adapters live in
//! `animal-store-infra`, HTTP in `animal-store-api`.

pub mod events;
pub mod excerpt;
pub mod idempotency;
pub mod ids;
pub mod keys;
pub mod limits;
pub mod listing;
pub mod name_rule;
pub mod orders;
pub mod pets;
pub mod ports;
pub mod repository_error;
pub mod webhooks;

pub use events::model::{Event, EventId, EventObject, EventType, EventTypeError, NewEvent};
pub use events::ports::EventLog;
pub use events::service::{EVENT_RETENTION, EventListing, EventPage, EventService, GetEventError};
pub use excerpt::{EXCERPT_CHARS, excerpt};
pub use idempotency::model::{
    Fingerprint, IdempotencyKey, IdempotencyKeyError, IdempotencyRecord, IdempotentWrite,
    KeyReused, KeyUse, StoredAnswer,
};
pub use idempotency::ports::{AnswerEncoder, IdempotencyStore, OrderAnswered};
pub use idempotency::service::{Answer, Hold, IdempotencyRefusal, IdempotencyService};
pub use ids::OrderId;
pub use keys::model::{
    ApiKey, ApiKeySecret, Environment, EnvironmentError, KeyDigest, KeyId, KeyIdError, KeyName,
    KeyNameError, PresentedKey,
};
pub use keys::plan::{Plan, PlanError, Quota};
pub use keys::ports::{ApiKeyStore, Rotation};
pub use keys::scope::{Scope, ScopeError};
pub use keys::service::{
    IssuedKey, KeyService, Recognised, RevokeKeyError, RotateKeyError, RotatedKey,
};
pub use limits::model::{
    Decision, GiveBack, INQUIRY_QUOTA, RateLimitPolicy, RateLimitState, Subject, Verdict,
    WindowUsage,
};
pub use limits::ports::{LimiterStore, RateLimiter, StoreFallback};
pub use listing::{Listing, Page, PageSize, PageSizeError};
pub use name_rule::{NameRuleError, check_name};
pub use orders::model::{
    GetOrderError, NewOrder, Order, OrderStatus, OrderStatusError, OrderTransitionError,
    PlaceOrderError, UpdateOrderError,
};
pub use orders::ports::OrderRepository;
pub use orders::service::{OrderListing, OrderPage, OrderService, to_the_second};
pub use pets::changes::{ChangePetError, Inventory, PetChange, PetPatch, Precondition};
pub use pets::model::{
    CategoryId, CategoryIdError, NewPet, Pet, PetId, PetIds, PetIdsError, PetName, PetNameError,
    PetStatus, PetStatusError,
};
pub use pets::ports::{PetChanges, PetRepository};
pub use pets::service::{GetPetError, PetListing, PetPage, PetService};
pub use ports::{Clock, HealthCheck};
pub use repository_error::{BoxError, RepositoryError};
pub use webhooks::claim_limits::ClaimLimits;
pub use webhooks::delivery::{
    Attempt, AttemptId, Attempted, Backlog, Closed, DeliveryId, Due, Outcome, RETRY_WAITS, Schedule,
};
pub use webhooks::model::{
    CreateEndpointError, DisabledReason, Endpoint, EndpointId, EndpointPatch, EndpointStatus,
    EndpointStatusError, EventSelection, EventSelectionError, MAX_ENDPOINTS, NewEndpoint,
    WebhookSecret, WebhookUrl, WebhookUrlError, is_refused_address,
};
pub use webhooks::ports::{AddressCheck, WebhookDeliveries, WebhookEndpoints, WebhookSender};
pub use webhooks::service::{
    AttemptListing, AttemptPage, Deliverer, EndpointChange, RenderEvent, WebhookError,
    WebhookService,
};
