//! Layer 3: the `Allow` header RFC 9110 requires on a 405, which poem leaves out.

use std::sync::Arc;

use poem::http::{HeaderValue, StatusCode, header};
use poem::{Endpoint, Request, Response};

use super::{respond, routes};
use crate::routes::RouteEntry;

/// Layer 3: adds `Allow` to a 405.
pub async fn allow_header<E: Endpoint>(ep: Arc<E>, req: Request) -> poem::Result<Response> {
    let allow =
        routes(&req).and_then(|routes| routes.find(req.uri().path()).map(RouteEntry::allow));
    let mut response = respond(ep.as_ref(), req).await;
    if response.status() == StatusCode::METHOD_NOT_ALLOWED
        && let Some(value) = allow.and_then(|a| HeaderValue::try_from(a).ok())
    {
        response.headers_mut().insert(header::ALLOW, value);
    }
    Ok(response)
}
