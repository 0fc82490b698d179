//! What the layer of idempotent retries (`edge/idempotency_keys.rs`) and the operations that
//! honour an `Idempotency-Key` share (`docs/api.md#idempotent-retries`): the headers, the
//! hold on its key a keyed request runs with, and the replay of a stored response. Apart from both, so
//! that neither imports the other.

use std::sync::Arc;

use animal_store_domain::StoredResponse;
use poem::Response;
use poem::http::{HeaderName, HeaderValue, StatusCode, header};

/// The request header that carries the client's key.
pub const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");
/// The response header that marks a replay.
pub const IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// The hold on its key a keyed request runs with; the operation stores its outcome under it.
#[derive(Debug, Clone)]
pub struct KeyedWrite(pub Arc<animal_store_domain::Hold>);

/// The stored response, marked as a replay.
pub fn replay(stored: StoredResponse) -> Response {
    let StoredResponse { status, body, location } = stored;
    let mut response = Response::builder()
        .status(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .content_type("application/json; charset=utf-8")
        .header(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"))
        .body(body);
    if let Some(location) = location.and_then(|l| HeaderValue::try_from(l).ok()) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
}
