//! A request id, and one span and one log line per request.
//!
//! Nothing a client sends reaches the line whole: the route is a template of the route
//! table or `(unmatched)`, never the path; the request id is the client's only when it is
//! 1 to 128 safe characters; and the method, which hyper takes at any length a header
//! block allows, is logged as its [`excerpt`], so that a line stays short whatever the
//! request (`docs/security.md#what-the-service-defends`).

use std::time::Instant;

use animal_store_domain::excerpt;
use poem::http::{HeaderName, HeaderValue, StatusCode};
use poem::{Request, Response};
use tracing::Instrument;

use super::{Next, resolved, respond};
use crate::routes::Resolved;

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

/// Gives the request an id ([`request_id`], sent back as `X-Request-Id`), a span with its
/// method, route and key id, and a line with its status and latency when it ends.
/// The key itself is never logged.
pub async fn trace_request(next: Next, req: Request) -> poem::Result<Response> {
    let request_id = request_id(&req);
    let probe = crate::probes::is_for_operators(req.uri().path());
    let resolved = resolved(&req);
    let route = resolved.as_ref().and_then(Resolved::route).map_or("(unmatched)", |r| r.template());
    let span = tracing::info_span!(
        "request",
        method = %excerpt(req.method().as_str()),
        route = %route,
        request_id = %request_id,
        key_id = tracing::field::Empty,
    );
    async move {
        let started = Instant::now();
        let mut response = respond(&next, req).await;
        let status = response.status();
        let latency_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        // On the line's event only: a text line prints the span's fields as well, so recorded
        // on the span too they would be formatted and written twice.
        if status == StatusCode::SERVICE_UNAVAILABLE {
            // A dependency is down; the store logs the cause once per outage, not here.
            tracing::warn!(status = status.as_u16(), latency_us, "request refused: unavailable");
        } else if status.is_server_error() {
            tracing::error!(status = status.as_u16(), latency_us, "request failed");
        } else if probe {
            // A load balancer calls them every few seconds: not worth a line each.
            tracing::debug!(status = status.as_u16(), latency_us, "probe");
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
