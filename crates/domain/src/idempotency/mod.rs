//! Idempotent retries: a keyed write runs once, and its retries get its first answer.
//!
//! - [`model`]: idempotency keys, fingerprints and the outcomes stored for retries.
//! - [`ports`]: where the records are kept, beside what they record.
//! - [`service`]: whether a keyed request runs, replays or is refused.

pub mod model;
pub mod ports;
pub mod service;
