//! Rows to domain values and back, for the stores and the writer's jobs.

pub(crate) mod events;
pub(crate) mod insert;
pub(crate) mod pets;
pub(crate) mod records;
