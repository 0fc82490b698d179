//! SQLite reads on the caller's thread, or on threads of their own when they must wait.
//!
//! A read through sqlx-sqlite hops between threads several times: the request's task hands
//! the query to the connection's worker thread, which hands each row back. Those hops, not
//! SQLite, were most of the cost of a page (see docs/benchmarks.md). Here reads use
//! rusqlite's connections directly, SeaORM's statements bound by `sea-query-rusqlite`:
//!
//! - a read first takes a free connection of a few kept for the callers' threads and runs
//!   there, at once: an indexed page of the pets costs SQLite a few microseconds, less than
//!   waking another thread would. Those connections never wait for a lock (`busy_timeout`
//!   0), so a caller's thread, a runtime worker, is never held waiting;
//! - a read that finds no connection free, or that met a lock (a WAL recovery, an
//!   operator's `VACUUM`), goes to a few threads that each own a connection which waits
//!   for locks, and take reads from one queue: one hop there and one back ([`queue`]).
//!
//! The connections are read-only (`PRAGMA query_only`): every write still goes through the
//! writer (see `writer.rs`). Under WAL they read beside it without waiting.
//!
//! A connection for the callers' threads keeps its read transaction, its snapshot, from one
//! read to the next while nothing was committed: see [`snapshots`](super::snapshots). The
//! reads that ask for it are answered from one [`Memo`] while nothing was committed.

use std::hash::Hash;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::Sender;
use sea_orm::{DbErr, RuntimeErr};
use sea_query_rusqlite::RusqliteValue;
use sea_query_rusqlite::rusqlite::{self, Connection, OpenFlags, ToSql};
use tokio::sync::oneshot;

use super::connector::SQLITE_READER_CACHE_KIB;
use super::memo::Memo;
use super::snapshots::{Inline, SNAPSHOT_AGE, retire};
use super::wal_index::{Header, WalIndex};
use queue::{Job, Message};

/// A read: runs on whichever connection takes it, at most twice (on the caller's thread,
/// then on a reader thread when it met a lock there).
pub(super) trait Read<T>: Fn(&Connection) -> rusqlite::Result<T> + Send + 'static {}

impl<T, F: Fn(&Connection) -> rusqlite::Result<T> + Send + 'static> Read<T> for F {}

/// Read-only connections to one SQLite file: some for the callers' own threads, and threads
/// that each own one.
pub(super) struct ReaderThreads {
    /// The connections a read takes on its caller's thread when one is free; `None` once
    /// closed.
    inline: Arc<[Mutex<Option<Inline>>]>,
    /// The database's `-shm` file, whose header tells whether a kept snapshot is still the
    /// newest; `None` when it could not be opened (the connections then keep none).
    wal_index: WalIndex,
    /// The answers of reads, for every connection, while the header read before them lasts.
    memo: Memo,
    /// The writer runs a transaction: the connections keep no snapshot meanwhile.
    writing: AtomicBool,
    /// How long a snapshot is kept at most: [`SNAPSHOT_AGE`].
    snapshot_age: Duration,
    jobs: Sender<Message>,
    closed: AtomicBool,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl ReaderThreads {
    /// Opens `count` connections for the callers' threads, and starts `count` threads, each
    /// with its own connection to the file at `path`, once every connection is open.
    ///
    /// # Errors
    ///
    /// The first connection that cannot be opened; the threads started are stopped.
    pub(super) fn start(path: &Path, count: usize) -> Result<Self, DbErr> {
        Self::start_with(path, count, SNAPSHOT_AGE)
    }

    /// [`ReaderThreads::start`], with snapshots kept `snapshot_age` at most.
    fn start_with(path: &Path, count: usize, snapshot_age: Duration) -> Result<Self, DbErr> {
        let connections = (0..count)
            .map(|_| open_connection(path, Duration::ZERO))
            .collect::<Result<Vec<_>, _>>()?;
        let wal_index = WalIndex::open(path, connections.first());
        let inline: Arc<[_]> =
            connections.into_iter().map(|c| Mutex::new(Some(Inline::new(c)))).collect();
        let (jobs, queue) = crossbeam_channel::unbounded();
        let readers = Self {
            inline,
            wal_index,
            memo: Memo::default(),
            writing: AtomicBool::new(false),
            snapshot_age,
            jobs,
            closed: AtomicBool::new(false),
            threads: Mutex::default(),
        };
        for index in 0..count {
            // The first thread also ends the snapshots kept too long by idle connections.
            let sweep = (index == 0).then(|| (Arc::clone(&readers.inline), snapshot_age));
            let (thread, opened) = queue::spawn(index, path, queue.clone(), sweep)?;
            readers.lock_threads().push(thread);
            opened?;
        }
        Ok(readers)
    }

    /// Runs `read` on the caller's thread if a connection for it is free and no lock is in
    /// the way, otherwise on one of the threads, and waits for its result there. A read
    /// whose caller stopped waiting before a thread took it is skipped.
    pub(super) async fn run<T: Send + 'static>(&self, read: impl Read<T>) -> Result<T, DbErr> {
        self.run_at(HeaderAt::Taken, read, |_, _| {}).await
    }

    /// [`run`](Self::run) for a read of rows, each as a `T` or as why it is not one, whose
    /// answer names no more than `key` does: the [`Memo`] gives the answer it keeps for `key`
    /// when the WAL index's header is still the one read before it, and keeps the answer
    /// read on a connection for the callers' threads when every row is a `T` and the read
    /// missed lately already (see [`memo`](super::memo)).
    pub(super) async fn run_memoized<K, T, E>(
        &self,
        key: K,
        read: impl Read<Vec<Result<T, E>>>,
    ) -> Result<Vec<Result<T, E>>, DbErr>
    where
        K: Hash + Eq + Send + 'static,
        T: Clone + Send + Sync + 'static,
        E: Send + 'static,
    {
        let header = self.wal_index.header();
        let slot = self.memo.slot(&key);
        if let Some(header) = &header
            && !self.closed.load(Ordering::Acquire)
            && let Some(rows) = self.memo.answer::<K, T>(header, slot, &key)
        {
            return Ok(rows.iter().cloned().map(Ok).collect());
        }
        let remember = |header, rows: &Vec<Result<T, E>>| {
            if self.closed.load(Ordering::Acquire) || !self.memo.missed(slot) {
                return;
            }
            let whole: Option<Arc<[T]>> =
                rows.iter().map(|row| row.as_ref().ok().cloned()).collect();
            if let Some(whole) = whole {
                let is_newest = || self.wal_index.header() == Some(header);
                self.memo.keep(header, slot, key, whole, is_newest);
            }
        };
        self.run_at(HeaderAt::Before(header), read, remember).await
    }

    /// [`run`](Self::run), with the WAL index's header read as `header` says, and the answer
    /// read on a connection for the callers' threads given to `remember`.
    async fn run_at<T: Send + 'static>(
        &self,
        header: HeaderAt,
        read: impl Read<T>,
        remember: impl FnOnce(Header, &T) + Send,
    ) -> Result<T, DbErr> {
        if self.closed.load(Ordering::Acquire) {
            return Err(closed());
        }
        if let Some(done) = self.run_here(header, &read, remember) {
            return done;
        }
        let (done, result) = oneshot::channel();
        let job: Job = Box::new(move |connection| {
            if !done.is_closed() {
                let _ = done.send(read(connection).map_err(internal));
            }
        });
        self.jobs.send(Message::Run(job)).map_err(|_| closed())?;
        // The job is dropped unanswered when its thread panicked or the threads stopped.
        result.await.map_err(|_| internal("the read did not complete"))?
    }

    /// Runs `read` on the first free connection for the callers' threads, on its kept
    /// snapshot, and gives its answer to `remember` with the WAL index's header read before
    /// it (the answer was read there or after); `None` when no connection is free, or when
    /// SQLite would have had to wait for a lock.
    fn run_here<T>(
        &self,
        header: HeaderAt,
        read: &impl Read<T>,
        remember: impl FnOnce(Header, &T),
    ) -> Option<Result<T, DbErr>> {
        let mut slot = self
            .inline
            .iter()
            .find_map(|slot| slot.try_lock().ok().filter(|slot| slot.is_some()))?;
        let inline = slot.as_mut()?;
        let writing = self.writing.load(Ordering::SeqCst);
        let header = match header {
            HeaderAt::Before(header) => header,
            HeaderAt::Taken if writing => None,
            HeaderAt::Taken => self.wal_index.header(),
        };
        let kept = header.filter(|_| !writing);
        if let Err(err) = inline.snapshot(kept, self.snapshot_age) {
            // The reader threads take the reads this connection would have.
            tracing::error!(error = %err, "a database reader could not start a snapshot");
            retire(&mut slot);
            return None;
        }
        let ran = std::panic::catch_unwind(AssertUnwindSafe(|| read(&inline.connection)));
        let answer = match ran {
            Ok(Ok(rows)) => {
                drop(slot);
                if let Some(header) = header {
                    remember(header, &rows);
                }
                return Some(Ok(rows));
            }
            Ok(Err(err)) => (!is_busy(&err)).then(|| Err(internal(err))),
            Err(_) => {
                tracing::error!("a database read panicked");
                Some(Err(internal("the read did not complete")))
            }
        };
        // A failed statement may leave the transaction in any state: start afresh.
        if !inline.release() {
            retire(&mut slot);
        }
        answer
    }

    /// The writer is about to start a transaction: ends every kept snapshot (waiting for a
    /// read that runs on one), and keeps none until [`ReaderThreads::writes_end`].
    pub(super) fn writes_start(&self) {
        self.writing.store(true, Ordering::SeqCst);
        for slot in self.inline.iter() {
            let mut slot = lock(slot);
            if slot.as_mut().is_some_and(|inline| !inline.release()) {
                // Still inside its transaction: it would read an old snapshot from now on.
                retire(&mut slot);
            }
        }
    }

    /// The writer's transaction has ended, committed or not: snapshots are kept again.
    pub(super) fn writes_end(&self) {
        self.writing.store(false, Ordering::SeqCst);
    }

    /// Runs `statement`, built for SQLite by SeaORM, each row read by `row`. Each
    /// connection prepares a statement once and keeps it for the next read of the same SQL.
    pub(super) async fn query_all<T: Send + 'static>(
        &self,
        statement: sea_orm::Statement,
        row: fn(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>, DbErr> {
        let sea_orm::Statement { sql, values, .. } = statement;
        let values: Vec<RusqliteValue> =
            values.map(|v| v.0).unwrap_or_default().into_iter().map(RusqliteValue).collect();
        self.run(rows_of(sql, values, row)).await
    }

    /// Closes the callers' connections (a read on one is waited for), lets the reads
    /// already queued finish, then stops the threads, which close theirs. Later reads fail.
    pub(super) fn stop(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        for slot in self.inline.iter() {
            retire(&mut lock(slot));
        }
        self.memo.clear();
        let threads = std::mem::take(&mut *self.lock_threads());
        for _ in &threads {
            let _ = self.jobs.send(Message::Stop);
        }
        for thread in threads {
            let _ = thread.join();
        }
    }

    fn lock_threads(&self) -> MutexGuard<'_, Vec<JoinHandle<()>>> {
        lock(&self.threads)
    }
}

/// The read of the rows of `sql`, with `values` bound in order, each read by `row`. Each
/// connection prepares a statement once and keeps it for the next read of the same SQL.
pub(super) fn rows_of<T: 'static, V: ToSql + Send + 'static>(
    sql: impl AsRef<str> + Send + 'static,
    values: Vec<V>,
    row: fn(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> impl Read<Vec<T>> {
    move |connection| {
        let mut prepared = connection.prepare_cached(sql.as_ref())?;
        let rows = prepared.query_map(rusqlite::params_from_iter(&values), row)?;
        rows.collect()
    }
}

/// When a read reads the WAL index's header.
#[derive(Clone, Copy)]
enum HeaderAt {
    /// Before it, as this: a memoized read looks its answer up under it first.
    Before(Option<Header>),
    /// Once a connection for the callers' threads was taken, for its snapshot, and not
    /// while the writer writes (no snapshot is kept then).
    Taken,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether `err` is SQLite's answer that a lock is held (`SQLITE_BUSY`, `SQLITE_LOCKED`).
fn is_busy(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

impl Drop for ReaderThreads {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A read-only connection to the file at `path` that waits `busy_timeout` for a lock before
/// it fails. The file must exist: the writer creates it and migrates it first.
pub(super) fn open_connection(path: &Path, busy_timeout: Duration) -> Result<Connection, DbErr> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let connection = Connection::open_with_flags(path, flags).map_err(internal)?;
    // The busy timeout first: from then on, a lock another connection holds (a migration, a
    // change of journal mode) is waited for rather than failed on.
    connection.busy_timeout(busy_timeout).map_err(internal)?;
    connection
        .execute_batch(&format!(
            "PRAGMA query_only = ON; PRAGMA cache_size = -{SQLITE_READER_CACHE_KIB};"
        ))
        .map_err(internal)?;
    Ok(connection)
}

pub(super) fn internal(message: impl std::fmt::Display) -> DbErr {
    DbErr::Query(RuntimeErr::Internal(message.to_string()))
}

pub(super) fn closed() -> DbErr {
    internal("the database is closed")
}

mod queue;
#[cfg(test)]
mod tests;
