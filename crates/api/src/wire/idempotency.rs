//! What the layer of idempotent retries (`edge/idempotency_keys.rs`) and the operations that
//! honour an `Idempotency-Key` share (`docs/api.md#idempotent-retries`): the headers, the
//! hold on its key a keyed request runs with, and the answer a keyed write stores. Apart from
//! both, so that neither imports the other.

use std::sync::Arc;

use animal_store_domain::StoredAnswer;
use poem::Response;
use poem::http::{HeaderName, HeaderValue, StatusCode, header};

/// The request header that carries the client's key.
pub const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");
/// The response header that marks a replay.
pub const IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// The hold on its key a keyed request runs with; the operation stores its outcome under it.
#[derive(Debug, Clone)]
pub struct KeyedWrite(pub Arc<animal_store_domain::Hold>);

/// The answer of `status`, with `location` and the JSON `body`, as a keyed write stores it:
/// the status and the `Location` on the first line (`201 /v1/pets/7`), the body after.
pub fn encode(status: StatusCode, location: Option<&str>, body: &[u8]) -> StoredAnswer {
    let mut bytes = format!("{} {}\n", status.as_u16(), location.unwrap_or_default()).into_bytes();
    bytes.extend_from_slice(body);
    StoredAnswer::new(bytes)
}

/// What a stored answer holds.
#[derive(Debug, PartialEq, Eq)]
pub struct Decoded<'a> {
    /// Its status.
    pub status: StatusCode,
    /// Its `Location`, if it has one.
    pub location: Option<&'a str>,
    /// Its JSON body.
    pub body: &'a [u8],
}

/// What `answer` holds (see [`encode`]).
pub fn decode(answer: &StoredAnswer) -> Decoded<'_> {
    let bytes = answer.as_bytes();
    let head_end = bytes.iter().position(|&b| b == b'\n').unwrap_or(bytes.len());
    let head = std::str::from_utf8(&bytes[..head_end]).unwrap_or_default();
    let (status, location) = head.split_once(' ').unwrap_or((head, ""));
    let status = status.parse().ok().and_then(|s| StatusCode::from_u16(s).ok());
    Decoded {
        status: status.unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        location: (!location.is_empty()).then_some(location),
        body: bytes.get(head_end + 1..).unwrap_or_default(),
    }
}

/// The response of a stored answer: the first request's, or a retry's, marked as a replay.
pub fn send(answer: &Decoded<'_>, replayed: bool) -> Response {
    let mut response = Response::builder()
        .status(answer.status)
        .content_type("application/json; charset=utf-8")
        .body(answer.body.to_vec());
    if replayed {
        response.headers_mut().insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    }
    if let Some(Ok(location)) = answer.location.map(HeaderValue::try_from) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_answer_gives_back_its_status_location_and_body() {
        let created = encode(StatusCode::CREATED, Some("/v1/pets/7"), br#"{"id":7}"#);
        assert_eq!(created.as_bytes(), b"201 /v1/pets/7\n{\"id\":7}");
        let decoded = decode(&created);
        let expected = Decoded {
            status: StatusCode::CREATED,
            location: Some("/v1/pets/7"),
            body: br#"{"id":7}"#,
        };
        assert_eq!(decoded, expected);
        let first = send(&decoded, false);
        assert_eq!(first.status(), StatusCode::CREATED);
        assert_eq!(first.headers().get(header::LOCATION).unwrap(), "/v1/pets/7");
        assert!(first.headers().get(IDEMPOTENT_REPLAYED).is_none());
        let again = send(&decoded, true);
        assert_eq!(again.headers().get(IDEMPOTENT_REPLAYED).unwrap(), "true");
        let refused = encode(StatusCode::CONFLICT, None, b"{}");
        let refused = send(&decode(&refused), true);
        assert_eq!(refused.status(), StatusCode::CONFLICT);
        assert!(refused.headers().get(header::LOCATION).is_none());
    }
}
