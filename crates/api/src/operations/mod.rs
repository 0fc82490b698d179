//! The operations, one module per tag of the document.

mod account;
mod events;
mod orders;
mod pet_errors;
mod pets;
mod webhooks;

pub use account::AccountApi;
pub use events::EventsApi;
pub use orders::OrdersApi;
pub use pets::PetsApi;
pub use webhooks::WebhooksApi;

/// Every operation of the API.
pub type Operations = (PetsApi, OrdersApi, EventsApi, WebhooksApi, AccountApi);
