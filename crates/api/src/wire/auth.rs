//! Bearer authentication (`docs/api.md#authentication`).
//!
//! The guard (`edge/guard.rs`) runs once per request and before anything else that
//! needs to know the caller (the rate limiter counts per key): it reads
//! `Authorization: Bearer <key>` (scheme name in any case), looks the key up ([`look_up`])
//! and, when the key is live and the request admitted, leaves an [`Authenticated`] in the
//! request ([`accept`]). Operations take a [`BearerKey`], which documents the
//! scheme and refuses the request with 401 when no live key was found. Missing, malformed,
//! unknown, revoked and other-environment keys are all the same 401.

use animal_store_domain::{ApiKey, KeyService, PresentedKey, RepositoryError};
use poem::Request;
use poem::http::HeaderMap;
use poem::http::header::AUTHORIZATION;
use poem_openapi::SecurityScheme;
use poem_openapi::auth::Bearer;

use crate::error::ApiError;

/// The live key that authenticated this request, put there by the middleware.
#[derive(Debug, Clone)]
pub struct Authenticated(pub ApiKey);

/// An API key sent as `Authorization: Bearer <API_KEY>`. Keys look like
/// `as_live_<id>_<secret>` in production and `as_test_<id>_<secret>` in staging; an operator
/// issues them with `animal-store keys create`. Operations that act for the caller (orders)
/// read the key.
#[derive(SecurityScheme)]
#[oai(ty = "bearer", bearer_format = "as_live_<id>_<secret>", checker = "authenticated_key")]
pub struct BearerKey(pub ApiKey);

#[allow(clippy::unused_async, reason = "poem-openapi awaits the checker")]
async fn authenticated_key(req: &Request, _bearer: Bearer) -> Option<ApiKey> {
    req.extensions().get::<Authenticated>().map(|a| a.0.clone())
}

/// The token of an `Authorization: Bearer <token>` header, the scheme matched in any case
/// (RFC 9110 §11.1).
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Whether the request carries `Authorization` headers that differ. Such a request is
/// refused with 400, as repeated query parameters and JSON keys are: which one a server
/// reads differs between servers, so a proxy in front could check one key while the service
/// acts for another. The same header sent twice names one key, and is read as one.
pub fn is_repeated(headers: &HeaderMap) -> bool {
    let mut values = headers.get_all(AUTHORIZATION).iter();
    let first = values.next();
    values.any(|value| Some(value) != first)
}

/// Looks the key `presented` up in the key store: the live key, or `None` for any key that
/// is not one (unknown, revoked, expired).
///
/// # Errors
///
/// 503 `service_unavailable` (or 500) when the key store cannot be read.
pub async fn look_up(
    keys: &KeyService,
    presented: &PresentedKey,
) -> Result<Option<ApiKey>, ApiError> {
    Ok(keys.look_up(presented).await?)
}

/// Lets the live `key` act for the admitted request: records it in the request and notes
/// its use.
pub async fn accept(keys: &KeyService, req: &mut Request, key: ApiKey) {
    // Bookkeeping: a failure to record the last use must not fail the request.
    match keys.record_use(&key).await {
        Ok(()) => {}
        // The store logs an outage once, when it starts and when it ends.
        Err(err @ RepositoryError::Unavailable(_)) => {
            tracing::debug!(error = %err, "cannot record the key's last use");
        }
        Err(err) => tracing::warn!(error = %err, "cannot record the key's last use"),
    }
    req.extensions_mut().insert(Authenticated(key));
}

#[cfg(test)]
mod tests {
    use super::*;
    use poem::http::HeaderValue;

    fn token(value: &'static str) -> Option<String> {
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, HeaderValue::from_static(value));
        bearer_token(&headers).map(str::to_owned)
    }

    #[test]
    fn the_scheme_is_case_insensitive_and_the_token_required() {
        assert_eq!(token("Bearer abc").as_deref(), Some("abc"));
        assert_eq!(token("bearer abc").as_deref(), Some("abc"));
        assert_eq!(token("BEARER abc").as_deref(), Some("abc"));
        assert_eq!(token("Basic abc"), None);
        assert_eq!(token("Bearer "), None);
        assert_eq!(token("Bearer"), None);
        assert_eq!(bearer_token(&HeaderMap::new()), None);
    }

    #[test]
    fn a_second_authorization_header_is_seen() {
        let mut headers = HeaderMap::new();
        headers.append(AUTHORIZATION, HeaderValue::from_static("Bearer a"));
        assert!(!is_repeated(&headers));
        headers.append(AUTHORIZATION, HeaderValue::from_static("Bearer a"));
        assert!(!is_repeated(&headers), "the same key twice is one key");
        headers.append(AUTHORIZATION, HeaderValue::from_static("Bearer b"));
        assert!(is_repeated(&headers));
    }
}
