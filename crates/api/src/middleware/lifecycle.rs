//! Layer 7: the headers of a deprecated operation on every one of its responses, those of
//! the layers inside included.

use std::sync::Arc;

use poem::{Endpoint, Request, Response};

use super::{respond, routes};
use crate::deprecation::Deprecation;

/// Layer 7: adds `Deprecation`, `Sunset` and `Link` to every response of a deprecated
/// operation.
pub async fn deprecation_headers<E: Endpoint>(ep: Arc<E>, req: Request) -> poem::Result<Response> {
    let deprecation = routes(&req).and_then(|routes| {
        routes
            .find(req.uri().path())
            .and_then(|route| route.operation(req.method()))
            .and_then(Deprecation::of)
    });
    let mut response = respond(ep.as_ref(), req).await;
    if let Some(deprecation) = deprecation {
        for (name, value) in deprecation.headers() {
            response.headers_mut().insert(name, value);
        }
    }
    Ok(response)
}
