//! API keys: who calls, with what scope.
//!
//! - [`model`]: keys, their public id, their secret and its digest.
//! - [`plan`]: the plans and their request quotas.
//! - [`scope`]: what a key may do.
//! - [`ports`]: where keys are kept.
//! - [`service`]: issuing, listing, revoking and rotating keys, and checking the key a request
//!   presents.

pub mod model;
pub mod plan;
pub mod ports;
pub mod scope;
pub mod service;
