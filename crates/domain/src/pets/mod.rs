//! Pets: what a pet is, how it changes, where it is kept, and the use cases.
//!
//! - [`model`]: [`Pet`](model::Pet), [`NewPet`](model::NewPet) and the validated values they are
//!   made of: every rule of the contract lives in exactly one constructor, so an invalid value
//!   cannot exist.
//! - [`changes`]: a pet's patch, its removal, the preconditions they take, and the inventory.
//! - [`ports`]: where pets are kept, changed and counted.
//! - [`service`]: the pet use cases the HTTP layer calls.

pub mod changes;
pub mod model;
pub mod ports;
pub mod service;
