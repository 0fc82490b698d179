//! Conditional requests (RFC 9110 §13): the reads that declare `If-None-Match` answer with
//! an `ETag`, a strong validator of their exact body, and a request that names it is
//! answered `304 Not Modified` without a body, its headers kept. The guard, outside, sees
//! the 304 and gives its slot back to the day's quota (`docs/api.md#conditional-requests`).

use std::sync::Arc;

use poem::http::{HeaderValue, StatusCode, header};
use poem::{Body, Endpoint, Request, Response};

use super::{resolved, respond};
use crate::etag;

/// Tags the `200 OK` of a conditional read, and turns it into a 304 when the request
/// already holds it.
pub async fn entity_tags<E: Endpoint>(ep: Arc<E>, req: Request) -> poem::Result<Response> {
    let conditional = resolved(&req)
        .and_then(|resolved| resolved.route().map(|route| route.is_conditional(req.method())))
        .unwrap_or(false);
    if !conditional {
        return Ok(respond(ep.as_ref(), req).await);
    }
    // Only the tags the client holds are kept past the call; usually there are none.
    let held: Vec<HeaderValue> =
        req.headers().get_all(header::IF_NONE_MATCH).iter().cloned().collect();
    let mut response = respond(ep.as_ref(), req).await;
    if response.status() != StatusCode::OK {
        return Ok(response);
    }
    // An operation's JSON is in memory already: taking it costs no copy.
    let body = response.take_body().into_bytes().await?;
    let tag = etag::of(&body);
    if let Ok(value) = HeaderValue::from_str(&tag) {
        response.headers_mut().insert(header::ETAG, value);
    }
    if etag::names(&held, &tag) {
        response.set_status(StatusCode::NOT_MODIFIED);
        response.headers_mut().remove(header::CONTENT_TYPE);
        response.headers_mut().remove(header::CONTENT_LENGTH);
        response.set_body(Body::empty());
    } else {
        response.set_body(body);
    }
    Ok(response)
}
