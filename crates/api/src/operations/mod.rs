//! The operations, one module per tag of the document, and what each asks of the layers
//! (`table.rs`).

mod account;
mod events;
pub mod operators;
pub(crate) mod orders;
mod pet_conditions;
mod pet_errors;
pub(crate) mod pets;
pub mod probes;
pub mod rate_limit;
pub mod routes;
pub mod state;
mod table;
pub mod telemetry;
mod webhooks;

pub use account::AccountApi;
pub use events::EventsApi;
pub use orders::OrdersApi;
pub use pets::PetsApi;
pub use table::{Caching, OPERATIONS, Operation};
pub use webhooks::WebhooksApi;

/// Every operation of the API.
pub type Operations = (PetsApi, OrdersApi, EventsApi, WebhooksApi, AccountApi);
