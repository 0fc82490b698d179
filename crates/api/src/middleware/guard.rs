//! Layer 6: authentication and rate limiting, and the rate-limit headers on every response
//! (`docs/api.md#plans-and-rate-limits`).

use std::sync::Arc;

use animal_store_domain::{INQUIRY_QUOTA, Subject, Verdict};
use poem::{Endpoint, IntoResponse, Request, Response};

use super::{respond, state};
use crate::error::ApiError;
use crate::operations::{GET_RATE_LIMIT, KeyWindows};
use crate::telemetry::{self, Outcome};
use crate::{auth, rate_limit};

/// Layer 6: finds the caller's key, counts the request against it (or against the client
/// address without one), refuses it with 429 when over the limit, and puts the rate-limit
/// headers on whatever response comes back.
///
/// An address over its limit for requests without a valid key gets 429 for any request that
/// carries a key, before the key is even looked up: someone guessing keys learns nothing
/// more, not even when a guess is right, until the address's window resets.
pub async fn guard<E: Endpoint>(ep: Arc<E>, mut req: Request) -> poem::Result<Response> {
    // The probes and the metrics are outside the API: never counted, never refused.
    if crate::probes::is_for_operators(req.uri().path()) {
        return Ok(respond(ep.as_ref(), req).await);
    }
    let Some(state) = state(&req) else {
        tracing::error!("a request reached the guard without the services: see `app`");
        return Ok(ApiError::internal().into_response());
    };
    let state = &state;
    let address = rate_limit::address_subject(state, &req);
    let inquiry = is_inquiry(&req);
    if auth::bearer_token(req.headers()).is_some() {
        let guessing = state.limiter.peek(&address, state.limiter.policy().per_address).await;
        if let Some(refusal) = rate_limit::refusal(&address, &guessing) {
            telemetry::decided(Outcome::AddressLimited);
            let mut response = refusal.into_response();
            rate_limit::set_headers(response.headers_mut(), &guessing);
            return Ok(response);
        }
    }
    // The key's lookup and the decision get the request timeout too: a database that stalls
    // rather than refuses must not hold the request past it.
    let limit = state.config.request_timeout;
    let decided = tokio::time::timeout(limit, async {
        let key = auth::resolve_key(&state.keys, &mut req).await;
        let live = key.as_ref().ok().and_then(Option::as_ref);
        let (subject, quota) = match live {
            // Asking for the key's own limits counts apart, and spends none of its quota.
            Some(key) if inquiry => (Subject::Inquiry(key.lineage.clone()), INQUIRY_QUOTA),
            // A key and the key that replaced it share one quota: they are one line.
            Some(key) => (Subject::Key(key.lineage.clone()), key.plan.quota()),
            None => (address, state.limiter.policy().per_address),
        };
        let decision = state.limiter.check(&subject, quota).await;
        let windows = match live {
            Some(key) if inquiry && decision.verdict == Verdict::Admitted => {
                let subject = Subject::Key(key.lineage.clone());
                Some(state.limiter.peek(&subject, key.plan.quota()).await.as_it_stands())
            }
            _ => None,
        };
        (key, subject, decision, windows)
    })
    .await;
    let Ok((key, subject, decision, windows)) = decided else {
        return Ok(super::timeout::timed_out(limit));
    };
    telemetry::decided(match (&subject, decision.verdict) {
        (_, Verdict::Admitted) => Outcome::Admitted,
        (_, Verdict::Unavailable { .. }) => Outcome::StoreUnavailable,
        (Subject::Key(_) | Subject::Inquiry(_), Verdict::Limited { .. }) => Outcome::Limited,
        (Subject::Key(_) | Subject::Inquiry(_), Verdict::Suspended { .. }) => Outcome::Suspended,
        (Subject::Address(_) | Subject::Named(_), _) => Outcome::AddressLimited,
    });
    if let Some(windows) = windows {
        req.extensions_mut().insert(KeyWindows(windows));
    }
    let mut response = match (key, rate_limit::refusal(&subject, &decision)) {
        (Err(err), _) => err.into_response(),
        (Ok(_), Some(refusal)) => refusal.into_response(),
        (Ok(_), None) => respond(ep.as_ref(), req).await,
    };
    // An admitted inquiry shows the key's own windows, as its body does.
    rate_limit::set_headers(response.headers_mut(), windows.as_ref().unwrap_or(&decision));
    Ok(response)
}

/// Whether the request asks for the caller's own rate limit (`getRateLimit`).
fn is_inquiry(req: &Request) -> bool {
    super::routes(req).is_some_and(|routes| {
        routes
            .find(req.uri().path())
            .and_then(|route| route.operation(req.method()))
            .is_some_and(|operation| operation == GET_RATE_LIMIT)
    })
}
