//! The snapshots SQLite's reads keep. A connection for the callers' threads keeps its read transaction, its snapshot, from one
//! read to the next for as long as nothing was committed since: starting and ending a read
//! transaction takes SQLite's locks on the WAL index (`fcntl` calls, under a mutex the
//! threads contend for), which cost a served read about as much as the read itself. Before
//! each read it compares the WAL index's header, which every commit by any connection of any
//! process rewrites ([the WAL format](https://www.sqlite.org/walformat.html#the_wal_index_file_format)),
//! with the header when its snapshot was taken, read from the `-shm` file with one `pread`:
//! the same, the snapshot is the newest there is; otherwise it starts a new one.
//!
//! While the writer runs a transaction, from before its `BEGIN` to after its `COMMIT` and the
//! checkpoint SQLite runs in it, no snapshot is kept (`ReaderThreads::writes_start`): a
//! snapshot older than the frames a checkpoint would copy holds that checkpoint back, and
//! one held across every commit would keep the WAL from ever starting over, so that it grew
//! without end under a mix of reads and writes. Reads during a write are transactions of
//! their own, as without snapshots. For the checkpoints of another process's writes (an
//! operator's `keys create`, a second server on the file), none is kept once the WAL holds
//! [`KEEP_BELOW_FRAMES`] frames, SQLite's checkpoint size, and none longer than
//! [`SNAPSHOT_AGE`]: the first reader thread ends those that grew older while their
//! connection sat idle.
//!
//! Nor does the database change while the header stays the same: the same read reads the
//! same rows. The reads that ask for it keep their answers in one
//! [`Memo`](super::memo::Memo) for every connection, under the header read before them, for
//! as long as the header is that one, whether or not a snapshot is kept meanwhile: a page or
//! a pet many clients ask for between two commits is read from SQLite until it missed twice,
//! then answered from memory. The header itself is read by [`WalIndex`](super::wal_index).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use sea_query_rusqlite::rusqlite::{self, Connection};

use super::connector::close_sqlite;
use super::wal_index::{Header, frames};

/// The longest a snapshot is kept, so that it holds back another process's checkpoints for
/// no longer: a read on an older one starts a new one, and the first reader thread ends one
/// that grew older while its connection sat idle.
pub(super) const SNAPSHOT_AGE: Duration = Duration::from_millis(100);

/// From this many frames in the WAL no snapshot is kept, so that each read is a transaction
/// of its own again, as the checkpoint that starts the WAL over needs: SQLite's automatic
/// checkpoint size (`wal_autocheckpoint`, left at its default of 1,000 pages).
pub(super) const KEEP_BELOW_FRAMES: u32 = 1_000;

/// Ends the snapshots kept longer than `age` on the connections of `slots` that are not
/// reading (those that are, the reads end).
pub(super) fn end_old_snapshots(slots: &[Mutex<Option<Inline>>], age: Duration) {
    for slot in slots {
        if let Ok(mut slot) = slot.try_lock()
            && slot.as_mut().is_some_and(|inline| inline.is_older_than(age) && !inline.release())
        {
            retire(&mut slot);
        }
    }
}

/// Closes the connection in `slot`, one that cannot be trusted to read the newest snapshot
/// any more; the reads it would have taken go to the other connections and the threads.
pub(super) fn retire(slot: &mut Option<Inline>) {
    if let Some(mut inline) = slot.take() {
        inline.release();
        close_sqlite(inline.connection, "a database reader");
    }
}

/// A connection for the callers' threads, and the snapshot it keeps.
pub(super) struct Inline {
    pub(super) connection: Connection,
    /// The WAL index's header when its read transaction started, and when that was;
    /// `None` outside one.
    taken_at: Option<(Header, Instant)>,
}

impl Inline {
    pub(super) fn new(connection: Connection) -> Self {
        Self { connection, taken_at: None }
    }

    /// Keeps the snapshot if the WAL index's header is still `header`, the one it was taken
    /// at, so that nothing was committed since; otherwise starts a new one, which SQLite takes
    /// at the transaction's first read, at `header` or later. Without a header, the read
    /// is a transaction of its own.
    pub(super) fn snapshot(
        &mut self,
        header: Option<Header>,
        age: Duration,
    ) -> rusqlite::Result<()> {
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
    pub(super) fn release(&mut self) -> bool {
        self.taken_at = None;
        if !self.connection.is_autocommit()
            && let Err(err) = self.connection.execute_batch("ROLLBACK")
        {
            tracing::error!(error = %err, "a database reader could not end its snapshot");
        }
        self.connection.is_autocommit()
    }
}
