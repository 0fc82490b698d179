//! The reader threads and the snapshots their connections keep.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use super::*;
use crate::sql::memo::MEMO_ROWS;
use crate::sql::snapshots::KEEP_BELOW_FRAMES;

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
    Connection::open(&path).expect("create").execute_batch("PRAGMA journal_mode = WAL").unwrap();
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
    assert!(readers.wal_index.is_open(), "the connections keep snapshots");
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

/// Reads the rows of `t` as `run_memoized` under `key`, counting in `reads` the reads
/// SQLite ran; a row of `-1` is not a row (`Err`).
async fn memoized(
    readers: &ReaderThreads,
    key: u32,
    reads: &Arc<AtomicUsize>,
) -> Vec<Result<i64, ()>> {
    let counted = Arc::clone(reads);
    let read = move |c: &Connection| {
        counted.fetch_add(1, Ordering::SeqCst);
        let mut statement = c.prepare("SELECT x FROM t ORDER BY rowid")?;
        let rows = statement.query_map([], |row| row.get::<_, i64>(0))?;
        rows.map(|x| x.map(|x| if x < 0 { Err(()) } else { Ok(x) })).collect()
    };
    readers.run_memoized(key, read).await.expect("read")
}

/// A memoized read that missed twice is answered again with the rows read for the same
/// key until something is committed: another key, or a commit by any connection, and the
/// read runs on SQLite again. A write under way commits nothing yet: the answers still hold.
#[tokio::test]
async fn a_memoized_read_is_answered_again_until_a_commit() {
    let (dir, readers) = readers_keeping(HOUR);
    let writer = table(&dir);
    writer.execute("INSERT INTO t VALUES (1)", []).expect("insert");
    let reads = Arc::new(AtomicUsize::new(0));
    for _ in 0..4 {
        assert_eq!(memoized(&readers, 1, &reads).await, [Ok(1)]);
    }
    assert_eq!(reads.load(Ordering::SeqCst), 2, "read on its first two misses only");
    assert_eq!(memoized(&readers, 2, &reads).await, [Ok(1)]);
    assert_eq!(reads.load(Ordering::SeqCst), 3, "another key is another read");

    writer.execute("INSERT INTO t VALUES (2)", []).expect("insert");
    assert_eq!(memoized(&readers, 1, &reads).await, [Ok(1), Ok(2)], "the commit is read");
    assert_eq!(memoized(&readers, 1, &reads).await, [Ok(1), Ok(2)]);
    assert_eq!(reads.load(Ordering::SeqCst), 4, "a read that missed before is kept at once");

    readers.writes_start();
    assert_eq!(memoized(&readers, 1, &reads).await, [Ok(1), Ok(2)]);
    assert_eq!(reads.load(Ordering::SeqCst), 4, "a write under way has committed nothing");
    writer.execute("INSERT INTO t VALUES (3)", []).expect("insert");
    assert_eq!(memoized(&readers, 1, &reads).await, [Ok(1), Ok(2), Ok(3)]);
    assert_eq!(memoized(&readers, 1, &reads).await, [Ok(1), Ok(2), Ok(3)]);
    assert_eq!(reads.load(Ordering::SeqCst), 5, "kept while the writer writes");
    readers.writes_end();
}

/// An answer with a row that is not one is not kept, and the memo keeps a bounded number of
/// rows: the answer that would take it past them empties it first.
#[tokio::test]
async fn only_whole_answers_are_kept_and_only_so_many_rows() {
    let (dir, readers) = readers_keeping(HOUR);
    let writer = table(&dir);
    writer.execute("INSERT INTO t VALUES (1), (-1)", []).expect("insert");
    let reads = Arc::new(AtomicUsize::new(0));
    for _ in 0..3 {
        assert_eq!(memoized(&readers, 0, &reads).await, [Ok(1), Err(())]);
    }
    assert_eq!(reads.load(Ordering::SeqCst), 3, "not kept");

    writer.execute("DELETE FROM t WHERE x < 0", []).expect("delete");
    let keys = u32::try_from(MEMO_ROWS).expect("a small number");
    for key in 0..keys {
        memoized(&readers, key, &reads).await;
        memoized(&readers, key, &reads).await;
    }
    let before = reads.load(Ordering::SeqCst);
    memoized(&readers, 0, &reads).await;
    memoized(&readers, keys - 1, &reads).await;
    assert_eq!(reads.load(Ordering::SeqCst), before, "as many rows as it keeps: all kept");
    for _ in 0..3 {
        memoized(&readers, keys, &reads).await;
    }
    assert_eq!(reads.load(Ordering::SeqCst), before + 2, "one row more: emptied, then kept");
    memoized(&readers, 0, &reads).await;
    assert_eq!(reads.load(Ordering::SeqCst), before + 3, "the rows before, let go of");
}

/// The answers outlast the snapshot they were read on: neither a failed read, which ends
/// its connection's snapshot, nor the snapshot's age lets go of them, since nothing was
/// committed. Stopping the readers does.
#[tokio::test]
async fn answers_outlast_the_snapshot_until_a_commit() {
    let age = Duration::from_millis(50);
    let (dir, readers) = readers_keeping(age);
    let writer = table(&dir);
    let reads = Arc::new(AtomicUsize::new(0));
    for _ in 0..3 {
        memoized(&readers, 1, &reads).await;
    }
    assert_eq!(reads.load(Ordering::SeqCst), 2);
    let failed = readers.run(|c| c.query_row("SELECT * FROM no_such_table", [], |_| Ok(()))).await;
    assert!(failed.is_err());
    memoized(&readers, 1, &reads).await;
    std::thread::sleep(age * 2);
    memoized(&readers, 1, &reads).await;
    assert_eq!(reads.load(Ordering::SeqCst), 2, "kept past the failure and the age");
    writer.execute("INSERT INTO t VALUES (1)", []).expect("insert");
    assert_eq!(memoized(&readers, 1, &reads).await, [Ok(1)]);
    assert_eq!(reads.load(Ordering::SeqCst), 3, "read again after a commit");
    readers.stop();
    let kept = readers.run_memoized(1_u32, |_: &Connection| Ok(vec![Ok::<i64, ()>(1)])).await;
    assert!(kept.is_err(), "stopped: nothing is answered, not even what was kept");
}

/// An answer is kept under the header read before its read: a commit made while the read
/// ran is read by the next read, not hidden behind the answer.
#[tokio::test]
async fn a_commit_made_during_a_read_is_not_hidden_by_its_answer() {
    let (dir, readers) = readers_keeping(HOUR);
    let writer = table(&dir);
    writer.execute("INSERT INTO t VALUES (1)", []).expect("insert");
    let path = dir.path().join("store.db");
    let read = |commit: bool| {
        let path = path.clone();
        move |c: &Connection| {
            let mut statement = c.prepare("SELECT x FROM t ORDER BY rowid")?;
            let rows = statement.query_map([], |row| row.get::<_, i64>(0))?;
            let rows: Vec<Result<i64, ()>> = rows.map(|x| x.map(Ok)).collect::<Result<_, _>>()?;
            if commit {
                Connection::open(&path)?.execute("INSERT INTO t VALUES (2)", [])?;
            }
            Ok(rows)
        }
    };
    assert_eq!(readers.run_memoized(1_u32, read(false)).await.expect("read"), [Ok(1)]);
    assert_eq!(readers.run_memoized(1_u32, read(true)).await.expect("read"), [Ok(1)]);
    let after = readers.run_memoized(1_u32, read(false)).await.expect("read");
    assert_eq!(after, [Ok(1), Ok(2)], "the commit made during the read before is read");
}
