//! The endpoints for operators, outside `/v1` and the document: the probes (`GET /livez`,
//! `GET /readyz`, see `probes.rs`) and `GET /metrics` (see `telemetry.rs`). No key, no rate
//! limit (`docs/operations.md#probes`, `docs/operations.md#metrics`).

use animal_store_domain::{LimiterStore, StoreFallback};
use poem::http::{HeaderValue, header};
use poem::web::Data;
use poem::{IntoResponse, Response, handler};

use super::{probes, telemetry};
use crate::error::{ApiError, ErrorCode};
use crate::operations::state::AppState;

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
    for check in readiness.checks() {
        let name = check.name();
        match tokio::time::timeout(probes::READY_DEADLINE, check.check()).await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => {
                tracing::debug!(dependency = name, error = %err, "not ready");
                return unavailable(format!("{name} is not ready: it failed to answer"));
            }
            Err(_) => {
                return unavailable(format!(
                    "{name} is not ready: no answer within {} ms",
                    probes::READY_DEADLINE.as_millis()
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

/// `GET /metrics`: the Prometheus text exposition, or 404 when the server runs without
/// metrics.
#[handler]
#[allow(clippy::needless_pass_by_value, reason = "poem extracts the data by value")]
pub fn serve_metrics(state: Data<&AppState>) -> Response {
    let Some(exporter) = state.metrics.as_ref() else {
        return ApiError::new(ErrorCode::NotFound, "metrics are turned off on this server")
            .into_response();
    };
    if let Some(subjects) = state.limiter.subjects() {
        #[allow(clippy::cast_precision_loss, reason = "a gauge: exact below 2^53")]
        metrics::gauge!(telemetry::RATE_LIMITER_SUBJECTS).set(subjects as f64);
    }
    Response::builder()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(exporter.render())
}
