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
//!   for locks, and take reads from one queue: one hop there and one back.
//!
//! The connections are read-only (`PRAGMA query_only`): every write still goes through the
//! writer (see `writer.rs`). Under WAL they read beside it without waiting.
//!
//! A connection for the callers' threads keeps its read transaction, its snapshot, from one
//! read to the next for as long as nothing was committed since: starting and ending a read
//! transaction takes SQLite's locks on the WAL index (`fcntl` calls, under a mutex the
//! threads contend for), which cost a served read about as much as the read itself. Before
//! each read it compares the WAL index's header, which every commit by any connection of any
//! process rewrites ([the WAL format](https://www.sqlite.org/walformat.html#the_wal_index_file_format)),
//! with the header when its snapshot was taken, read from the `-shm` file with one `pread`:
//! the same, the snapshot is the newest there is; otherwise it starts a new one.
//!
//! While the writer runs a transaction, from before its `BEGIN` to after its `COMMIT` and the
//! checkpoint SQLite runs in it, no snapshot is kept ([`ReaderThreads::writes_start`]): a
//! snapshot older than the frames a checkpoint would copy holds that checkpoint back, and
//! one held across every commit would keep the WAL from ever starting over, so that it grew
//! without end under a mix of reads and writes. Reads during a write are transactions of
//! their own, as without snapshots. For the checkpoints of another process's writes (an
//! operator's `keys create`, a second server on the file), none is kept once the WAL holds
//! [`KEEP_BELOW_FRAMES`] frames, SQLite's checkpoint size, and none longer than
//! [`SNAPSHOT_AGE`]: the first reader thread ends those that grew older while their
//! connection sat idle.

use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use sea_orm::{DbErr, RuntimeErr};
use sea_query_rusqlite::RusqliteValue;
use sea_query_rusqlite::rusqlite::{self, Connection, OpenFlags, ToSql};
use tokio::sync::oneshot;

use super::connector::{SQLITE_READER_CACHE_KIB, close_sqlite};

/// How long a reader thread waits for SQLite's locks (a WAL recovery, an operator's
/// `VACUUM`) before its read fails.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The longest a snapshot is kept, so that it holds back another process's checkpoints for
/// no longer: a read on an older one starts a new one, and the first reader thread ends one
/// that grew older while its connection sat idle.
const SNAPSHOT_AGE: Duration = Duration::from_millis(100);

/// From this many frames in the WAL no snapshot is kept, so that each read is a transaction
/// of its own again, as the checkpoint that starts the WAL over needs: SQLite's automatic
/// checkpoint size (`wal_autocheckpoint`, left at its default of 1,000 pages).
const KEEP_BELOW_FRAMES: u32 = 1_000;

/// The bytes of the WAL index's header at the start of the `-shm` file: its two copies, of
/// 48 bytes each. A commit rewrites both (the count of frames, the change counter), the
/// second copy first.
const WAL_INDEX_HEADER: usize = 96;

/// The WAL index's header as a read found it.
type Header = [u8; WAL_INDEX_HEADER];

type Job = Box<dyn FnOnce(&Connection) + Send>;

enum Message {
    Run(Job),
    Stop,
}

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
    wal_index: Option<std::fs::File>,
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
        let inline: Arc<[_]> = (0..count)
            .map(|_| {
                open_connection(path, Duration::ZERO).map(|c| Mutex::new(Some(Inline::new(c))))
            })
            .collect::<Result<_, _>>()?;
        let wal_index = open_wal_index(path, &inline);
        let (jobs, queue) = crossbeam_channel::unbounded();
        let readers = Self {
            inline,
            wal_index,
            writing: AtomicBool::new(false),
            snapshot_age,
            jobs,
            closed: AtomicBool::new(false),
            threads: Mutex::default(),
        };
        for index in 0..count {
            let (opened, open) = std::sync::mpsc::channel();
            let (path, queue) = (path.to_owned(), queue.clone());
            // The first thread also ends the snapshots kept too long by idle connections.
            let sweep = (index == 0).then(|| (Arc::clone(&readers.inline), snapshot_age));
            let thread = std::thread::Builder::new()
                .name(format!("sqlite-reader-{index}"))
                .spawn(move || match open_connection(&path, BUSY_TIMEOUT) {
                    Ok(connection) => {
                        let _ = opened.send(Ok(()));
                        serve(&connection, &queue, sweep.as_ref().map(|(s, age)| (&**s, *age)));
                        close_sqlite(connection, "a database reader");
                    }
                    Err(err) => {
                        let _ = opened.send(Err(err));
                    }
                })
                .map_err(|err| internal(format_args!("cannot start a reader thread: {err}")))?;
            readers.lock_threads().push(thread);
            match open.recv() {
                Ok(Ok(())) => {}
                Ok(Err(err)) => return Err(err),
                Err(_) => return Err(internal("a reader thread ended while opening")),
            }
        }
        Ok(readers)
    }

    /// Runs `read` on the caller's thread if a connection for it is free and no lock is in
    /// the way, otherwise on one of the threads, and waits for its result there. A read
    /// whose caller stopped waiting before a thread took it is skipped.
    pub(super) async fn run<T: Send + 'static>(&self, read: impl Read<T>) -> Result<T, DbErr> {
        if self.closed.load(Ordering::Acquire) {
            return Err(closed());
        }
        if let Some(done) = self.run_here(&read) {
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
    /// snapshot; `None` when none is free, or when SQLite would have had to wait for a lock.
    fn run_here<T>(&self, read: &impl Read<T>) -> Option<Result<T, DbErr>> {
        let mut slot = self
            .inline
            .iter()
            .find_map(|slot| slot.try_lock().ok().filter(|slot| slot.is_some()))?;
        let inline = slot.as_mut()?;
        let header =
            if self.writing.load(Ordering::SeqCst) { None } else { self.wal_index_header() };
        if let Err(err) = inline.snapshot(header, self.snapshot_age) {
            // The reader threads take the reads this connection would have.
            tracing::error!(error = %err, "a database reader could not start a snapshot");
            retire(&mut slot);
            return None;
        }
        let answer = match std::panic::catch_unwind(AssertUnwindSafe(|| read(&inline.connection))) {
            Ok(Ok(rows)) => return Some(Ok(rows)),
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

    /// The WAL index's header now; `None` when it cannot be read.
    fn wal_index_header(&self) -> Option<Header> {
        use std::os::unix::fs::FileExt as _;
        let mut header = [0; WAL_INDEX_HEADER];
        self.wal_index.as_ref()?.read_exact_at(&mut header, 0).ok()?;
        Some(header)
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
        self.query_sql(sql, values, row).await
    }

    /// Runs `sql`, SQL that SeaORM built for SQLite (once, for a read that keeps it), with
    /// `values` bound in order, each row read by `row`.
    pub(super) async fn query_sql<T: Send + 'static, V: ToSql + Send + 'static>(
        &self,
        sql: impl AsRef<str> + Send + 'static,
        values: Vec<V>,
        row: fn(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>, DbErr> {
        self.run(move |connection| {
            let mut prepared = connection.prepare_cached(sql.as_ref())?;
            let rows = prepared.query_map(rusqlite::params_from_iter(&values), row)?;
            rows.collect()
        })
        .await
    }

    /// Closes the callers' connections (a read on one is waited for), lets the reads
    /// already queued finish, then stops the threads, which close theirs. Later reads fail.
    pub(super) fn stop(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        for slot in self.inline.iter() {
            if let Some(mut inline) = lock(slot).take() {
                inline.release();
                close_sqlite(inline.connection, "a database reader");
            }
        }
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

/// The frames in the WAL, as the WAL index's header counts them (`mxFrame`, the fifth
/// 32-bit field, in the host's byte order).
fn frames(header: &Header) -> u32 {
    u32::from_ne_bytes([header[16], header[17], header[18], header[19]])
}

/// Closes the connection in `slot`, one that cannot be trusted to read the newest snapshot
/// any more; the reads it would have taken go to the other connections and the threads.
fn retire(slot: &mut Option<Inline>) {
    if let Some(mut inline) = slot.take() {
        inline.release();
        close_sqlite(inline.connection, "a database reader");
    }
}

/// The `-shm` file of the database at `path`, once a read has made SQLite create it; `None`
/// (and a line in the log) when it cannot be opened, say because the file is not in WAL
/// mode: the connections then keep no snapshot, and each read is a transaction of its own.
fn open_wal_index(path: &Path, inline: &[Mutex<Option<Inline>>]) -> Option<std::fs::File> {
    let cannot = |err: &dyn std::fmt::Display| {
        tracing::warn!(error = %err, "the WAL index cannot be read: every read takes its own snapshot");
    };
    // The connection keeps the `-shm` file open, and SQLite keeps it beside the database file
    // that links resolve to.
    let primed = inline.first().map(|slot| {
        let slot = lock(slot);
        let connection = slot.as_ref().map(|inline| &inline.connection);
        connection.map(|c| c.query_row("PRAGMA schema_version", [], |_| Ok(())))
    });
    if let Some(Some(Err(err))) = &primed {
        cannot(err);
        return None;
    }
    let mut shm = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned()).into_os_string();
    shm.push("-shm");
    std::fs::File::open(&shm).map_err(|err| cannot(&err)).ok()
}

/// A connection for the callers' threads, and the snapshot it keeps.
struct Inline {
    connection: Connection,
    /// The WAL index's header when its read transaction started, and when that was;
    /// `None` outside one.
    taken_at: Option<(Header, Instant)>,
}

impl Inline {
    fn new(connection: Connection) -> Self {
        Self { connection, taken_at: None }
    }

    /// Keeps the snapshot if the WAL index's header is still `header`, the one it was taken
    /// at, so that nothing was committed since; otherwise starts a new one, which SQLite takes
    /// at the transaction's first read, at `header` or later. Without a header, the read
    /// is a transaction of its own.
    fn snapshot(&mut self, header: Option<Header>, age: Duration) -> rusqlite::Result<()> {
        // Past the checkpoint size, a read is a transaction of its own, as without a header.
        let header = header.filter(|header| frames(header) < KEEP_BELOW_FRAMES);
        if let (Some(now), Some((then, since))) = (header, self.taken_at)
            && now == then
            && since.elapsed() < age
        {
            return Ok(());
        }
        if !self.release() {
            return Err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
                Some("a read transaction could not be ended".to_owned()),
            ));
        }
        if let Some(header) = header {
            self.connection.execute_batch("BEGIN DEFERRED")?;
            self.taken_at = Some((header, Instant::now()));
        }
        Ok(())
    }

    /// Whether it keeps a snapshot taken longer than `age` ago.
    fn is_older_than(&self, age: Duration) -> bool {
        self.taken_at.is_some_and(|(_, since)| since.elapsed() >= age)
    }

    /// Ends the read transaction, if one is open; whether the connection is outside one
    /// now (if not, it must not be read from again).
    fn release(&mut self) -> bool {
        self.taken_at = None;
        if !self.connection.is_autocommit()
            && let Err(err) = self.connection.execute_batch("ROLLBACK")
        {
            tracing::error!(error = %err, "a database reader could not end its snapshot");
        }
        self.connection.is_autocommit()
    }
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
fn open_connection(path: &Path, busy_timeout: Duration) -> Result<Connection, DbErr> {
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

/// A thread's loop: jobs until told to stop or the queue is gone. A job that panics is
/// logged and dropped (its caller sees a failed read); the thread goes on.
///
/// With `sweep`, the connections for the callers' threads and the longest a snapshot is kept,
/// it also ends, that often, the snapshots kept longer on those that are not reading.
fn serve(
    connection: &Connection,
    queue: &Receiver<Message>,
    sweep: Option<(&[Mutex<Option<Inline>>], Duration)>,
) {
    let mut swept = Instant::now();
    loop {
        let wait = sweep.map_or(Duration::MAX, |(_, age)| age);
        match queue.recv_timeout(wait) {
            Ok(Message::Run(job)) => {
                if std::panic::catch_unwind(AssertUnwindSafe(|| job(connection))).is_err() {
                    tracing::error!("a database read panicked");
                }
            }
            Ok(Message::Stop) | Err(RecvTimeoutError::Disconnected) => return,
            Err(RecvTimeoutError::Timeout) => {}
        }
        if let Some((slots, age)) = sweep
            && swept.elapsed() >= age
        {
            swept = Instant::now();
            for slot in slots {
                if let Ok(mut slot) = slot.try_lock()
                    && slot
                        .as_mut()
                        .is_some_and(|inline| inline.is_older_than(age) && !inline.release())
                {
                    retire(&mut slot);
                }
            }
        }
    }
}

fn internal(message: impl std::fmt::Display) -> DbErr {
    DbErr::Query(RuntimeErr::Internal(message.to_string()))
}

fn closed() -> DbErr {
    internal("the database is closed")
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// Where a read ran: the caller's thread, or a reader thread.
    fn thread_name() -> String {
        std::thread::current().name().unwrap_or_default().to_owned()
    }

    fn readers() -> (tempfile::TempDir, ReaderThreads) {
        readers_keeping(SNAPSHOT_AGE)
    }

    /// Readers whose snapshots are kept `age` at most: an hour for a test that must not see
    /// one end by age on a slow machine.
    fn readers_keeping(age: Duration) -> (tempfile::TempDir, ReaderThreads) {
        let dir = tempfile::tempdir().expect("a directory");
        let path = dir.path().join("store.db");
        Connection::open(&path)
            .expect("create")
            .execute_batch("PRAGMA journal_mode = WAL")
            .unwrap();
        let readers = ReaderThreads::start_with(&path, 2, age).expect("start");
        (dir, readers)
    }

    const HOUR: Duration = Duration::from_secs(3600);

    /// `PRAGMA wal_checkpoint(TRUNCATE)` on `writer`: 1 when a reader held it back.
    fn checkpoint(writer: &Connection) -> i64 {
        writer.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0)).expect("checkpoint")
    }

    #[tokio::test]
    async fn a_read_runs_on_its_callers_thread_when_a_connection_is_free() {
        let (_dir, readers) = readers();
        let caller = thread_name();
        let ran = readers.run(|c| c.query_row("SELECT 1", [], |_| Ok(thread_name()))).await;
        assert_eq!(ran.expect("read"), caller);
    }

    /// A lock met on the caller's thread is not waited for there (it would hold a worker
    /// of the runtime): the read runs again on a reader thread, whose connection waits.
    #[tokio::test]
    async fn a_read_that_meets_a_lock_runs_again_on_a_reader_thread() {
        let (_dir, readers) = readers();
        let tries = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&tries);
        let ran = readers
            .run(move |_| {
                if counted.fetch_add(1, Ordering::SeqCst) == 0 {
                    let busy = rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY);
                    return Err(rusqlite::Error::SqliteFailure(busy, None));
                }
                Ok(thread_name())
            })
            .await;
        assert!(ran.expect("read").starts_with("sqlite-reader-"));
        assert_eq!(tries.load(Ordering::SeqCst), 2);
    }

    /// Any other failure is the read's answer: it is not tried twice.
    #[tokio::test]
    async fn a_read_that_fails_otherwise_fails_once() {
        let (_dir, readers) = readers();
        let tries = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&tries);
        let ran = readers
            .run(move |c| {
                counted.fetch_add(1, Ordering::SeqCst);
                c.query_row("SELECT * FROM no_such_table", [], |_| Ok(()))
            })
            .await;
        assert!(ran.expect_err("no such table").to_string().contains("no_such_table"));
        assert_eq!(tries.load(Ordering::SeqCst), 1);
    }

    /// The number of rows in `t`, read on the callers' connections.
    async fn rows(readers: &ReaderThreads) -> i64 {
        readers.run(|c| c.query_row("SELECT count(*) FROM t", [], |row| row.get(0))).await.unwrap()
    }

    /// A table `t` and a connection that writes to it, beside the readers.
    fn table(dir: &tempfile::TempDir) -> Connection {
        let writer = Connection::open(dir.path().join("store.db")).expect("open");
        // A checkpoint that a reader holds back answers so at once.
        writer.busy_timeout(Duration::ZERO).expect("busy timeout");
        writer.execute_batch("CREATE TABLE t (x INTEGER)").expect("create");
        writer
    }

    /// A commit by any connection, another process's included, is read by the next read:
    /// the snapshot kept before it is not.
    #[tokio::test]
    async fn a_commit_by_any_connection_is_read_at_once() {
        let (dir, readers) = readers_keeping(HOUR);
        let writer = table(&dir);
        assert!(readers.wal_index.is_some(), "the connections keep snapshots");
        for committed in 0..20 {
            assert_eq!(rows(&readers).await, committed);
            writer.execute("INSERT INTO t VALUES (1)", []).expect("insert");
        }
    }

    /// Between reads, with nothing committed, a connection stays in its read transaction;
    /// the writer ends it before it writes, and with it what it held back of the checkpoint.
    #[tokio::test]
    async fn a_snapshot_is_kept_between_reads_until_released() {
        let (dir, readers) = readers_keeping(HOUR);
        let writer = table(&dir);
        assert_eq!(rows(&readers).await, 0);
        let kept = readers.run(|c| Ok(!c.is_autocommit())).await.expect("read");
        assert!(kept, "the read ran in the kept transaction");
        readers.writes_start();
        let kept = readers.run(|c| Ok(!c.is_autocommit())).await.expect("read");
        assert!(!kept, "while the writer writes, a read is a transaction of its own");
        readers.writes_end();
        assert_eq!(rows(&readers).await, 0);
        writer.execute("INSERT INTO t VALUES (1)", []).expect("insert");
        assert_eq!(checkpoint(&writer), 1, "the kept snapshot holds the checkpoint back");
        readers.writes_start();
        readers.writes_end();
        assert_eq!(checkpoint(&writer), 0, "released, nothing holds it back");
        assert_eq!(rows(&readers).await, 1);
    }

    /// A connection that sits idle does not keep its snapshot past its age: the first
    /// reader thread ends it, and with it what it held back of another process's checkpoint.
    #[tokio::test]
    async fn an_idle_connections_snapshot_ends_with_its_age() {
        let age = Duration::from_millis(50);
        let (dir, readers) = readers_keeping(age);
        let writer = table(&dir);
        assert_eq!(rows(&readers).await, 0);
        writer.execute("INSERT INTO t VALUES (1)", []).expect("insert");
        let mut held_back = checkpoint(&writer);
        for _ in 0..100 {
            if held_back == 0 {
                break;
            }
            std::thread::sleep(age);
            held_back = checkpoint(&writer);
        }
        assert_eq!(held_back, 0, "the idle snapshot was ended");
    }

    /// Once the WAL holds SQLite's checkpoint size in frames, no snapshot is kept: each read
    /// is a transaction of its own, as the checkpoint that starts the WAL over needs.
    #[tokio::test]
    async fn no_snapshot_is_kept_once_the_wal_is_as_long_as_a_checkpoint() {
        let (dir, readers) = readers_keeping(HOUR);
        let writer = table(&dir);
        writer.execute_batch("PRAGMA wal_autocheckpoint = 0; PRAGMA synchronous = OFF").unwrap();
        let kept = || readers.run(|c| Ok(!c.is_autocommit()));
        assert!(kept().await.expect("read"), "a short WAL: the snapshot is kept");
        for _ in 0..KEEP_BELOW_FRAMES {
            writer.execute("INSERT INTO t VALUES (1)", []).expect("insert");
        }
        assert!(!kept().await.expect("read"), "a WAL as long as a checkpoint: none is kept");
        assert_eq!(rows(&readers).await, i64::from(KEEP_BELOW_FRAMES));
    }

    #[tokio::test]
    async fn reads_after_stop_fail() {
        let (_dir, readers) = readers();
        readers.stop();
        let ran = readers.run(|c| c.query_row("SELECT 1", [], |row| row.get::<_, i64>(0))).await;
        assert!(ran.expect_err("closed").to_string().contains("closed"));
    }
}
