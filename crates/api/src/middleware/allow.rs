//! Routing by the route table. A path the table does not have is 404 and a method
//! its route does not have 405, with the `Allow` header RFC 9110 requires (which poem leaves
//! out), before the operations' router sees the request: operations left out of the document
//! (`--disable-experimental`) are then answered as if they did not exist. A `PATCH` whose
//! body is of a media type the operation does not take is 415 with `Accept-Patch` (RFC 5789
//! §2.2), naming those it takes.

use poem::http::{HeaderValue, StatusCode, header};
use poem::{Request, Response};

use super::{Next, error_response, resolved, respond};

/// 404 and 405 from the route table; `Allow` on every 405.
pub async fn allow_header(next: Next, req: Request) -> poem::Result<Response> {
    let Some(resolved) = resolved(&req) else {
        return Ok(respond(&next, req).await);
    };
    let Some(route) = resolved.route() else {
        return Ok(error_response(poem::Error::from_status(StatusCode::NOT_FOUND)));
    };
    let patch = req.method() == poem::http::Method::PATCH;
    let mut response = if route.allows(req.method()) {
        respond(&next, req).await
    } else {
        error_response(poem::Error::from_status(StatusCode::METHOD_NOT_ALLOWED))
    };
    // Written only for the answers that carry them, not for every request.
    if response.status() == StatusCode::METHOD_NOT_ALLOWED
        && let Ok(value) = HeaderValue::try_from(route.allow())
    {
        response.headers_mut().insert(header::ALLOW, value);
    }
    if patch
        && response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE
        && let Some(value) =
            route.accept_patch().and_then(|types| HeaderValue::try_from(types).ok())
    {
        response.headers_mut().insert(poem::http::HeaderName::from_static("accept-patch"), value);
    }
    Ok(response)
}
