//! The operations, one module per tag of the document.

mod account;
mod events;
mod orders;
mod pet_errors;
mod pets;

pub use account::AccountApi;
pub use events::EventsApi;
pub use orders::OrdersApi;
pub use pets::PetsApi;

/// Every operation of the API.
pub type Operations = (PetsApi, OrdersApi, EventsApi, AccountApi);
