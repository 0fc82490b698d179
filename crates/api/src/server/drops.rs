//! The ambiguous failure, on purpose: with `memory://?drop-answer-every=N`, every Nth write
//! that stores something loses its answer. The connection closes without one, as when a
//! network drops a response, so that a client can test that its retry with the same
//! `Idempotency-Key` gets the stored answer (`Idempotent-Replayed: true`) and adds nothing.
//! Only a server given the option ([`super::Server::dropping_answers`]) counts: others never
//! look at an answer.

use std::sync::atomic::{AtomicU64, Ordering};

use poem::Response;
use poem::http::Method;

use crate::idempotency::IDEMPOTENT_REPLAYED;

/// Which stored writes lose their answer: every Nth, counted from the start.
#[derive(Debug)]
pub(super) struct AnswerDrops {
    every: u64,
    writes: AtomicU64,
}

impl AnswerDrops {
    /// Every `every`th stored write loses its answer; `None` for none.
    pub(super) fn new(every: Option<u64>) -> Option<Self> {
        let every = every.filter(|every| *every > 0)?;
        Some(Self { every, writes: AtomicU64::new(0) })
    }

    /// Whether the `response` to a request of `method` is to be dropped: counts it if it
    /// stored something (a write's success, not a replay).
    pub(super) fn drops(&self, method: &Method, response: &Response) -> bool {
        let writes = !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
        let stored =
            response.status().is_success() && !response.headers().contains_key(IDEMPOTENT_REPLAYED);
        writes && stored && self.drops_next()
    }

    /// Counts a stored write; whether its answer is dropped.
    fn drops_next(&self) -> bool {
        (self.writes.fetch_add(1, Ordering::Relaxed) + 1).is_multiple_of(self.every)
    }
}

#[cfg(test)]
mod tests {
    use poem::http::StatusCode;

    use super::*;

    #[test]
    fn every_nth_stored_write_is_dropped() {
        let drops = AnswerDrops::new(Some(3)).expect("enabled");
        let created = || Response::builder().status(StatusCode::CREATED).finish();
        let seen: Vec<bool> = (0..6).map(|_| drops.drops(&Method::POST, &created())).collect();
        assert_eq!(seen, [false, false, true, false, false, true]);
        assert!(AnswerDrops::new(None).is_none() && AnswerDrops::new(Some(0)).is_none());
    }

    #[test]
    fn reads_refusals_and_replays_are_never_dropped_nor_counted() {
        let drops = AnswerDrops::new(Some(1)).expect("enabled");
        let ok = Response::builder().status(StatusCode::OK).finish();
        let refused = Response::builder().status(StatusCode::BAD_REQUEST).finish();
        let replay = Response::builder()
            .status(StatusCode::CREATED)
            .header(IDEMPOTENT_REPLAYED, "true")
            .finish();
        assert!(!drops.drops(&Method::GET, &ok));
        assert!(!drops.drops(&Method::POST, &refused));
        assert!(!drops.drops(&Method::POST, &replay));
        assert!(drops.drops(&Method::PATCH, &ok));
    }
}
