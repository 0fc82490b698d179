//! What a request must be before an operation sees it.
//!
//! - Its route and method must be in the route table: a path the table does not have is 404
//!   and a method its route does not have 405, with the `Allow` header RFC 9110 requires
//!   (which poem leaves out), before the operations' router sees the request; operations
//!   turned off (`--disable-experimental`) are then answered as if they did not exist.
//! - Its body must fit in [`MAX_BODY_BYTES`], whether its length is declared or it is
//!   chunked (poem's `SizeLimit` trusts only `Content-Length` and answers 411 to chunked
//!   bodies): 413 otherwise. A JSON body that gives a key twice is noted, for the operation
//!   to refuse.
//! - A `PATCH` whose body is of a media type the operation does not take is 415 with
//!   `Accept-Patch` (RFC 5789 §2.2), naming those it takes.

use poem::error::ReadBodyError;
use poem::http::{HeaderName, HeaderValue, Method, StatusCode, header};
use poem::{IntoResponse, Request, Response};

use super::{Next, resolved, respond};
use crate::error::ApiError;
use crate::wire::duplicates::{RepeatedJsonKey, repeated_json_key};

/// 404 and 405 from the route table, with `Allow`; 413 for a body too large; then the
/// operation, its body read, and `Accept-Patch` on a `PATCH`'s 415.
pub async fn check_request(next: Next, mut req: Request) -> poem::Result<Response> {
    let Some(resolved) = resolved(&req) else {
        return Ok(respond(&next, req).await);
    };
    let Some(route) = resolved.route() else {
        return Ok(ApiError::response_to(poem::Error::from_status(StatusCode::NOT_FOUND)));
    };
    let patch = req.method() == Method::PATCH;
    let mut response = if !route.allows(req.method()) {
        ApiError::response_to(poem::Error::from_status(StatusCode::METHOD_NOT_ALLOWED))
    } else if let Err(refused) = read_body(&mut req).await {
        refused
    } else {
        respond(&next, req).await
    };
    // Written only for the answers that carry them, not for every request.
    if response.status() == StatusCode::METHOD_NOT_ALLOWED
        && let Ok(value) = HeaderValue::try_from(route.allow())
    {
        response.headers_mut().insert(header::ALLOW, value);
    }
    if patch
        && response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE
        && let Some(value) = route
            .operation(&Method::PATCH)
            .and_then(|op| op.patch_types)
            .and_then(|types| HeaderValue::try_from(types).ok())
    {
        response.headers_mut().insert(HeaderName::from_static("accept-patch"), value);
    }
    Ok(response)
}

/// Whether the request says its body is JSON (`application/json`, `application/*+json`).
fn is_json(req: &Request) -> bool {
    req.content_type().is_some_and(|content_type| {
        let essence = content_type.split(';').next().unwrap_or_default().trim();
        essence.eq_ignore_ascii_case("application/json")
            || essence.to_ascii_lowercase().ends_with("+json")
    })
}

/// The body as the client sent it, once it is known to fit.
#[derive(Debug, Clone)]
pub struct RawBody(pub bytes::Bytes);

/// The largest request body accepted.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// Reads the body of `req`, at most [`MAX_BODY_BYTES`], and puts it back for the
/// operation; the answer that refuses it otherwise.
async fn read_body(req: &mut Request) -> Result<(), Response> {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > MAX_BODY_BYTES as u64) {
        return Err(ApiError::payload_too_large().into_response());
    }
    let body = req.take_body();
    // Most requests have no body (every `GET`): nothing to read. The read is boxed so that
    // its future (4 KB) is not part of this layer's, which is copied for every request.
    let read = if body.is_empty() {
        Ok(bytes::Bytes::new())
    } else {
        Box::pin(body.into_bytes_limit(MAX_BODY_BYTES)).await
    };
    match read {
        Ok(bytes) => {
            // Noted for the operation, which refuses it after the key and the content type,
            // in the order the errors are documented.
            if let Some(key) = is_json(req).then(|| repeated_json_key(&bytes)).flatten() {
                req.extensions_mut().insert(RepeatedJsonKey(key));
            }
            // For the fingerprint of a keyed retry (`idempotency_keys`).
            req.extensions_mut().insert(RawBody(bytes.clone()));
            req.set_body(bytes);
        }
        Err(ReadBodyError::PayloadTooLarge) => {
            return Err(ApiError::payload_too_large().into_response());
        }
        Err(err) => {
            // What the client can act on, not the library's words.
            tracing::debug!(error = %err, "a request body could not be read");
            return Err(ApiError::invalid_request(
                "the body could not be read: it ended before its declared length, or its \
                 chunked encoding is malformed",
            )
            .into_response());
        }
    }
    Ok(())
}
