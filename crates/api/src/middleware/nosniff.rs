//! `X-Content-Type-Options: nosniff` on every response, so that no browser reads
//! a JSON body or an error as something else (a script, a page).

use std::sync::Arc;

use poem::http::{HeaderValue, header};
use poem::{Endpoint, Request, Response};

use super::respond;

/// Forbids browsers to guess another content type than the one declared.
pub async fn nosniff<E: Endpoint>(ep: Arc<E>, req: Request) -> poem::Result<Response> {
    let mut response = respond(ep.as_ref(), req).await;
    response
        .headers_mut()
        .insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    Ok(response)
}
