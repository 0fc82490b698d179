//! The domain of Animal Store: what a pet is, what an API key and a plan are, the ports the
//! outside world must provide, and the use cases that tie them together.
//!
//! # Layout
//!
//! - [`pet`]: [`Pet`], [`NewPet`] and the validated values they are made of. Every rule of the
//!   contract lives in exactly one constructor, so an invalid value cannot exist.
//! - [`changes`]: a pet's patch, its removal, the preconditions they take, and the
//!   inventory: how many pets have each status.
//! - [`name_rule`]: the one rule for names people type, which pet names and key names
//!   follow.
//! - [`event`]: what changed, as an event; [`events`]: reading the caller's events.
//! - [`excerpt`](mod@excerpt): how much of a client's value a message or a log line repeats.
//! - [`plan`]: the plans and their request quotas.
//! - [`api_key`]: API keys, their public id, their secret and its digest; [`scope`]: what
//!   a key may do.
//! - [`idempotency`]: idempotency keys and the outcomes stored for retries; [`idempotency_service`]: the
//!   use case that decides whether a keyed request runs, replays or is refused.
//! - [`order`]: orders, their statuses and the moves between them; [`orders`]: the order
//!   use cases.
//! - [`rate_limit`]: rate-limit windows and the decision to admit a request, as pure functions,
//!   and the [`RateLimiter`] port.
//! - [`webhook`]: webhook endpoints and their secrets; [`webhook_url`]: their addresses;
//!   [`global_address`]: which addresses may be called; [`webhooks`]: the endpoints' use
//!   cases, and the deliverer.
//! - [`delivery`]: deliveries of events to endpoints, their attempts and their schedule.
//! - [`ports`]: the traits adapters implement (storage, clock).
//! - [`service`]: the pet use cases the HTTP layer calls; [`keys`]: the key use cases of
//!   the HTTP layer and the command line.
//!
//! This crate performs no I/O and names no web, database or cache crate: adapters live in
//! `animal-store-infra`, HTTP in `animal-store-api`.

pub mod api_key;
pub mod changes;
pub mod delivery;
pub mod event;
pub mod events;
pub mod excerpt;
pub mod global_address;
pub mod idempotency;
pub mod idempotency_service;
pub mod keys;
pub mod listing;
pub mod name_rule;
pub mod order;
pub mod orders;
pub mod pet;
pub mod plan;
pub mod ports;
pub mod rate_limit;
pub mod repository_error;
pub mod scope;
pub mod service;
pub mod webhook;
pub mod webhook_url;
pub mod webhooks;

pub use api_key::{
    ApiKey, ApiKeySecret, Environment, EnvironmentError, KeyDigest, KeyId, KeyIdError, KeyName,
    KeyNameError, PresentedKey,
};
pub use changes::{ChangePetError, Inventory, PetChange, PetPatch, Precondition};
pub use delivery::{
    Attempt, AttemptId, Attempted, Backlog, ClaimLimits, Closed, DeliveryId, Due, Outcome,
    RETRY_WAITS, Schedule,
};
pub use event::{Event, EventId, EventObject, EventType, EventTypeError, NewEvent};
pub use events::{EVENT_RETENTION, EventListing, EventPage, EventService, GetEventError};
pub use excerpt::{EXCERPT_CHARS, excerpt};
pub use idempotency::{
    Fingerprint, IdempotencyKey, IdempotencyKeyError, IdempotencyRecord, IdempotentWrite,
    KeyReused, KeyUse, RenderOrder, RenderPet, StoredResponse,
};
pub use idempotency_service::{Answer, Hold, IdempotencyRefusal, IdempotencyService};
pub use keys::{IssuedKey, KeyService, Recognised, RevokeKeyError, RotateKeyError, RotatedKey};
pub use listing::{Listing, Page};
pub use name_rule::{NameRuleError, check_name};
pub use order::{
    GetOrderError, NewOrder, Order, OrderId, OrderStatus, OrderStatusError, OrderTransitionError,
    PlaceOrderError, UpdateOrderError,
};
pub use orders::{OrderListing, OrderPage, OrderService, to_the_second};
pub use pet::{
    CategoryId, CategoryIdError, NewPet, PageSize, PageSizeError, Pet, PetId, PetName,
    PetNameError, PetStatus, PetStatusError,
};
pub use plan::{Plan, PlanError, Quota};
pub use ports::{
    AddressCheck, ApiKeyStore, Clock, EventLog, HealthCheck, IdempotencyStore, OrderRepository,
    PetChanges, PetRepository, Rotation, WebhookDeliveries, WebhookEndpoints, WebhookSender,
};
pub use rate_limit::{
    Decision, GiveBack, INQUIRY_QUOTA, LimiterStore, RateLimitPolicy, RateLimitState, RateLimiter,
    StoreFallback, Subject, Verdict, WindowUsage,
};
pub use repository_error::{BoxError, RepositoryError};
pub use scope::{Scope, ScopeError};
pub use service::{GetPetError, PetListing, PetPage, PetService};
pub use webhook::{
    CreateEndpointError, DisabledReason, Endpoint, EndpointId, EndpointPatch, EndpointStatus,
    EndpointStatusError, EventSelection, EventSelectionError, MAX_ENDPOINTS, NewEndpoint,
    WebhookSecret, WebhookUrl, WebhookUrlError, is_refused_address,
};
pub use webhooks::{
    AttemptListing, AttemptPage, Deliverer, EndpointChange, RenderEvent, WebhookError,
    WebhookService,
};
