//! Layer 7: a request id, and one span and one log line per request.

use std::sync::Arc;
use std::time::Instant;

use poem::http::{HeaderName, HeaderValue, StatusCode};
use poem::{Endpoint, Request, Response};
use tracing::Instrument;

use super::{respond, routes};

/// Layer 7: gives the request an id (`X-Request-Id` on the response) and a span with its
/// method, route, key id, status and latency. The key itself is never logged.
pub async fn trace_request<E: Endpoint>(ep: Arc<E>, req: Request) -> poem::Result<Response> {
    let request_id = format!("{:016x}", rand::random::<u64>());
    let routes = routes(&req);
    let route = routes
        .as_ref()
        .and_then(|routes| routes.find(req.uri().path()))
        .map_or("(unmatched)", |r| r.template())
        .to_owned();
    let span = tracing::info_span!(
        "request",
        method = %req.method(),
        route = %route,
        request_id = %request_id,
        key_id = tracing::field::Empty,
        status = tracing::field::Empty,
        latency_us = tracing::field::Empty,
    );
    async move {
        let started = Instant::now();
        let mut response = respond(ep.as_ref(), req).await;
        let status = response.status();
        let latency_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        // On the span too, for subscribers that export spans rather than events.
        let span = tracing::Span::current();
        span.record("status", status.as_u16());
        span.record("latency_us", latency_us);
        if status == StatusCode::SERVICE_UNAVAILABLE {
            // A dependency is down; the store logs the cause once per outage, not here.
            tracing::warn!(status = status.as_u16(), latency_us, "request refused: unavailable");
        } else if status.is_server_error() {
            tracing::error!(status = status.as_u16(), latency_us, "request failed");
        } else {
            tracing::info!(status = status.as_u16(), latency_us, "request");
        }
        if let Ok(value) = HeaderValue::try_from(request_id) {
            response.headers_mut().insert(HeaderName::from_static("x-request-id"), value);
        }
        Ok(response)
    }
    .instrument(span)
    .await
}
