//! Orders: an API key reserving an available pet.
//!
//! - [`model`]: orders, their statuses and the moves between them.
//! - [`ports`]: where orders are kept, beside the pets they reserve.
//! - [`service`]: placing, reading and moving the caller's own orders.

pub mod model;
pub mod ports;
pub mod service;
