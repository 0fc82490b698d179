//! Events: what changed, for a client to read.
//!
//! - [`model`]: an event, its type and its object.
//! - [`ports`]: where events are read and swept.
//! - [`service`]: reading the caller's events, and removing those past their retention.

pub mod model;
pub mod ports;
pub mod service;
