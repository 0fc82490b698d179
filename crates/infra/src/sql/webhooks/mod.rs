//! Webhook endpoints, and the deliveries fanned out from the events they carry.

pub(crate) mod claims;
pub(crate) mod deliveries;
pub(crate) mod endpoints;
pub(crate) mod ends;
pub(crate) mod fan_out;
pub(crate) mod share;
