//! The ports every feature shares: the time, and the dependencies the readiness probe
//! checks. Each feature keeps its own ports beside its model (`pets/ports.rs`, ...).
//!
//! Adapters in `animal-store-infra` implement them for SQLite, PostgreSQL and memory; every
//! adapter of a port passes the same conformance suite. Ports are used as `Arc<dyn Port>` so
//! the adapter is picked at run time from configuration.

use std::time::SystemTime;

use async_trait::async_trait;

use crate::repository_error::RepositoryError;

/// A dependency the service cannot serve without (the database; later the shared
/// rate-limit store), as the readiness probe checks it.
#[async_trait]
pub trait HealthCheck: Send + Sync + 'static {
    /// What it is, as the probe's answer names it: `database`.
    fn name(&self) -> &'static str;

    /// Answers when the dependency does: a trivial round trip.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when it does not answer.
    async fn check(&self) -> Result<(), RepositoryError>;
}

/// The time. A port so that tests can stand at any instant (a sunset in 2030, a UTC
/// midnight) without waiting.
pub trait Clock: Send + Sync + 'static {
    /// The current instant.
    fn now(&self) -> SystemTime;
}
