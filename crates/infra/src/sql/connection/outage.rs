//! Logging a run of storage failures once, not once per request.
//!
//! A full disk or a database that went away fails every request until it is fixed: thousands
//! of identical lines would bury the one that says what happened. An [`Outage`] logs the
//! first failure of a run with its cause, counts the ones after it, and logs once more when
//! an operation succeeds again.

use std::fmt::Display;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::sql::connection::failure::FailureKind;

/// The state of one kind of operation (reads, writes) of one database.
pub(crate) struct Outage {
    /// What fails, for the log: "reads", "writes".
    what: &'static str,
    /// Whether a run of failures is under way: lets a success skip the lock.
    failing: AtomicBool,
    episode: Mutex<Option<Episode>>,
}

struct Episode {
    since: Instant,
    failures: u64,
}

impl Outage {
    pub(crate) fn new(what: &'static str) -> Self {
        Self { what, failing: AtomicBool::new(false), episode: Mutex::new(None) }
    }

    /// Records a failed operation, which held `operations` callers' work. The first failure
    /// of a run is logged with its cause: at `WARN` when retrying may succeed (a full disk, a
    /// lost connection), at `ERROR` otherwise.
    pub(crate) fn failed(&self, kind: FailureKind, err: &dyn Display, operations: usize) {
        let mut episode = self.episode.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(episode) = &mut *episode {
            episode.failures += 1;
            return;
        }
        *episode = Some(Episode { since: Instant::now(), failures: 1 });
        self.failing.store(true, Ordering::Release);
        let what = self.what;
        if kind == FailureKind::Unavailable {
            tracing::warn!(error = %err, operations, "database {what} fail; answering 503 until they succeed again");
        } else {
            tracing::error!(error = %err, operations, "database {what} fail");
        }
    }

    /// Records a successful operation; ends a run of failures, and says so, if one was under
    /// way.
    pub(crate) fn passed(&self) {
        if !self.failing.load(Ordering::Acquire) {
            return;
        }
        let mut episode = self.episode.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(Episode { since, failures }) = episode.take() {
            self.failing.store(false, Ordering::Release);
            let what = self.what;
            let lasted_ms = u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX);
            tracing::info!(failures, lasted_ms, "database {what} succeed again");
        }
    }
}
