//! Rate limits: the windows and the decision to admit a request.
//!
//! - [`model`]: rate-limit windows and the decision to admit a request, as pure functions.
//! - [`ports`]: the rate limiter an adapter keeps the counts in.

pub mod model;
pub mod ports;
