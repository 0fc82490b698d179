//! Opening the database, its errors, how a failure is classed, and whether it can be reached.

pub(crate) mod connector;
pub(crate) mod errors;
pub(crate) mod failure;
pub(crate) mod health;
pub(crate) mod losses;
pub(crate) mod outage;
pub(crate) mod reachability;
