//! The failures that come after a write is stored, on purpose, for harnesses
//! (`memory://?drop-answer-every=N&stored-then-unavailable-every=N&latency-after-store-ms=N`):
//! the answer of a stored write is dropped (the connection closes without one, as when a
//! network drops a response), replaced by a 503 (as when a commit's acknowledgement is lost),
//! or held back a while (as a slow network would). A client tests that its retry with the same
//! `Idempotency-Key` gets the stored answer (`Idempotent-Replayed: true`) and adds nothing.
//! Only an app given such faults ([`AnswerFaults::around`]) looks at an answer.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use animal_store_api::IDEMPOTENT_REPLAYED;
use animal_store_api::error::{ApiError, ErrorCode};
use animal_store_api::server::DropAnswer;
use poem::endpoint::BoxEndpoint;
use poem::http::{HeaderValue, Method, header};
use poem::{Endpoint, EndpointExt as _, IntoResponse as _, Response};

/// What happens to the answers of stored writes: the writes a harness counts are those of a
/// method other than `GET`, `HEAD` and `OPTIONS` answered with a 2xx that is not a replay,
/// one count for both faults that count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AnswerFaults {
    /// Every Nth stored write is not answered: its connection closes.
    pub drop_every: Option<u64>,
    /// Every Nth stored write (unless it is dropped) is answered `503 service_unavailable`.
    pub unavailable_every: Option<u64>,
    /// Every stored write's answer waits this long before it is sent.
    pub delay: Duration,
}

impl AnswerFaults {
    /// `app`, the answers of its stored writes given these faults.
    pub fn around(self, app: BoxEndpoint<'static>) -> BoxEndpoint<'static> {
        let Some(counter) = AnswerCounter::new(self).map(Arc::new) else { return app };
        app.around(move |app, req| {
            let counter = Arc::clone(&counter);
            async move {
                let method = req.method().clone();
                let mut response = app.get_response(req).await;
                match counter.outcome(&method, &response).await {
                    AnswerOutcome::Sent => {}
                    AnswerOutcome::Dropped => drop(response.extensions_mut().insert(DropAnswer)),
                    AnswerOutcome::Unavailable => response = unavailable(&response),
                }
                Ok(response)
            }
        })
        .boxed()
    }
}

/// What becomes of one answer.
#[derive(Debug, PartialEq, Eq)]
enum AnswerOutcome {
    /// Sent as it is.
    Sent,
    /// Not sent: the connection closes.
    Dropped,
    /// Replaced by a 503.
    Unavailable,
}

/// The faults of a server, and its count of stored writes.
#[derive(Debug)]
struct AnswerCounter {
    faults: AnswerFaults,
    writes: AtomicU64,
}

impl AnswerCounter {
    /// A count for `faults`; `None` when they ask for nothing.
    fn new(faults: AnswerFaults) -> Option<Self> {
        (faults != AnswerFaults::default()).then(|| Self { faults, writes: AtomicU64::new(0) })
    }

    /// What becomes of the `response` to a request of `method`, after the delay it waits;
    /// counts it if it stored something.
    async fn outcome(&self, method: &Method, response: &Response) -> AnswerOutcome {
        let writes = !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
        let stored =
            response.status().is_success() && !response.headers().contains_key(IDEMPOTENT_REPLAYED);
        if !(writes && stored) {
            return AnswerOutcome::Sent;
        }
        if !self.faults.delay.is_zero() {
            tokio::time::sleep(self.faults.delay).await;
        }
        let write = self.writes.fetch_add(1, Ordering::Relaxed) + 1;
        let every = |n: Option<u64>| n.is_some_and(|n| n > 0 && write.is_multiple_of(n));
        if every(self.faults.drop_every) {
            AnswerOutcome::Dropped
        } else if every(self.faults.unavailable_every) {
            AnswerOutcome::Unavailable
        } else {
            AnswerOutcome::Sent
        }
    }
}

/// The 503 that replaces the answer `stored`: the Error of an unavailable store, with
/// `stored`'s request id, rate-limit and cache headers kept, and nothing of what it carried.
fn unavailable(stored: &Response) -> Response {
    let mut headers = stored.headers().clone();
    let carried = [header::CONTENT_TYPE, header::CONTENT_LENGTH, header::CONTENT_ENCODING];
    for name in carried.into_iter().chain([header::ETAG, header::LOCATION, header::VARY]) {
        headers.remove(name);
    }
    let error = ApiError::new(
        ErrorCode::ServiceUnavailable,
        "the store is temporarily unavailable; retry later",
    )
    .with_header(header::RETRY_AFTER, HeaderValue::from_static("1"));
    let mut response = error.into_response();
    for (name, value) in &headers {
        response.headers_mut().entry(name).or_insert_with(|| value.clone());
    }
    response
}

#[cfg(test)]
mod tests {
    use poem::http::StatusCode;

    use super::*;

    fn created() -> Response {
        Response::builder().status(StatusCode::CREATED).header("x-request-id", "r1").finish()
    }

    #[tokio::test]
    async fn every_nth_stored_write_is_dropped_or_unavailable() {
        use AnswerOutcome::{Dropped, Sent, Unavailable};
        let faults =
            AnswerFaults { drop_every: Some(3), unavailable_every: Some(2), ..Default::default() };
        let counter = AnswerCounter::new(faults).expect("enabled");
        let mut seen = Vec::new();
        for _ in 0..6 {
            seen.push(counter.outcome(&Method::POST, &created()).await);
        }
        assert_eq!(seen, [Sent, Unavailable, Dropped, Unavailable, Sent, Dropped]);
        assert!(AnswerCounter::new(AnswerFaults::default()).is_none());
    }

    #[tokio::test]
    async fn reads_refusals_and_replays_are_never_counted() {
        let faults = AnswerFaults { drop_every: Some(1), ..Default::default() };
        let counter = AnswerCounter::new(faults).expect("enabled");
        let ok = Response::builder().status(StatusCode::OK).finish();
        let refused = Response::builder().status(StatusCode::BAD_REQUEST).finish();
        let replay = Response::builder()
            .status(StatusCode::CREATED)
            .header(IDEMPOTENT_REPLAYED, "true")
            .finish();
        assert_eq!(counter.outcome(&Method::GET, &ok).await, AnswerOutcome::Sent);
        assert_eq!(counter.outcome(&Method::POST, &refused).await, AnswerOutcome::Sent);
        assert_eq!(counter.outcome(&Method::POST, &replay).await, AnswerOutcome::Sent);
        assert_eq!(counter.outcome(&Method::PATCH, &ok).await, AnswerOutcome::Dropped);
    }

    #[test]
    fn the_503_keeps_the_request_id_and_nothing_of_the_answer() {
        let stored = Response::builder()
            .status(StatusCode::CREATED)
            .header("x-request-id", "r1")
            .header(header::LOCATION, "/v1/pets/1")
            .header(header::ETAG, "\"t\"")
            .body("{\"id\":1}");
        let answer = unavailable(&stored);
        assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(answer.headers()["x-request-id"], "r1");
        assert_eq!(answer.headers()[header::RETRY_AFTER], "1");
        assert!(answer.headers().get(header::LOCATION).is_none());
        assert!(answer.headers().get(header::ETAG).is_none());
    }
}
