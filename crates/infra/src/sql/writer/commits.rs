//! The writer's count of the transactions it ended: the signal the read cache
//! (`pets/read_cache.rs`) keeps its answers under.

use std::sync::atomic::{AtomicU64, Ordering};

/// How many transactions the writer has ended, committed or not.
#[derive(Default)]
pub(crate) struct Commits(AtomicU64);

impl Commits {
    /// Called by the writer once a transaction has ended, before it answers its callers.
    pub(crate) fn ended(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }

    /// How many transactions have ended so far.
    pub(crate) fn now(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
}
