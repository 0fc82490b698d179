//! Webhook endpoints, and the deliveries queued with the events they carry.

pub(crate) mod claims;
pub(crate) mod deliveries;
pub(crate) mod endpoints;
pub(crate) mod ends;
