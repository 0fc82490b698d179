//! A request not answered within the request timeout is answered 503
//! `service_unavailable`, and its work inside is dropped.

use poem::http::{HeaderValue, header};
use poem::{IntoResponse, Request, Response};

use super::{Next, respond};
use crate::error::{ApiError, ErrorCode};
use crate::state::{AppState, DEFAULT_REQUEST_TIMEOUT};

/// Answers 503 for the request when the layers inside take longer than
/// `ApiConfig::request_timeout`.
pub async fn request_timeout(next: Next, req: Request) -> poem::Result<Response> {
    let limit = req
        .data::<AppState>()
        .map_or(DEFAULT_REQUEST_TIMEOUT, |state| state.config.request_timeout);
    if let Ok(response) = tokio::time::timeout(limit, respond(&next, req)).await {
        return Ok(response);
    }
    Ok(timed_out(limit))
}

/// The 503 of a request not answered within `limit`.
pub(super) fn timed_out(limit: std::time::Duration) -> Response {
    tracing::warn!(timeout_ms = limit.as_millis(), "request timed out");
    let message =
        format!("the request was not answered within {} ms; retry later", limit.as_millis());
    ApiError::new(ErrorCode::ServiceUnavailable, message)
        .with_header(header::RETRY_AFTER, HeaderValue::from_static("1"))
        .into_response()
}
