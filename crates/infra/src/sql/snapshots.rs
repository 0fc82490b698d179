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
//! same rows. The reads that ask for it keep their answers in one [`Memo`] for every
//! connection, under the header read before them, for as long as the header is that one,
//! whether or not a snapshot is kept meanwhile: a page or a pet many clients ask for between
//! two commits is read from SQLite until it missed twice, then answered from memory.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fs::File;
use std::hash::{BuildHasher, Hash, RandomState};
use std::os::unix::fs::FileExt as _;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use sea_query_rusqlite::rusqlite::{self, Connection};

use super::connector::close_sqlite;

/// The longest a snapshot is kept, so that it holds back another process's checkpoints for
/// no longer: a read on an older one starts a new one, and the first reader thread ends one
/// that grew older while its connection sat idle.
pub(super) const SNAPSHOT_AGE: Duration = Duration::from_millis(100);

/// From this many frames in the WAL no snapshot is kept, so that each read is a transaction
/// of its own again, as the checkpoint that starts the WAL over needs: SQLite's automatic
/// checkpoint size (`wal_autocheckpoint`, left at its default of 1,000 pages).
pub(super) const KEEP_BELOW_FRAMES: u32 = 1_000;

/// The most rows the [`Memo`] keeps, over all its answers: an answer that would take it past
/// them empties it first, so that the reads asked for most come back into it at once.
pub(super) const MEMO_ROWS: usize = 16_384;

/// The reads whose last miss the [`Memo`] remembers, so that it keeps the answer of a read
/// only when it misses it again: one key a slot, by the key's hash.
const MISSES_NOTED: usize = 16_384;

/// The bytes of the WAL index's header at the start of the `-shm` file: its two copies, of
/// 48 bytes each. A commit rewrites both (the count of frames, the change counter), the
/// second copy first.
const WAL_INDEX_HEADER: usize = 96;

/// The WAL index's header as a read found it.
pub(super) type Header = [u8; WAL_INDEX_HEADER];

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

/// The frames in the WAL, as the WAL index's header counts them (`mxFrame`, the fifth
/// 32-bit field, in the host's byte order).
fn frames(header: &Header) -> u32 {
    u32::from_ne_bytes([header[16], header[17], header[18], header[19]])
}

/// Closes the connection in `slot`, one that cannot be trusted to read the newest snapshot
/// any more; the reads it would have taken go to the other connections and the threads.
pub(super) fn retire(slot: &mut Option<Inline>) {
    if let Some(mut inline) = slot.take() {
        inline.release();
        close_sqlite(inline.connection, "a database reader");
    }
}

/// The database's `-shm` file, whose header tells whether a kept snapshot is still the
/// newest; without it (it could not be opened) the connections keep no snapshot.
pub(super) struct WalIndex(Option<File>);

impl WalIndex {
    /// The `-shm` file of the database at `path`, once a read on `primer` has made SQLite
    /// create it. When it cannot be opened, say because the file is not in WAL mode, a line
    /// says so and every read takes its own snapshot.
    pub(super) fn open(path: &Path, primer: Option<&Connection>) -> Self {
        let cannot = |err: &dyn std::fmt::Display| {
            tracing::warn!(error = %err, "the WAL index cannot be read: every read takes its own snapshot");
        };
        let read = primer.map(|c| c.query_row("PRAGMA schema_version", [], |_| Ok(())));
        if let Some(Err(err)) = read {
            cannot(&err);
            return Self(None);
        }
        // The connection keeps the `-shm` file open, and SQLite keeps it beside the database
        // file that links resolve to.
        let mut shm =
            std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned()).into_os_string();
        shm.push("-shm");
        Self(open_without_access_times(Path::new(&shm)).map_err(|err| cannot(&err)).ok())
    }

    /// The header now, with one `pread`; `None` when it cannot be read.
    pub(super) fn header(&self) -> Option<Header> {
        let mut header = [0; WAL_INDEX_HEADER];
        self.0.as_ref()?.read_exact_at(&mut header, 0).ok()?;
        Some(header)
    }

    /// Whether the `-shm` file is open.
    #[cfg(test)]
    pub(super) fn is_open(&self) -> bool {
        self.0.is_some()
    }
}

/// Opens the file at `path` to read, asking the kernel not to note when it is read
/// (`O_NOATIME`): each served read reads its header, and the access time's update cost about
/// a third of that `pread`. Only the file's owner may ask it; anyone else opens it plainly.
fn open_without_access_times(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOATIME).open(path).or_else(|err| {
        match err.kind() {
            std::io::ErrorKind::PermissionDenied => File::open(path),
            _ => Err(err),
        }
    })
}

/// The answers of reads, each a list of rows, by the key of what it asked, of any type: a
/// read's key names everything its answer depends on but the database. Every answer was
/// read at one WAL index's header, or later, and is given only to a read that finds the
/// header the same: nothing was committed since, or the commit is one the read may see.
/// It is shared by every connection, behind a lock of its own; what it lets go of is
/// dropped after that lock is released.
pub(super) struct Memo {
    kept: Mutex<Kept>,
    hasher: RandomState,
}

/// What a [`Memo`] keeps, under its lock.
struct Kept {
    /// The header its answers were read at, or after; `None` while it keeps none.
    header: Option<Header>,
    answers: Answers,
    /// The rows of those answers: at most [`MEMO_ROWS`].
    rows: usize,
    /// The hashes of the keys of reads it missed lately, each in the slot its hash names (a
    /// later miss of another key in the same slot takes its place): a read asked for once
    /// and not again (one pet of millions) costs a slot, not a copy of its answer, and does
    /// not push out the answers of the reads asked for again.
    missed: Box<[u64]>,
}

/// Each answer with its key, by the key's [`Slot`].
type Answers = HashMap<Slot, Box<dyn Any + Send>>;

/// Where a [`Memo`] keeps the answer to a key: the key's type and hash, computed once a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Slot(TypeId, u64);

impl Default for Memo {
    fn default() -> Self {
        let kept = Kept {
            header: None,
            answers: Answers::default(),
            rows: 0,
            missed: vec![0; MISSES_NOTED].into_boxed_slice(),
        };
        Self { kept: Mutex::new(kept), hasher: RandomState::new() }
    }
}

impl Memo {
    /// The slot of `key`, for the calls below.
    pub(super) fn slot<K: Hash + 'static>(&self, key: &K) -> Slot {
        Slot(TypeId::of::<K>(), self.hasher.hash_one(key))
    }

    /// The rows kept for `key` (in `slot`), if `header` is the one they were kept under.
    pub(super) fn answer<K: Eq + 'static, T: Send + Sync + 'static>(
        &self,
        header: &Header,
        slot: Slot,
        key: &K,
    ) -> Option<Arc<[T]>> {
        let kept = self.lock();
        if kept.header.as_ref() != Some(header) {
            return None;
        }
        let (kept_key, rows) = kept.answers.get(&slot)?.downcast_ref::<(K, Arc<[T]>)>()?;
        (kept_key == key).then(|| Arc::clone(rows))
    }

    /// Notes that a read of the key in `slot` missed; whether it had missed lately already,
    /// and so whether its answer is worth keeping.
    pub(super) fn missed(&self, slot: Slot) -> bool {
        let Slot(_, hash) = slot;
        #[expect(clippy::cast_possible_truncation, reason = "a remainder below MISSES_NOTED")]
        let index = (hash % MISSES_NOTED as u64) as usize;
        std::mem::replace(&mut self.lock().missed[index], hash) == hash
    }

    /// Keeps `rows`, read at `header` or after, as the answer to `key` (in `slot`), in place
    /// of the one kept for it, if any. The answers of another header are let go of first,
    /// when `is_newest` says `header` is still the newest (asked only then: otherwise the
    /// answer is not kept, so that a read that began before a commit and ended after one
    /// that began after it does not put the older header back), and so are all of them when
    /// `rows` would take the memo past [`MEMO_ROWS`].
    pub(super) fn keep<K: Send + 'static, T: Send + Sync + 'static>(
        &self,
        header: Header,
        slot: Slot,
        key: K,
        rows: Arc<[T]>,
        is_newest: impl FnOnce() -> bool,
    ) {
        let mut kept = self.lock();
        let another = kept.header != Some(header);
        if rows.len() > MEMO_ROWS || (another && !is_newest()) {
            return;
        }
        // Two reads of the same key may both have missed it: the last one's answer is kept.
        if let Some(replaced) = kept.answers.remove(&slot)
            && let Some((_, replaced)) = replaced.downcast_ref::<(K, Arc<[T]>)>()
        {
            kept.rows -= replaced.len();
        }
        let forgotten = (another || kept.rows + rows.len() > MEMO_ROWS).then(|| {
            kept.header = Some(header);
            kept.rows = 0;
            std::mem::take(&mut kept.answers)
        });
        kept.rows += rows.len();
        kept.answers.insert(slot, Box::new((key, rows)));
        drop(kept);
        drop(forgotten);
    }

    /// Lets go of every answer.
    pub(super) fn clear(&self) {
        let mut kept = self.lock();
        kept.header = None;
        kept.rows = 0;
        let forgotten = std::mem::take(&mut kept.answers);
        drop(kept);
        drop(forgotten);
    }

    fn lock(&self) -> MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
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

#[cfg(test)]
mod tests {
    use std::hash::Hasher;

    use super::*;

    /// A key whose every value hashes alike.
    #[derive(PartialEq, Eq)]
    struct Colliding(u8);

    impl Hash for Colliding {
        fn hash<H: Hasher>(&self, _: &mut H) {}
    }

    const H0: Header = [0; WAL_INDEX_HEADER];
    const H1: Header = [1; WAL_INDEX_HEADER];

    fn rows(count: usize) -> Arc<[u8]> {
        vec![0; count].into()
    }

    fn keep(memo: &Memo, header: Header, key: u32, rows: Arc<[u8]>) {
        memo.keep(header, memo.slot(&key), key, rows, || true);
    }

    fn kept(memo: &Memo, header: Header, key: u32) -> bool {
        memo.answer::<_, u8>(&header, memo.slot(&key), &key).is_some()
    }

    /// An answer is given to its own key, rows and header only: not to another key of the
    /// same hash, another type of row, or another header.
    #[test]
    fn an_answer_is_given_to_its_own_key_only() {
        let memo = Memo::default();
        let (one, two) = (Colliding(1), Colliding(2));
        let slot = memo.slot(&one);
        assert_eq!(slot, memo.slot(&two), "the same hash");
        memo.keep(H0, slot, one, Arc::<[i64]>::from(vec![7]), || true);
        let one = Colliding(1);
        assert_eq!(memo.answer::<_, i64>(&H0, slot, &one).as_deref(), Some(&[7][..]));
        assert_eq!(memo.answer::<_, i64>(&H0, slot, &two), None, "another key");
        assert_eq!(memo.answer::<_, u32>(&H0, slot, &one), None, "another type of row");
        assert_eq!(memo.answer::<_, i64>(&H1, slot, &one), None, "another header");
    }

    /// An answer kept again for its key replaces the one kept and is counted once; the
    /// answer that would take the memo past its rows empties it first.
    #[test]
    fn an_answer_kept_again_is_counted_once() {
        let memo = Memo::default();
        for _ in 0..3 {
            keep(&memo, H0, 1, rows(MEMO_ROWS / 2));
        }
        keep(&memo, H0, 2, rows(MEMO_ROWS / 2));
        assert!(kept(&memo, H0, 1) && kept(&memo, H0, 2), "room for a second half");
        keep(&memo, H0, 3, rows(1));
        assert!(!kept(&memo, H0, 1) && !kept(&memo, H0, 2), "one row more: emptied first");
        assert!(kept(&memo, H0, 3));
    }

    /// An answer kept under another header lets the answers of the one before go, if that
    /// header is the newest; otherwise it is not kept.
    #[test]
    fn an_answer_of_another_header_lets_the_others_go() {
        let memo = Memo::default();
        keep(&memo, H0, 1, rows(1));
        memo.keep(H1, memo.slot(&2_u32), 2_u32, rows(1), || false);
        assert!(kept(&memo, H0, 1) && !kept(&memo, H1, 2), "an older header: not kept");
        keep(&memo, H1, 2, rows(1));
        assert!(!kept(&memo, H0, 1) && !kept(&memo, H1, 1));
        assert!(kept(&memo, H1, 2));
    }

    /// A read is worth keeping on its second miss, not its first.
    #[test]
    fn a_read_is_worth_keeping_once_it_missed_twice() {
        let memo = Memo::default();
        assert!(!memo.missed(memo.slot(&1_u32)));
        assert!(memo.missed(memo.slot(&1_u32)));
        assert!(!memo.missed(memo.slot(&2_u64)), "another key");
    }
}
