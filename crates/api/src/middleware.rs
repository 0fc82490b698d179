//! The layers around the operations, innermost first:
//!
//! 1. [`body_limit`]: reads at most 16 KiB of a body (poem's `SizeLimit` trusts only
//!    `Content-Length` and answers 411 to chunked bodies).
//! 2. `catch_all_error` ([`error_response`]): everything raised before or after a handler
//!    (routing, extraction) becomes the Error body; an operation's own error responses pass.
//! 3. [`allow_header`]: the `Allow` header RFC 9110 requires on a 405.
//! 4. `CatchPanic` ([`panic_response`]): a panicking handler becomes a 500 Error body.
//! 5. [`guard`]: finds the caller's key, applies the rate limits, and sets their headers
//!    on every response (see `rate_limit`).
//! 6. [`deprecation_headers`]: the headers of a deprecated operation on all its responses,
//!    those of the layers inside included.
//! 7. [`trace_request`]: a request id and one span and log line per request.
//!
//! Each layer outside `catch_all_error` turns an error into a response itself before adding
//! its headers, so that no response escapes without them.

use std::any::Any;
use std::sync::Arc;
use std::time::Instant;

use poem::error::ReadBodyError;
use poem::http::{HeaderName, HeaderValue, StatusCode, header};
use poem::{Endpoint, IntoResponse, Request, Response};
use tracing::Instrument;

use crate::deprecation::Deprecation;
use crate::error::ApiError;
use crate::routes::RouteTable;
use crate::state::AppState;
use animal_store_domain::Subject;

use crate::{auth, rate_limit};

/// The largest request body accepted.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// Calls `ep` and turns an error into the Error body.
async fn respond<E: Endpoint>(ep: &E, req: Request) -> Response {
    match ep.call(req).await {
        Ok(output) => output.into_response(),
        Err(err) => error_response(err),
    }
}

/// The response for an error: its own if an operation built it, the Error body otherwise.
pub fn error_response(err: poem::Error) -> Response {
    if err.is_from_response() {
        err.into_response()
    } else {
        ApiError::from_poem(&err).into_response()
    }
}

/// Layer 1: refuses bodies over [`MAX_BODY_BYTES`] with 413, whatever their framing.
pub async fn body_limit<E: Endpoint>(ep: Arc<E>, mut req: Request) -> poem::Result<Response> {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > MAX_BODY_BYTES as u64) {
        return Ok(ApiError::payload_too_large().into_response());
    }
    match req.take_body().into_bytes_limit(MAX_BODY_BYTES).await {
        Ok(bytes) => req.set_body(bytes),
        Err(ReadBodyError::PayloadTooLarge) => {
            return Ok(ApiError::payload_too_large().into_response());
        }
        Err(err) => {
            return Ok(ApiError::invalid_request(format!("the body could not be read: {err}"))
                .into_response());
        }
    }
    Ok(respond(ep.as_ref(), req).await)
}

/// Layer 3: adds `Allow` to a 405.
pub async fn allow_header<E: Endpoint>(
    ep: Arc<E>,
    req: Request,
    routes: &RouteTable,
) -> poem::Result<Response> {
    let allow = routes.find(req.uri().path()).map(crate::routes::RouteEntry::allow);
    let mut response = respond(ep.as_ref(), req).await;
    if response.status() == StatusCode::METHOD_NOT_ALLOWED
        && let Some(value) = allow.and_then(|a| HeaderValue::try_from(a).ok())
    {
        response.headers_mut().insert(header::ALLOW, value);
    }
    Ok(response)
}

/// Layer 4: the response for a panicking handler. The panic itself is logged by the
/// process's panic hook; the request's log line carries the request id.
#[allow(clippy::needless_pass_by_value, reason = "the signature poem's PanicHandler wants")]
pub fn panic_response(_panic: Box<dyn Any + Send>) -> Response {
    ApiError::internal().into_response()
}

/// Layer 6: adds `Deprecation`, `Sunset` and `Link` to every response of a deprecated
/// operation.
pub async fn deprecation_headers<E: Endpoint>(
    ep: Arc<E>,
    req: Request,
    routes: &RouteTable,
) -> poem::Result<Response> {
    let deprecation = routes
        .find(req.uri().path())
        .and_then(|route| route.operation(req.method()))
        .and_then(Deprecation::of);
    let mut response = respond(ep.as_ref(), req).await;
    if let Some(deprecation) = deprecation {
        for (name, value) in deprecation.headers() {
            response.headers_mut().insert(name, value);
        }
    }
    Ok(response)
}

/// Layer 5: finds the caller's key, counts the request against it (or against the client
/// address without one), refuses it with 429 when over the limit, and puts the rate-limit
/// headers on whatever response comes back.
///
/// An address over its limit for requests without a valid key gets 429 for any request that
/// carries a key, before the key is even looked up: someone guessing keys learns nothing
/// more, not even when a guess is right, until the address's window resets.
pub async fn guard<E: Endpoint>(
    ep: Arc<E>,
    mut req: Request,
    state: &AppState,
) -> poem::Result<Response> {
    let address = rate_limit::address_subject(state, &req);
    if auth::bearer_token(req.headers()).is_some() {
        let guessing = state.limiter.peek(&address, state.rate_limit_policy.per_address).await;
        if let Some(refusal) = rate_limit::refusal(&address, &guessing) {
            let mut response = refusal.into_response();
            rate_limit::set_headers(response.headers_mut(), &guessing);
            return Ok(response);
        }
    }
    let key = auth::resolve_key(&state.keys, &mut req).await;
    let (subject, quota) = match key.as_ref().ok().and_then(Option::as_ref) {
        Some(key) => (Subject::Key(key.id.clone()), key.plan.quota()),
        None => (address, state.rate_limit_policy.per_address),
    };
    let decision = state.limiter.check(&subject, quota).await;
    let mut response = match (key, rate_limit::refusal(&subject, &decision)) {
        (Err(err), _) => err.into_response(),
        (Ok(_), Some(refusal)) => refusal.into_response(),
        (Ok(_), None) => respond(ep.as_ref(), req).await,
    };
    rate_limit::set_headers(response.headers_mut(), &decision);
    Ok(response)
}

/// Layer 7: gives the request an id (`X-Request-Id` on the response) and a span with its
/// method, route, key id, status and latency. The key itself is never logged.
pub async fn trace_request<E: Endpoint>(
    ep: Arc<E>,
    req: Request,
    routes: &RouteTable,
) -> poem::Result<Response> {
    let request_id = format!("{:016x}", rand::random::<u64>());
    let route = routes.find(req.uri().path()).map_or("(unmatched)", |r| r.template()).to_owned();
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
