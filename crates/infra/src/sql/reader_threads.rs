//! SQLite reads on threads of their own.
//!
//! A read through sqlx-sqlite hops between threads several times: the request's task hands
//! the query to the connection's worker thread, which hands each row back. Those hops, not
//! SQLite, were most of the cost of a page (see docs/benchmarks.md). Here a few threads each
//! own one connection of the synchronous SeaORM (`sea-orm-sync` over rusqlite) and take
//! reads from one queue: a read costs one hop there and one back.
//!
//! The connections are read-only (`PRAGMA query_only`): every write still goes through the
//! writer (see `writer.rs`). Under WAL they read beside it without waiting.

use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};
use sea_orm::{DbErr, RuntimeErr};
use sea_orm_sync::{ConnectionTrait as _, DatabaseConnection};
use tokio::sync::oneshot;

use super::connector::SQLITE_READER_CACHE_KIB;

/// How long a reader waits for SQLite's locks (a WAL recovery, an operator's
/// `VACUUM`) before its read fails.
const BUSY_TIMEOUT_MS: u32 = 5_000;

type Job = Box<dyn FnOnce(&DatabaseConnection) + Send>;

enum Message {
    Run(Job),
    Stop,
}

/// Threads that each own a read-only connection to one SQLite file.
pub(super) struct ReaderThreads {
    jobs: Sender<Message>,
    closed: AtomicBool,
    threads: std::sync::Mutex<Vec<JoinHandle<()>>>,
}

impl ReaderThreads {
    /// Starts `count` threads, each with its own connection to the file at `path`, once
    /// every connection is open.
    ///
    /// # Errors
    ///
    /// The first connection that cannot be opened; the threads started are stopped.
    pub(super) fn start(path: &Path, count: usize) -> Result<Self, DbErr> {
        let url = format!("sqlite:{}?mode=rw", path.display());
        let (jobs, queue) = crossbeam_channel::unbounded();
        let readers =
            Self { jobs, closed: AtomicBool::new(false), threads: std::sync::Mutex::default() };
        for index in 0..count {
            let (opened, open) = std::sync::mpsc::channel();
            let (url, queue) = (url.clone(), queue.clone());
            let thread = std::thread::Builder::new()
                .name(format!("sqlite-reader-{index}"))
                .spawn(move || match open_connection(&url) {
                    Ok(connection) => {
                        let _ = opened.send(Ok(()));
                        serve(&connection, &queue);
                        close(connection);
                    }
                    Err(err) => {
                        let _ = opened.send(Err(err));
                    }
                })
                .map_err(|err| internal(format!("cannot start a reader thread: {err}")))?;
            readers.lock_threads().push(thread);
            match open.recv() {
                Ok(Ok(())) => {}
                Ok(Err(err)) => return Err(err),
                Err(_) => return Err(internal("a reader thread ended while opening".to_owned())),
            }
        }
        Ok(readers)
    }

    /// Runs `read` on one of the threads and waits for its result. A read whose caller
    /// stopped waiting before a thread took it is skipped.
    pub(super) async fn run<T: Send + 'static>(
        &self,
        read: impl FnOnce(&DatabaseConnection) -> Result<T, sea_orm_sync::DbErr> + Send + 'static,
    ) -> Result<T, DbErr> {
        if self.closed.load(Ordering::Acquire) {
            return Err(closed());
        }
        let (done, result) = oneshot::channel();
        let job: Job = Box::new(move |connection| {
            if !done.is_closed() {
                let _ = done.send(read(connection).map_err(|err| internal(err.to_string())));
            }
        });
        self.jobs.send(Message::Run(job)).map_err(|_| closed())?;
        // The job is dropped unanswered when its thread panicked or the threads stopped.
        result.await.map_err(|_| internal("the read did not complete".to_owned()))?
    }

    /// Runs `statement`, built for SQLite by the async SeaORM, on one of the threads, each
    /// row read by `row`.
    pub(super) async fn query_all<T: Send + 'static>(
        &self,
        statement: sea_orm::Statement,
        row: fn(&sea_orm_sync::QueryResult) -> Result<T, sea_orm_sync::DbErr>,
    ) -> Result<Vec<T>, DbErr> {
        let sea_orm::Statement { sql, values, .. } = statement;
        let statement =
            sea_orm_sync::Statement { sql, values, db_backend: sea_orm_sync::DbBackend::Sqlite };
        self.run(move |connection| connection.query_all_raw(statement)?.iter().map(row).collect())
            .await
    }

    /// Lets the reads already queued finish, then stops the threads, which close their
    /// connections. Later reads fail.
    pub(super) fn stop(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        let threads = std::mem::take(&mut *self.lock_threads());
        for _ in &threads {
            let _ = self.jobs.send(Message::Stop);
        }
        for thread in threads {
            let _ = thread.join();
        }
    }

    fn lock_threads(&self) -> std::sync::MutexGuard<'_, Vec<JoinHandle<()>>> {
        self.threads.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Drop for ReaderThreads {
    fn drop(&mut self) {
        self.stop();
    }
}

fn open_connection(url: &str) -> Result<DatabaseConnection, DbErr> {
    let connection =
        sea_orm_sync::Database::connect(url).map_err(|err| internal(err.to_string()))?;
    // The busy timeout first: from then on, a lock another connection holds (a migration, a
    // change of journal mode) is waited for rather than failed on.
    for pragma in [
        format!("PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}"),
        "PRAGMA query_only = ON".to_owned(),
        format!("PRAGMA cache_size = -{SQLITE_READER_CACHE_KIB}"),
    ] {
        connection.execute_unprepared(&pragma).map_err(|err| internal(err.to_string()))?;
    }
    Ok(connection)
}

/// A thread's loop: jobs until told to stop or the queue is gone. A job that panics is
/// logged and dropped (its caller sees a failed read); the thread goes on.
fn serve(connection: &DatabaseConnection, queue: &Receiver<Message>) {
    while let Ok(Message::Run(job)) = queue.recv() {
        if std::panic::catch_unwind(AssertUnwindSafe(|| job(connection))).is_err() {
            tracing::error!("a database read panicked");
        }
    }
}

/// Closes a thread's connection, one thread at a time. Two connections to one file closing
/// at once can deadlock in SQLite 3.51.1, the library of this build: its unix VFS takes its
/// global mutex and a file's lock mutex in opposite orders when a closing connection tries
/// the lock that folds the WAL (rusqlite issue 1860, fixed in later SQLite). The writer and
/// the other readers close after these threads, one after the other (`Database::close`).
fn close(connection: DatabaseConnection) {
    static CLOSING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = CLOSING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    drop(connection);
}

fn internal(message: String) -> DbErr {
    DbErr::Query(RuntimeErr::Internal(message))
}

fn closed() -> DbErr {
    internal("the database is closed".to_owned())
}
