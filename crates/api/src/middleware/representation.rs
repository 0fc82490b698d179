//! The representation of an operation's JSON answer: its content coding, compressed when the
//! request asks for one (`docs/api.md#caching-and-compression`), and for the reads that
//! declare `If-None-Match`, its `ETag` and the `304 Not Modified` of a request that holds it
//! (RFC 9110 §13). The guard, outside, sees the 304 and gives its slot back to the day's
//! quota (`docs/api.md#conditional-requests`).

use std::sync::Arc;

use bytes::Bytes;
use poem::http::{HeaderValue, StatusCode, header};
use poem::web::Compress;
use poem::{Body, Endpoint, IntoResponse, Request, Response};

use super::{resolved, respond};
use crate::encoding::{self, Coding};
use crate::etag;

/// The size from which a JSON answer is compressed when the request allows a coding. Below
/// it, the coding's own headers would eat most of the gain; a request that refuses an
/// unencoded answer (`identity;q=0`) gets any size compressed.
pub const COMPRESS_FROM: usize = 1024;

/// Chooses the coding of an operation's JSON answer, tags a conditional read's `200 OK` and
/// turns it into a 304 when the request already holds that representation, then compresses
/// the body when a coding was chosen. Answers that already name their representation (an
/// `ETag` or a `Content-Encoding` of their own, as the document's) pass as they are.
pub async fn representations<E: Endpoint>(ep: Arc<E>, req: Request) -> poem::Result<Response> {
    let conditional = resolved(&req)
        .and_then(|resolved| resolved.route().map(|route| route.is_conditional(req.method())))
        .unwrap_or(false);
    let accepted = encoding::accepted(req.headers(), &Coding::ALL);
    // Only the tags the client holds are kept past the call; usually there are none.
    let held: Vec<HeaderValue> = if conditional {
        req.headers().get_all(header::IF_NONE_MATCH).iter().cloned().collect()
    } else {
        Vec::new()
    };
    let mut response = respond(ep.as_ref(), req).await;
    let headers = response.headers();
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    if !is_json
        || headers.contains_key(header::ETAG)
        || headers.contains_key(header::CONTENT_ENCODING)
    {
        return Ok(response);
    }
    // An operation's JSON is in memory already: taking it costs no copy.
    let body = response.take_body().into_bytes().await?;
    let coding =
        accepted.coding.filter(|_| body.len() >= COMPRESS_FROM || accepted.refuses_identity);
    let headers = response.headers_mut();
    headers.append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    if conditional && response.status() == StatusCode::OK {
        let tag = etag::of(&body, coding);
        if let Ok(value) = HeaderValue::from_str(&tag) {
            response.headers_mut().insert(header::ETAG, value);
        }
        if etag::names(&held, &tag) {
            response.set_status(StatusCode::NOT_MODIFIED);
            response.headers_mut().remove(header::CONTENT_TYPE);
            response.headers_mut().remove(header::CONTENT_LENGTH);
            response.set_body(Body::empty());
            return Ok(response);
        }
    }
    match coding {
        Some(coding) => match compress(body.clone(), coding).await {
            Ok(compressed) => {
                let headers = response.headers_mut();
                headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static(coding.name()));
                headers.remove(header::CONTENT_LENGTH);
                response.set_body(compressed);
            }
            Err(err) => {
                // Compressing bytes in memory does not fail; if it did, the answer goes
                // unencoded, and its tag, named for the coding, is dropped.
                tracing::error!(error = %err, coding = coding.name(), "compressing an answer failed");
                response.headers_mut().remove(header::ETAG);
                response.set_body(body);
            }
        },
        None => response.set_body(body),
    }
    Ok(response)
}

/// `body` in `coding`, by poem's compressor.
async fn compress(body: Bytes, coding: Coding) -> Result<Bytes, poem::error::ReadBodyError> {
    let compressed = Compress::new(body, coding.algorithm()).into_response();
    compressed.into_body().into_bytes().await
}
