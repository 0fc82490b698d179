//! Webhooks: events pushed to the endpoints an owner registers.
//!
//! - [`model`]: endpoints, their secrets and the events they select.
//! - [`url`]: their addresses.
//! - [`address`]: which network addresses may be called.
//! - [`delivery`]: deliveries, their attempts and their schedule.
//! - [`claim_limits`]: how many deliveries a claim may take, and each owner's share.
//! - [`ports`]: where endpoints are kept, deliveries wait and are made, and addresses are checked.
//! - [`service`]: the endpoints' use cases, and the deliverer.

pub mod address;
pub mod claim_limits;
pub mod delivery;
pub mod model;
pub mod ports;
pub mod service;
pub mod url;
