//! What every response carries, and what is recorded of every request: the outermost
//! layer.
//!
//! - The route: looked up once in the route table, and put on the request ([`Resolved`])
//!   for every layer inside to read.
//! - A request id (`X-Request-Id`), and one span and one log line per request. Nothing a
//!   client sends reaches the line whole: the route is a template of the route table or
//!   `(unmatched)`, never the path; the request id is the client's only when it is 1 to 128
//!   safe characters; and the method, which hyper takes at any length a header block allows,
//!   is logged as its [`excerpt`] (`docs/security.md#what-the-service-defends`).
//! - The request metrics: the requests in flight, and each one's duration by method, route
//!   and the status the client sees.
//! - `X-Content-Type-Options: nosniff`, so that no browser reads a JSON body or an error as
//!   something else (a script, a page), and `Cache-Control`, which says who may keep the
//!   answer (RFC 9111; `docs/api.md#caching-and-compression`), decided here only, by the
//!   kind of answer. While the server drains before it stops, every answer also says
//!   `Connection: close`, so that clients and proxies open their next connections
//!   elsewhere. With a clock file, every answer's `Date` is that clock's.
//! - An operation's lifecycle: a deprecated operation's `Deprecation`, `Sunset` and `Link`,
//!   and a beta or experimental operation's `API-Stability`, on every one of its responses,
//!   the 401s and 429s of the layers inside included.
//! - A request the server refused before the app ([`Refused`]: its framing) gets its 400
//!   here with `Connection: close`, and no layer inside runs.

use std::sync::Arc;
use std::time::Instant;

use animal_store_domain::excerpt;
use poem::http::{HeaderName, HeaderValue, StatusCode, header};
use poem::{IntoResponse as _, Request, Response};
use tracing::Instrument;

use super::{Next, respond};
use crate::error::ApiError;
use crate::operations::Caching;
use crate::operations::routes::{Resolved, RouteEntry, RouteTable};
use crate::operations::state::AppState;
use crate::operations::telemetry::{RequestMetrics, method_label};

/// The header that says how far an operation may still change (`beta`, `experimental`).
pub const API_STABILITY: HeaderName = HeaderName::from_static("api-stability");

/// Why the server refused a request before the app, put on the request.
#[derive(Debug, Clone, Copy)]
pub struct Refused(pub &'static str);

/// Resolves the route, then answers through the layers inside and gives the answer what
/// every response carries, recording the request (see the module's documentation).
pub async fn envelope(next: Next, mut req: Request) -> poem::Result<Response> {
    let resolved = req
        .data::<Arc<RouteTable>>()
        .map(|table| Resolved::of(Arc::clone(table), req.uri().path()));
    let route = resolved.as_ref().and_then(Resolved::route);
    let method = req.method().clone();
    let template = route.map_or("(unmatched)", |r| r.template());
    let operation = route.and_then(|route| route.operation(&method));
    let deprecation = operation
        .and_then(|op| op.deprecation)
        .map(|deprecation| deprecation.headers(req.uri().path()));
    let stability = operation.and_then(|op| op.stability.header());
    let caching = route.map_or(Caching::NoStore, |route| route.caching(&method));
    let metrics_route =
        resolved.as_ref().and_then(Resolved::index).zip(route.map(RouteEntry::template));
    let authorized = req.headers().contains_key(header::AUTHORIZATION);
    let state = req.data::<AppState>();
    let draining = state.is_some_and(|state| state.readiness.is_draining());
    let date = state.filter(|state| state.config.date_from_clock).map(|state| state.clock.now());
    let metrics = req.data::<Arc<RequestMetrics>>().cloned();
    let request_id = request_id(&req);
    let probe = crate::operations::probes::is_for_operators(req.uri().path());
    let span = tracing::info_span!(
        "request",
        method = %excerpt(method.as_str()),
        route = %template,
        request_id = %request_id,
        key_id = tracing::field::Empty,
    );
    let label = method_label(&method);
    let active = metrics.as_ref().map(|metrics| Active::new(metrics.active(label)));
    if let Some(resolved) = resolved.clone() {
        req.extensions_mut().insert(resolved);
    }
    let started = Instant::now();
    let refused = req.extensions_mut().remove::<Refused>();
    let mut response = match refused {
        Some(Refused(reason)) => ApiError::invalid_request(reason).into_response(),
        None => respond(&next, req).instrument(span.clone()).await,
    };
    drop(active);
    let status = response.status();
    let latency_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    span.in_scope(|| {
        if let Some(Refused(reason)) = refused {
            tracing::info!(status = 400, reason, "request refused: ambiguous framing");
        } else if status == StatusCode::SERVICE_UNAVAILABLE {
            tracing::warn!(status = status.as_u16(), latency_us, "request refused: unavailable");
        } else if status.is_server_error() {
            tracing::error!(status = status.as_u16(), latency_us, "request failed");
        } else if probe {
            tracing::debug!(status = status.as_u16(), latency_us, "probe");
        } else {
            tracing::info!(status = status.as_u16(), latency_us, "request");
        }
    });
    let (cache_control, vary) = caching.answered(status).headers(authorized);
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::try_from(request_id) {
        headers.insert(HeaderName::from_static("x-request-id"), value);
    }
    for (name, value) in deprecation.into_iter().flatten() {
        headers.insert(name, value);
    }
    if let Some(stability) = stability {
        headers.insert(API_STABILITY, stability);
    }
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache_control));
    if let Some(vary) = vary {
        headers.insert(header::VARY, HeaderValue::from_static(vary));
    }
    if draining || refused.is_some() {
        headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    if let Some(value) =
        date.and_then(|now| HeaderValue::try_from(httpdate::fmt_http_date(now)).ok())
    {
        headers.insert(header::DATE, value);
    }
    if let Some(metrics) = metrics {
        metrics.record(label, metrics_route, status, started.elapsed());
    }
    Ok(response)
}

/// The longest request id kept from a client.
const MAX_REQUEST_ID: usize = 128;

/// The client's `X-Request-Id` when it is 1 to 128 characters of `A-Z a-z 0-9 . _ : -`, so
/// that it is safe in a header and a log line; `None` otherwise.
fn client_request_id(req: &Request) -> Option<String> {
    let id = req.headers().get("x-request-id")?.to_str().ok()?;
    let valid = (1..=MAX_REQUEST_ID).contains(&id.len())
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'));
    valid.then(|| id.to_owned())
}

/// The id of a request, for its `X-Request-Id` and its log line: the client's own when
/// valid, a new one otherwise.
pub fn request_id(req: &Request) -> String {
    client_request_id(req).unwrap_or_else(new_request_id)
}

/// A new request id: 16 lowercase hexadecimal digits of a random number, written digit by
/// digit (`format!` took a third of a line's cost of the id).
fn new_request_id() -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let random = rand::random::<u64>();
    (0..16)
        .rev()
        .map(|nibble| char::from(DIGITS[((random >> (nibble * 4)) & 0xf) as usize]))
        .collect()
}

/// One active request, counted until dropped: a request whose client hangs up counts down
/// too.
struct Active(metrics::Gauge);

impl Active {
    fn new(gauge: metrics::Gauge) -> Self {
        gauge.increment(1.0);
        Self(gauge)
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        self.0.decrement(1.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(value: &str) -> Option<String> {
        client_request_id(&Request::builder().header("x-request-id", value).finish())
    }

    #[test]
    fn a_new_id_is_16_lowercase_hexadecimal_digits() {
        let ids: Vec<String> = (0..64).map(|_| new_request_id()).collect();
        for id in &ids {
            assert_eq!(id.len(), 16, "{id}");
            assert!(id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)), "{id}");
        }
        let distinct: std::collections::HashSet<&String> = ids.iter().collect();
        assert_eq!(distinct.len(), ids.len());
    }

    #[test]
    fn only_well_formed_client_ids_are_kept() {
        assert_eq!(id("abc-123_x.y:z").as_deref(), Some("abc-123_x.y:z"));
        assert_eq!(id(&"a".repeat(128)).map(|i| i.len()), Some(128));
        for bad in ["", "has space", "semi;colon", "é", &"a".repeat(129)] {
            assert_eq!(id(bad), None, "{bad:?}");
        }
        assert_eq!(client_request_id(&Request::default()), None);
    }
}
