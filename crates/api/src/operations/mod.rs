//! The operations, one module per tag of the document.

mod account;
mod orders;
mod pets;

pub use account::{AccountApi, KeyWindows};
pub use orders::OrdersApi;
pub use pets::PetsApi;

/// The id of the operation that reads the caller's rate limit without spending it.
pub const GET_RATE_LIMIT: &str = "getRateLimit";

/// Every operation of the API.
pub type Operations = (PetsApi, OrdersApi, AccountApi);
