//! The writer: one thread that commits the stores' jobs together (group commit).

pub(crate) mod additions;
pub(crate) mod commits;
pub(crate) mod job;
pub(crate) mod thread;
