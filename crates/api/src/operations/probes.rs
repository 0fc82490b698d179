//! The probes a load balancer or an orchestrator calls (`docs/operations.md#probes`), outside
//! `/v1`: no key, no rate limit, not in the document. Their endpoints are in `operators.rs`;
//! here is what they depend on.
//!
//! - `GET /livez`: the process serves HTTP. It checks nothing else and answers at once.
//! - `GET /readyz`: the service can serve requests. Each dependency must answer within
//!   [`READY_DEADLINE`]; a failing one is named in the Error body of a 503. From the moment
//!   the server is told to stop, the answer is 503, so that traffic moves elsewhere while
//!   in-flight requests finish.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use animal_store_domain::HealthCheck;

/// How long a dependency may take to answer the readiness probe.
pub const READY_DEADLINE: Duration = Duration::from_secs(1);

/// The probes' paths.
pub const PATHS: [&str; 2] = ["/livez", "/readyz"];

/// Whether `path` is an endpoint for operators rather than clients: a probe or `/metrics`.
/// They need no key, are never rate limited, and are logged at `DEBUG` only.
pub fn is_for_operators(path: &str) -> bool {
    PATHS.contains(&path) || path == crate::operations::telemetry::PATH
}

/// What readiness depends on, and whether the server is draining.
#[derive(Default)]
pub struct Readiness {
    checks: Vec<Arc<dyn HealthCheck>>,
    draining: AtomicBool,
}

impl Readiness {
    /// Readiness that depends on `checks`.
    pub fn new(checks: Vec<Arc<dyn HealthCheck>>) -> Self {
        Self { checks, draining: AtomicBool::new(false) }
    }

    /// From now on, `/readyz` answers 503: the server is about to stop.
    pub fn drain(&self) {
        self.draining.store(true, Ordering::Release);
    }

    /// Whether the server is about to stop.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    /// What readiness depends on.
    pub fn checks(&self) -> &[Arc<dyn HealthCheck>] {
        &self.checks
    }
}
