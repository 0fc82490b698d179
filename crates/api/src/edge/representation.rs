//! The representation of an operation's JSON answer: its content coding, compressed when the
//! request asks for one (`docs/api.md#caching-and-compression`), and for the reads that
//! declare `If-None-Match`, its `ETag` and the `304 Not Modified` of a request that holds it
//! (RFC 9110 §13). The guard, outside, sees the 304 and gives its slot back to the day's
//! quota (`docs/api.md#conditional-requests`).

use bytes::Bytes;
use poem::http::{HeaderValue, Method, StatusCode, header};
use poem::web::Compress;
use poem::{Body, IntoResponse, Request, Response};

use super::{Next, operation, respond};
use crate::operations::Caching;
use crate::wire::encoding::{self, Coding};
use crate::wire::etag;

/// The size from which a JSON answer is compressed when the request allows a coding. Below
/// it, the coding's own headers would eat most of the gain; a request that refuses an
/// unencoded answer (`identity;q=0`) gets any size compressed.
pub const COMPRESS_FROM: usize = 1024;

/// Chooses the coding of an operation's JSON answer, tags a conditional read's `200 OK` and
/// turns it into a 304 when the request already holds that representation, then compresses
/// the body when a coding was chosen. What is not an operation (the document, which has
/// its own, the probes, the metrics) passes as it is.
pub async fn representations(next: Next, mut req: Request) -> poem::Result<Response> {
    // A HEAD is answered as its GET, whose body is dropped here, after its tag and coding are
    // chosen, so that it has the GET's headers (poem's router would drop it first).
    let is_head = req.method() == Method::HEAD;
    let method = if is_head { Method::GET } else { req.method().clone() };
    let Some(operation) = operation(&req, &method) else {
        return Ok(respond(&next, req).await);
    };
    let conditional = operation.caching == Caching::Revalidated;
    req.set_method(method);
    let accepted = encoding::accepted(req.headers(), &Coding::ALL);
    // Only the tags the client holds are kept past the call; usually there are none.
    let held_tags: Vec<HeaderValue> = if conditional {
        req.headers().get_all(header::IF_NONE_MATCH).iter().cloned().collect()
    } else {
        Vec::new()
    };
    let mut response = respond(&next, req).await;
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    if is_json {
        // An operation's JSON is in memory already: taking it costs no copy.
        let body = response.take_body().into_bytes().await?;
        let body =
            represent(&mut response, body, accepted, conditional.then_some(&held_tags[..])).await;
        if is_head {
            if response.status() != StatusCode::NOT_MODIFIED {
                let length = HeaderValue::from(body.len());
                response.headers_mut().insert(header::CONTENT_LENGTH, length);
            }
        } else {
            response.set_body(body);
        }
    } else if is_head {
        response.set_body(Body::empty());
    }
    Ok(response)
}

/// Sets the headers of `body`'s representation on `response` and returns the bytes to send:
/// for a conditional read (`held`, the tags the client holds), the representation's tag, and
/// a 304 without a body when the client holds it; otherwise the body, compressed when
/// `accepted` allows a coding and the body is worth it.
async fn represent(
    response: &mut Response,
    body: Bytes,
    accepted: encoding::Accepted,
    held: Option<&[HeaderValue]>,
) -> Bytes {
    let coding =
        accepted.coding.filter(|_| body.len() >= COMPRESS_FROM || accepted.refuses_identity);
    response.headers_mut().append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    if let Some(held) = held.filter(|_| response.status() == StatusCode::OK) {
        let tag = etag::of(&body, coding);
        if let Ok(value) = HeaderValue::from_str(&tag) {
            response.headers_mut().insert(header::ETAG, value);
        }
        if etag::names(held, &tag) {
            response.set_status(StatusCode::NOT_MODIFIED);
            response.headers_mut().remove(header::CONTENT_TYPE);
            response.headers_mut().remove(header::CONTENT_LENGTH);
            return Bytes::new();
        }
    }
    let Some(coding) = coding else {
        return body;
    };
    match compress(body.clone(), coding).await {
        Ok(compressed) => {
            let headers = response.headers_mut();
            headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static(coding.name()));
            headers.remove(header::CONTENT_LENGTH);
            if held.is_none() {
                // A write's answer tags its animal itself, unencoded (createPet, updatePet):
                // the compressed representation has a tag of its own.
                let tagged = headers.get(header::ETAG).and_then(|tag| tag.to_str().ok());
                let coded = tagged.map(|tag| etag::in_coding(tag, coding));
                if let Some(coded) = coded.and_then(|tag| HeaderValue::try_from(tag).ok()) {
                    headers.insert(header::ETAG, coded);
                }
            }
            compressed
        }
        Err(err) => {
            // Compressing bytes in memory does not fail; if it did, the answer goes
            // unencoded, and its tag, named for the coding, is dropped.
            tracing::error!(error = %err, coding = coding.name(), "compressing an answer failed");
            response.headers_mut().remove(header::ETAG);
            body
        }
    }
}

/// `body` in `coding`, by poem's compressor at the coding's fastest level: for a page of 100
/// animals it saves as much as the default levels, in about two thirds of the time
/// (docs/benchmarks.md, "One request in process").
async fn compress(body: Bytes, coding: Coding) -> Result<Bytes, poem::error::ReadBodyError> {
    let compressed = Compress::new(body, coding.algorithm())
        .with_quality(poem::web::CompressionLevel::Fastest)
        .into_response();
    compressed.into_body().into_bytes().await
}
