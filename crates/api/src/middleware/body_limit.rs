//! Refuses bodies over [`MAX_BODY_BYTES`] with 413, whether their length is declared
//! or they are chunked, and notes a JSON body that gives a key twice.

use poem::error::ReadBodyError;
use poem::http::header;
use poem::{IntoResponse, Request, Response};

use super::{Next, respond};
use crate::dto::duplicates::{RepeatedJsonKey, repeated_json_key};
use crate::error::ApiError;

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

/// Refuses bodies over [`MAX_BODY_BYTES`] with 413, whatever their framing.
pub async fn body_limit(next: Next, mut req: Request) -> poem::Result<Response> {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > MAX_BODY_BYTES as u64) {
        return Ok(ApiError::payload_too_large().into_response());
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
            if let Some(key) = is_json(&req).then(|| repeated_json_key(&bytes)).flatten() {
                req.extensions_mut().insert(RepeatedJsonKey(key));
            }
            // For the fingerprint of a keyed retry (`idempotency_keys`).
            req.extensions_mut().insert(RawBody(bytes.clone()));
            req.set_body(bytes);
        }
        Err(ReadBodyError::PayloadTooLarge) => {
            return Ok(ApiError::payload_too_large().into_response());
        }
        Err(err) => {
            // What the client can act on, not the library's words.
            tracing::debug!(error = %err, "a request body could not be read");
            return Ok(ApiError::invalid_request(
                "the body could not be read: it ended before its declared length, or its \
                 chunked encoding is malformed",
            )
            .into_response());
        }
    }
    Ok(respond(&next, req).await)
}
