//! The ambiguous failure, on purpose: with `memory://?drop-answer-every=N`, every Nth write
//! that stores something loses its answer. The connection closes without one, as when a
//! network drops a response, so that a client can test that its retry with the same
//! `Idempotency-Key` gets the stored answer (`Idempotent-Replayed: true`) and adds nothing.
//! `app` adds the layer only when the option asks for it: other runs never pass through it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use poem::http::Method;
use poem::{Request, Response};

use super::{Next, respond};
use crate::idempotency::IDEMPOTENT_REPLAYED;
use crate::server::DropAnswer;

/// Which stored writes lose their answer: every Nth, counted from the start.
#[derive(Debug)]
pub struct AnswerDrops {
    every: Option<u64>,
    writes: AtomicU64,
}

impl AnswerDrops {
    /// Every `every`th stored write loses its answer; `None` for none.
    pub fn new(every: Option<u64>) -> Self {
        Self { every, writes: AtomicU64::new(0) }
    }

    /// Whether any answer is dropped.
    pub fn is_enabled(&self) -> bool {
        self.every.is_some_and(|every| every > 0)
    }

    /// Counts a stored write; whether its answer is dropped.
    fn drops_next(&self) -> bool {
        let Some(every) = self.every.filter(|every| *every > 0) else {
            return false;
        };
        (self.writes.fetch_add(1, Ordering::Relaxed) + 1).is_multiple_of(every)
    }
}

/// The layer, for `Next::with_if`: marks, as `drops` counts them, the answers of writes
/// that stored something (a success, not a replay) for the connection to drop.
pub fn drop_answers(drops: Arc<AnswerDrops>) -> impl FnOnce(Next) -> Next {
    move |ep| ep.layer(move |ep, req| answer_or_drop(Arc::clone(&drops), ep, req))
}

async fn answer_or_drop(
    drops: Arc<AnswerDrops>,
    ep: Arc<Next>,
    req: Box<Request>,
) -> poem::Result<Response> {
    let writes = !matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    let mut response = respond(ep.as_ref(), req).await;
    let stored =
        response.status().is_success() && !response.headers().contains_key(IDEMPOTENT_REPLAYED);
    if writes && stored && drops.drops_next() {
        response.extensions_mut().insert(DropAnswer);
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_nth_write_is_dropped() {
        let drops = AnswerDrops::new(Some(3));
        let seen: Vec<bool> = (0..6).map(|_| drops.drops_next()).collect();
        assert_eq!(seen, [false, false, true, false, false, true]);
        assert!(!AnswerDrops::new(None).drops_next());
    }
}
