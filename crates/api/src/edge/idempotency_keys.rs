//! The layer next to the operations: idempotent retries of `createPet` and `placeOrder`
//! (`docs/api.md#idempotent-retries`).
//!
//! A request to one of them with an authenticated key and an `Idempotency-Key` header is taken here
//! before its operation runs: a malformed header is 400 `invalid_request`, and a key whose request
//! still runs in this process is 409 `idempotency_in_progress`. Otherwise the operation runs
//! holding the key (`idempotency::KeyedWrite` in the request): its write looks the key up in its
//! own transaction, and either stores its outcome with what it creates, or finds the key used
//! before: then the operation answers with the stored response marked `Idempotent-Replayed: true`
//! (`idempotency::replay`) when the request is the same, and 422 `idempotency_key_reused` when it
//! is not. The header is ignored on every other operation.

use std::sync::Arc;

use animal_store_domain::{Fingerprint, IdempotencyKey, IdempotencyRefusal};
use poem::{IntoResponse, Request, Response};

use super::check::RawBody;
use super::{Next, operation, respond, state};
use crate::error::{ApiError, ErrorCode};
use crate::wire::auth::Authenticated;
use crate::wire::idempotency::{IDEMPOTENCY_KEY, KeyedWrite};

/// Decides keyed requests to `createPet` and `placeOrder` before they run.
pub async fn idempotency_keys(next: Next, mut req: Request) -> poem::Result<Response> {
    // The operations that declare the header in the document honour it.
    let keyed = operation(&req, req.method()).is_some_and(|op| op.idempotent);
    let owner = req.extensions().get::<Authenticated>().map(|a| a.0.owner.clone());
    let (Some(owner), true, Some(state)) = (owner, keyed, state(&req)) else {
        return Ok(respond(&next, req).await);
    };
    let key = match idempotency_key(req.headers()) {
        Ok(Some(key)) => key,
        Ok(None) => return Ok(respond(&next, req).await),
        Err(err) => return Ok(err.into_response()),
    };
    let body = req.extensions().get::<RawBody>().map(|body| body.0.clone()).unwrap_or_default();
    let fingerprint = Fingerprint::of(req.method().as_str(), req.uri().path(), &body);
    match state.idempotency.hold(&owner, key, fingerprint) {
        Ok(hold) => {
            req.extensions_mut().insert(KeyedWrite(Arc::new(hold)));
            Ok(respond(&next, req).await)
        }
        Err(refusal) => Ok(ApiError::from(refusal).into_response()),
    }
}

/// The request's key: none without the header, the error that names it when it is sent
/// twice or is not a key. The IETF draft's structured-string form (`"..."`) is accepted.
fn idempotency_key(headers: &poem::http::HeaderMap) -> Result<Option<IdempotencyKey>, ApiError> {
    let mut values = headers.get_all(IDEMPOTENCY_KEY).iter();
    let Some(value) = values.next() else { return Ok(None) };
    if values.next().is_some() {
        return Err(ApiError::invalid_request("Idempotency-Key must be sent once"));
    }
    let invalid = |reason: String| ApiError::invalid_request(reason);
    let text = value.to_str().map_err(|_| {
        invalid("Idempotency-Key must hold visible ASCII characters only (no spaces or control characters)".to_owned())
    })?;
    // A value that opens a quote is a structured-field string, closed and escaped as such.
    let text = match text.strip_prefix('"') {
        Some(rest) => rest
            .strip_suffix('"')
            .and_then(unquote)
            .ok_or_else(|| invalid("Idempotency-Key is a malformed quoted string".to_owned()))?,
        None => text.to_owned(),
    };
    IdempotencyKey::new(&text).map(Some).map_err(|e| invalid(e.to_string()))
}

/// The content of a structured-field string (RFC 8941): `\"` and `\\` are its only escapes,
/// and a bare `"` may not appear.
fn unquote(quoted: &str) -> Option<String> {
    let mut text = String::with_capacity(quoted.len());
    let mut chars = quoted.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(escaped @ ('"' | '\\')) => text.push(escaped),
                _ => return None,
            },
            '"' => return None,
            c => text.push(c),
        }
    }
    Some(text)
}

impl From<IdempotencyRefusal> for ApiError {
    fn from(refusal: IdempotencyRefusal) -> Self {
        match refusal {
            IdempotencyRefusal::InProgress => {
                Self::new(ErrorCode::IdempotencyInProgress, refusal.to_string())
            }
            IdempotencyRefusal::KeyReused => {
                Self::new(ErrorCode::IdempotencyKeyReused, refusal.to_string())
            }
            IdempotencyRefusal::Repository(err) => err.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use poem::http::{HeaderMap, HeaderValue};

    fn key(values: &[&'static str]) -> Result<Option<String>, String> {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(IDEMPOTENCY_KEY, HeaderValue::from_static(value));
        }
        idempotency_key(&headers)
            .map(|k| k.map(|k| k.as_str().to_owned()))
            .map_err(|e| e.body().message)
    }

    #[test]
    fn the_header_is_a_key_plain_or_quoted_sent_once() {
        assert_eq!(key(&[]), Ok(None));
        assert_eq!(key(&["8e03978e-40d5"]), Ok(Some("8e03978e-40d5".to_owned())));
        assert_eq!(key(&["\"8e03978e-40d5\""]), Ok(Some("8e03978e-40d5".to_owned())));
        assert_eq!(key(&[r#""a\"b""#]), Ok(Some("a\"b".to_owned())));
        assert_eq!(key(&["a", "b"]), Err("Idempotency-Key must be sent once".to_owned()));
        for bad in ["", "\"\"", "a b", "\"a\"b\"", "\"open", "\""] {
            assert!(key(&[bad]).unwrap_err().starts_with("Idempotency-Key"), "{bad:?}");
        }
    }
}
