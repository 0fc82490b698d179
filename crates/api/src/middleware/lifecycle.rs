//! The headers of an operation's lifecycle on every one of its responses, those of
//! the layers inside included: a deprecated operation's `Deprecation`, `Sunset` and `Link`,
//! and a beta or experimental operation's `API-Stability`.

use poem::http::HeaderName;
use poem::{Request, Response};

use super::{Next, resolved, respond};
use crate::routes::Resolved;

/// The header that says how far an operation may still change (`beta`, `experimental`).
pub const API_STABILITY: HeaderName = HeaderName::from_static("api-stability");

/// Adds a deprecated operation's headers and a beta or experimental operation's
/// `API-Stability` to every response of it.
pub async fn lifecycle_headers(next: Next, req: Request) -> poem::Result<Response> {
    let resolved = resolved(&req);
    let route = resolved.as_ref().and_then(Resolved::route);
    let deprecation = route.and_then(|route| route.deprecation(req.method()));
    let stability = route.and_then(|route| route.stability(req.method()).header());
    let headers = deprecation.map(|deprecation| deprecation.headers(req.uri().path()));
    let mut response = respond(&next, req).await;
    if let Some(headers) = headers {
        for (name, value) in headers {
            response.headers_mut().insert(name, value);
        }
    }
    if let Some(stability) = stability {
        response.headers_mut().insert(API_STABILITY, stability);
    }
    Ok(response)
}
