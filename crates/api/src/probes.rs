//! The probes a load balancer or an orchestrator calls (`docs/operations.md#probes`), outside
//! `/v1`: no key, no rate limit, not in the document.
//!
//! - `GET /livez`: the process serves HTTP. It checks nothing else and answers at once.
//! - `GET /readyz`: the service can serve requests. Each dependency must answer within
//!   [`READY_DEADLINE`]; a failing one is named in the Error body of a 503. From the moment
//!   the server is told to stop, the answer is 503, so that traffic moves elsewhere while
//!   in-flight requests finish.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use animal_store_domain::{HealthCheck, LimiterStore, StoreFallback};
use poem::http::{HeaderValue, header};
use poem::web::Data;
use poem::{IntoResponse, Response, handler};

use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;

/// How long a dependency may take to answer the readiness probe.
pub const READY_DEADLINE: Duration = Duration::from_secs(1);

/// The probes' paths.
pub const PATHS: [&str; 2] = ["/livez", "/readyz"];

/// Whether `path` is an endpoint for operators rather than clients: a probe or `/metrics`.
/// They need no key, are never rate limited, and are logged at `DEBUG` only.
pub fn is_for_operators(path: &str) -> bool {
    PATHS.contains(&path) || path == crate::telemetry::PATH
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

    fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }
}

fn ok(status: &'static str) -> Response {
    ok_with(status, None)
}

/// `{"status": ...}`, and where the rate-limit counters are when they are shared.
fn ok_with(status: &'static str, store: Option<&str>) -> Response {
    let body = match store {
        Some(store) => format!("{{\"status\":\"{status}\",\"rateLimitStore\":\"{store}\"}}"),
        None => format!("{{\"status\":\"{status}\"}}"),
    };
    Response::builder().content_type("application/json; charset=utf-8").body(body)
}

fn unavailable(message: String) -> Response {
    ApiError::new(ErrorCode::ServiceUnavailable, message)
        .with_header(header::RETRY_AFTER, HeaderValue::from_static("1"))
        .into_response()
}

/// `GET /livez`.
#[handler]
pub fn livez() -> Response {
    ok("live")
}

/// `GET /readyz`.
#[handler]
pub async fn readyz(state: Data<&AppState>) -> Response {
    let readiness = &state.readiness;
    if readiness.is_draining() {
        return unavailable("the server is shutting down".to_owned());
    }
    for check in &readiness.checks {
        let name = check.name();
        match tokio::time::timeout(READY_DEADLINE, check.check()).await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => {
                tracing::debug!(dependency = name, error = %err, "not ready");
                return unavailable(format!("{name} is not ready: it failed to answer"));
            }
            Err(_) => {
                return unavailable(format!(
                    "{name} is not ready: no answer within {} ms",
                    READY_DEADLINE.as_millis()
                ));
            }
        }
    }
    // A shared rate-limit store that does not answer leaves the instance ready, counting as
    // its fallback says, unless the fallback refuses every request.
    let store = match state.limiter.store().await {
        LimiterStore::InProcess => None,
        LimiterStore::Shared => Some("shared"),
        LimiterStore::Unreachable { fallback: StoreFallback::Refuse } => {
            return unavailable(
                "the rate-limit store is not ready: it failed to answer, and requests are refused meanwhile"
                    .to_owned(),
            );
        }
        LimiterStore::Unreachable { fallback: StoreFallback::Admit } => {
            Some("unreachable: admitting uncounted")
        }
        LimiterStore::Unreachable { fallback: StoreFallback::CountLocally } => {
            Some("unreachable: counting in this instance")
        }
    };
    ok_with("ready", store)
}
