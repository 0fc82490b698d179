//! The answers of reads, kept for every connection while the WAL index's header read before
//! them lasts: the same read at the same header reads the same rows, so a page or a pet many
//! clients ask for between two commits is read from SQLite until it missed twice, then
//! answered from memory (see [`snapshots`](super::snapshots) for the header).

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, RandomState};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::wal_index::Header;

/// The most rows the [`Memo`] keeps, over all its answers: an answer that would take it past
/// them empties it first, so that the reads asked for most come back into it at once.
pub(super) const MEMO_ROWS: usize = 16_384;

/// The reads whose last miss the [`Memo`] remembers, so that it keeps the answer of a read
/// only when it misses it again: one key a slot, by the key's hash.
const MISSES_NOTED: usize = 16_384;

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

#[cfg(test)]
mod tests {
    use std::hash::Hasher;

    use super::*;
    use crate::sql::wal_index::WAL_INDEX_HEADER;

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
