//! Authentication and rate limiting, and the rate-limit headers on every response
//! (`docs/api.md#plans-and-rate-limits`); then the request's time: a request not answered
//! within the request timeout is answered 503 `service_unavailable`, its work inside dropped,
//! and the answer still carries the rate-limit headers.

use std::sync::Arc;

use animal_store_domain::{
    ApiKey, Decision, GiveBack, INQUIRY_QUOTA, Recognised, Scope, Subject, Verdict,
};
use poem::http::{HeaderValue, StatusCode, header};
use poem::{IntoResponse, Request, Response};

use super::{Next, operation, respond, state};
use crate::error::{ApiError, ErrorCode};
use crate::operations::Operation;
use crate::operations::rate_limit;
use crate::operations::rate_limit::KeyWindows;
use crate::operations::state::AppState;
use crate::operations::telemetry::{Outcome, RequestMetrics};
use crate::wire::auth;

/// Finds the caller's key, counts the request against it (or against the client
/// address without one), refuses it with 429 when over the limit, and puts the rate-limit
/// headers on whatever response comes back.
///
/// The client address's quota is for requests that carry no key or a key that is not live,
/// and it is what stands between a client and guessing keys, so it is spent before a key is
/// looked up and never outrun:
///
/// - a request whose key the key store has at hand (a cached lookup) is known at once: a
///   live key only looks at the address's count, and is refused with the same 429 as a
///   wrong guess when the address is over its limit; a key known not to be live, or no key,
///   takes a slot of the address's quota;
/// - a request whose key only a lookup can tell takes a slot first, checked and counted in
///   one step, so that however many arrive at once, no more than the quota are looked up;
///   the slot is given back when the key proves live, or when the key store cannot answer
///   (that request is answered 503 `service_unavailable` and counted against nothing).
///
/// So an address over its limit gets 429 for a right guess as for a wrong one, valid keys
/// and outages never spend an address's quota, and a key never pays for a lookup that
/// failed (`docs/api.md#requests-without-a-valid-key`).
pub async fn guard(next: Next, mut req: Request) -> poem::Result<Response> {
    let Some(state) = state(&req) else {
        tracing::error!("a request reached the guard without the services: see `app`");
        return Ok(ApiError::internal().into_response());
    };
    // One deadline for the whole request: the key's lookup and the decision, the key's
    // bookkeeping and the operation. A database that stalls rather than refuses must not
    // hold the request past it, however the time falls between them.
    let limit = state.config.request_timeout;
    let deadline = tokio::time::Instant::now() + limit;
    // The probes and the metrics are outside the API: never counted, never refused.
    if crate::operations::probes::is_for_operators(req.uri().path()) {
        return Ok(within((deadline, limit), respond(&next, req)).await);
    }
    let Ok(decided) = tokio::time::timeout_at(deadline, decide(&state, &req)).await else {
        return Ok(timed_out(limit));
    };
    if let Some(metrics) = req.data::<Arc<RequestMetrics>>() {
        metrics.decided(decided.outcome());
    }
    let Decided { key, mut decision, refusal, windows, subject, .. } = decided;
    if let Some(windows) = windows {
        req.extensions_mut().insert(KeyWindows(windows));
    }
    if let Ok(Some(key)) = &key {
        tracing::Span::current().record("key_id", key.id.as_str());
    }
    let mut response = match (key, refusal) {
        (_, Some(refusal)) => refusal.into_response(),
        (Ok(Some(key)), None) if key.scope == Scope::Read && needs_write(&req) => {
            // Counted like any request: the key is valid, the call is not its to make.
            let mut refused = ApiError::new(
                ErrorCode::Forbidden,
                "this key's scope is read: it may call only the operations that change \
                 nothing, and this one needs a key with the write scope",
            )
            .into_response();
            // RFC 6750 §3.1: what the key lacks, in the header a client's library reads.
            refused.headers_mut().insert(
                poem::http::header::WWW_AUTHENTICATE,
                poem::http::HeaderValue::from_static(
                    "Bearer error=\"insufficient_scope\", scope=\"write\"",
                ),
            );
            refused
        }
        (Ok(Some(key)), None) => {
            let answer = async {
                auth::accept(&state.keys, &mut req, key).await;
                respond(&next, req).await
            };
            let response = within((deadline, limit), answer).await;
            if response.status() == StatusCode::NOT_MODIFIED {
                // The client had the answer: nothing of the day's quota, which the customer
                // pays for, is spent; the minute, which protects the service, keeps it.
                state.limiter.give_back(&subject, &decision, GiveBack::Day).await;
                decision = decision.given_back(GiveBack::Day);
            }
            response
        }
        (Ok(None), None) => within((deadline, limit), respond(&next, req)).await,
        (Err(err), None) => err.into_response(),
    };
    // An admitted inquiry shows the key's own windows, as its body does.
    rate_limit::set_headers(response.headers_mut(), windows.as_ref().unwrap_or(&decision));
    Ok(response)
}

/// `answer`, or a 503 when it is not ready by `deadline`, the end of the request's `limit`
/// (`ApiConfig::request_timeout`).
async fn within(
    (deadline, limit): (tokio::time::Instant, std::time::Duration),
    answer: impl std::future::Future<Output = Response>,
) -> Response {
    tokio::time::timeout_at(deadline, answer).await.unwrap_or_else(|_| timed_out(limit))
}

/// The 503 of a request not answered within `limit`.
fn timed_out(limit: std::time::Duration) -> Response {
    tracing::warn!(timeout_ms = limit.as_millis(), "request timed out");
    let message =
        format!("the request was not answered within {} ms; retry later", limit.as_millis());
    ApiError::new(ErrorCode::ServiceUnavailable, message)
        .with_header(header::RETRY_AFTER, HeaderValue::from_static("1"))
        .into_response()
}

/// What the guard decided about a request.
struct Decided {
    /// The live key, none, or the failure to look it up.
    key: Result<Option<ApiKey>, ApiError>,
    /// The decision whose headers the response carries.
    decision: Decision,
    /// The 429 (or 503) that answers the request instead of the operation.
    refusal: Option<ApiError>,
    /// The key's own windows, for an admitted inquiry.
    windows: Option<Decision>,
    /// Whether the decision is a key's rather than the client address's.
    for_key: bool,
    /// Whom the decision counted the request against.
    subject: Subject,
}

impl Decided {
    /// The decision of `subject`, refused or not.
    fn of(key: Result<Option<ApiKey>, ApiError>, subject: &Subject, decision: Decision) -> Self {
        let refusal = rate_limit::refusal(subject, &decision);
        let for_key = matches!(subject, Subject::Key(_) | Subject::Inquiry(_));
        Self { key, decision, refusal, windows: None, for_key, subject: subject.clone() }
    }

    fn outcome(&self) -> Outcome {
        if self.key.is_err() {
            return Outcome::KeyStoreUnavailable;
        }
        match (self.for_key, self.decision.verdict) {
            (_, Verdict::Admitted) => Outcome::Admitted,
            (_, Verdict::Unavailable { .. }) => Outcome::StoreUnavailable,
            (true, Verdict::Limited { .. }) => Outcome::Limited,
            (true, Verdict::Suspended { .. }) => Outcome::Suspended,
            (false, _) => Outcome::AddressLimited,
        }
    }
}

/// Finds the caller and counts the request (see [`guard`]).
async fn decide(state: &AppState, req: &Request) -> Decided {
    let address = rate_limit::address_subject(state, req);
    let per_address = state.limiter.policy().per_address;
    if auth::is_repeated(req.headers()) {
        // Counted as a request without a valid key: it acts for nobody.
        let decision = state.limiter.check(&address, per_address).await;
        let mut decided = Decided::of(Ok(None), &address, decision);
        decided.refusal.get_or_insert_with(|| {
            ApiError::invalid_request(
                "Authorization must be sent once: this request has Authorization headers that \
                 differ",
            )
        });
        return decided;
    }
    let Some(token) = auth::bearer_token(req.headers()) else {
        let decision = state.limiter.check(&address, per_address).await;
        return Decided::of(Ok(None), &address, decision);
    };
    let key = match state.keys.recognise(token).await {
        Recognised::Known(Some(key)) => {
            // Only looked at: a live key spends nothing of its address's quota.
            let guessing = state.limiter.peek(&address, per_address).await;
            if !guessing.is_admitted() {
                return Decided::of(Ok(None), &address, guessing);
            }
            key
        }
        Recognised::Known(None) => {
            let decision = state.limiter.check(&address, per_address).await;
            return Decided::of(Ok(None), &address, decision);
        }
        Recognised::ToLookUp(presented) => {
            let slot = state.limiter.check(&address, per_address).await;
            if !slot.is_admitted() {
                return Decided::of(Ok(None), &address, slot);
            }
            match auth::look_up(&state.keys, &presented).await {
                Ok(Some(key)) => {
                    state.limiter.give_back(&address, &slot, GiveBack::Both).await;
                    key
                }
                Ok(None) => return Decided::of(Ok(None), &address, slot),
                Err(err) => {
                    // Not a guess: the address gets its slot back, and the request is
                    // counted against nothing.
                    state.limiter.give_back(&address, &slot, GiveBack::Both).await;
                    return Decided::of(Err(err), &address, slot.as_it_stands());
                }
            }
        }
    };
    let (subject, quota) = if is_inquiry(req) {
        // Asking for the key's own limits counts apart, and spends none of its quota.
        (Subject::Inquiry(key.owner.clone()), INQUIRY_QUOTA)
    } else {
        // A key and the key that replaced it share one quota: they are one rotation chain.
        (Subject::Key(key.owner.clone()), key.plan.quota())
    };
    let decision = state.limiter.check(&subject, quota).await;
    let windows = match subject {
        Subject::Inquiry(_) if decision.is_admitted() => {
            let own = Subject::Key(key.owner.clone());
            Some(state.limiter.peek(&own, key.plan.quota()).await.as_it_stands())
        }
        _ => None,
    };
    Decided { windows, ..Decided::of(Ok(Some(key)), &subject, decision) }
}

/// Whether the request asks for the caller's own rate limit (`getRateLimit`).
fn is_inquiry(req: &Request) -> bool {
    operation(req, req.method()).is_some_and(Operation::is_inquiry)
}

/// Whether the operation `req` reaches needs a `write` key (what is not an operation, an
/// unknown address, is a 404 or 405 to every key). Looked up for `read` keys only.
fn needs_write(req: &Request) -> bool {
    operation(req, req.method()).is_some_and(|op| op.scope == Scope::Write)
}
