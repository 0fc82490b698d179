//! The delivery worker's share of the database, which the requests' writes share.

/// The delivery worker's share of the database while requests write events (the last
/// event's id moved since the worker last looked): after a write of the worker's that took
/// `t` (its wait for SQLite's one writer included), its next write waits until
/// `(WORKER_SHARE - 1) * t` has passed. Its writes, one at a time, then take at most a
/// quarter of the time, and less while the requests keep the database busy: a write's median
/// stays where it is however many deliveries wait. With no event written for
/// [`WRITES_QUIET`], the worker writes at full speed.
pub(crate) const WORKER_SHARE: u32 = 4;
/// The most events one fan-out takes on SQLite while requests write events: a short
/// transaction, which a request's write waits for when it comes in the middle of it.
pub(crate) const FAN_OUT_WHILE_WRITING: usize = 32;
/// How long after it last saw a new event the worker keeps to its share.
const WRITES_QUIET: std::time::Duration = std::time::Duration::from_millis(250);

/// When the delivery worker may write next, the last event it saw, and when that
/// last changed.
#[derive(Debug)]
pub(crate) struct WorkerShare {
    pub(crate) next: tokio::time::Instant,
    pub(crate) last_event: Option<i64>,
    pub(crate) events_seen: Option<tokio::time::Instant>,
}

impl WorkerShare {
    /// Whether requests write events now: the worker keeps to its share.
    pub(crate) fn writing(&self) -> bool {
        self.events_seen.is_some_and(|seen| seen.elapsed() < WRITES_QUIET)
    }
}

impl Default for WorkerShare {
    fn default() -> Self {
        Self { next: tokio::time::Instant::now(), last_event: None, events_seen: None }
    }
}
