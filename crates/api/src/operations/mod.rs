//! The operations, one module per tag of the document.

mod orders;
mod pets;

pub use orders::OrdersApi;
pub use pets::PetsApi;

/// Every operation of the API.
pub type Operations = (PetsApi, OrdersApi);
