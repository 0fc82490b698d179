//! The headers every response carries: `X-Content-Type-Options: nosniff`, so that no browser
//! reads a JSON body or an error as something else (a script, a page), and `Cache-Control`,
//! which says who may keep the answer (RFC 9111; `docs/api.md#caching-and-compression`).
//! Which `Cache-Control` is decided here only, by the kind of answer, not by each operation.
//! While the server drains before it stops, every answer also says `Connection: close`, so
//! that clients and proxies open their next connections elsewhere while this server still
//! answers, and none holds an idle connection that closes under its next request. With a
//! clock file, every answer's `Date` is that clock's (the server writes the system's
//! otherwise).

use poem::http::{HeaderValue, StatusCode, header};
use poem::{Request, Response};

use super::{Next, resolved, respond};
use crate::published;
use crate::state::AppState;

/// What a response is, for caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A read that answers with an `ETag` (listPets, getPet, listOrders, getOrder): its 200
    /// or 304.
    Revalidated,
    /// The document or the docs page: its 200 or 304.
    Published,
    /// Anything else: writes, getRateLimit, every error, the probes, the metrics.
    Other,
}

impl Kind {
    /// The kind `req`'s answer has if it is a 200 or a 304.
    fn of_request(req: &Request) -> Self {
        match resolved(req).as_ref().and_then(|resolved| resolved.route()) {
            Some(route) if published::PATHS.contains(&route.template()) => Self::Published,
            Some(route) if route.is_conditional(req.method()) => Self::Revalidated,
            _ => Self::Other,
        }
    }

    /// This kind, if `status` is a 200 or a 304; any other answer is [`Kind::Other`].
    fn answered(self, status: StatusCode) -> Self {
        if matches!(status, StatusCode::OK | StatusCode::NOT_MODIFIED) { self } else { Self::Other }
    }
}

/// `Cache-Control`, and `Vary` where a cache may keep the answer, for an answer of `kind` to
/// a request with (`authorized`) or without an `Authorization` header.
///
/// - A revalidated read may be kept by the client's own cache, which must ask again (with
///   its `ETag`, answered 304 while it holds) before each use; no shared cache keeps it.
/// - The document and the docs page are the same for everyone: any cache may keep them 5
///   minutes, except that the answer to a request with a key carries that key's rate-limit
///   headers, so only that client's cache may keep it.
/// - Nothing else is kept anywhere: a write's answer, the rate limit, which must be current,
///   an error, the probes and the metrics.
pub fn cache_headers(kind: Kind, authorized: bool) -> (&'static str, Option<&'static str>) {
    match (kind, authorized) {
        (Kind::Revalidated, _) => ("private, no-cache", Some("Authorization, Accept-Encoding")),
        (Kind::Published, false) => ("public, max-age=300", Some("Authorization, Accept-Encoding")),
        (Kind::Published, true) => ("private, max-age=300", Some("Authorization, Accept-Encoding")),
        (Kind::Other, _) => ("no-store", None),
    }
}

/// Puts `nosniff` and the caching headers on every response, and `Connection: close` while
/// the server drains.
pub async fn standard_headers(next: Next, req: Request) -> poem::Result<Response> {
    let authorized = req.headers().contains_key(header::AUTHORIZATION);
    let kind = Kind::of_request(&req);
    let state = req.data::<AppState>();
    let draining = state.is_some_and(|state| state.readiness.is_draining());
    let date = state.filter(|state| state.config.date_from_clock).map(|state| state.clock.now());
    let mut response = respond(&next, req).await;
    let (cache_control, vary) = cache_headers(kind.answered(response.status()), authorized);
    let headers = response.headers_mut();
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache_control));
    if let Some(vary) = vary {
        headers.insert(header::VARY, HeaderValue::from_static(vary));
    }
    if draining {
        headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    if let Some(value) =
        date.and_then(|now| HeaderValue::try_from(httpdate::fmt_http_date(now)).ok())
    {
        headers.insert(header::DATE, value);
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_revalidated_reads_and_the_documents_may_be_kept() {
        assert_eq!(cache_headers(Kind::Other, true), ("no-store", None));
        assert_eq!(cache_headers(Kind::Other, false), ("no-store", None));
        assert_eq!(cache_headers(Kind::Revalidated, true).0, "private, no-cache");
        assert_eq!(cache_headers(Kind::Published, false).0, "public, max-age=300");
        assert_eq!(cache_headers(Kind::Published, true).0, "private, max-age=300");
    }

    #[test]
    fn an_answer_is_kept_only_when_it_is_a_200_or_a_304() {
        assert_eq!(Kind::Revalidated.answered(StatusCode::NOT_MODIFIED), Kind::Revalidated);
        assert_eq!(Kind::Published.answered(StatusCode::OK), Kind::Published);
        assert_eq!(Kind::Revalidated.answered(StatusCode::NOT_FOUND), Kind::Other);
        let req = Request::builder().method(poem::http::Method::GET).finish();
        for status in [StatusCode::OK, StatusCode::NOT_FOUND, StatusCode::NOT_MODIFIED] {
            assert_eq!(Kind::of_request(&req).answered(status), Kind::Other, "no route: {status}");
        }
    }
}
