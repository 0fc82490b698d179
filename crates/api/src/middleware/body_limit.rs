//! Layer 1: refuses bodies over [`MAX_BODY_BYTES`] with 413, whether their length is declared
//! or they are chunked.

use std::sync::Arc;

use poem::error::ReadBodyError;
use poem::http::header;
use poem::{Endpoint, IntoResponse, Request, Response};

use super::respond;
use crate::error::ApiError;

/// The largest request body accepted.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

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
