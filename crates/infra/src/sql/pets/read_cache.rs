//! The read cache: on SQLite, the answers of the pet reads (a pet by id, a page), kept in
//! moka until the writer commits.
//!
//! The writer counts the transactions it ends ([`Commits`]), and ends each before it
//! answers its callers. A read notes the count before it asks the database, and keeps its
//! answer under that count; an answer kept under another count is never given again. So a
//! client that was told its write is stored never reads an answer from before it, and a
//! read that raced a commit keeps an answer no one takes. Nothing is read of SQLite's own
//! files: the signal is the writer's, in this process.
//!
//! One process serves an SQLite file. Another process's writes (a second server started
//! on the same file by mistake) are read once the cached answers before them are a second
//! old ([`TIME_TO_LIVE`]).

use std::sync::Arc;
use std::time::Duration;

use animal_store_domain::{Pet, PetId, PetStatus};

use crate::sql::writer::commits::Commits;

/// How long an answer is kept at most, whatever the writer does.
pub(crate) const TIME_TO_LIVE: Duration = Duration::from_secs(1);

/// The counter of the read cache's lookups, by `result`: `hit` or `miss`.
pub const READ_CACHE_METRIC: &str = "animal_store_read_cache_total";

/// A read of pets: one by id, or a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum PetRead {
    One(PetId),
    Page { status: Option<PetStatus>, after: Option<PetId>, count: usize },
}

/// An answer, and the count of transactions it was read after.
#[derive(Clone)]
struct Kept {
    commits: u64,
    pets: Arc<[Pet]>,
}

/// The answers of the pet reads, bounded by their size in bytes.
pub(crate) struct ReadCache {
    answers: moka::sync::Cache<PetRead, Kept>,
    commits: Arc<Commits>,
}

/// What a read asks for: the answer kept, or the ticket to keep the one it reads.
pub(crate) enum Lookup {
    Kept(Vec<Pet>),
    Missed(Ticket),
}

/// A read that missed: what it reads is kept under the count noted before it asked.
pub(crate) struct Ticket {
    read: PetRead,
    commits: u64,
}

impl ReadCache {
    /// A cache of at most `bytes` of answers, emptied as `commits` counts.
    pub(crate) fn new(bytes: u64, commits: Arc<Commits>) -> Self {
        let answers = moka::sync::Cache::builder()
            .max_capacity(bytes)
            .weigher(|_: &PetRead, kept: &Kept| weight(&kept.pets))
            .time_to_live(TIME_TO_LIVE)
            .build();
        Self { answers, commits }
    }

    /// The answer kept for `read`, if it was read after the last transaction ended.
    pub(crate) fn lookup(&self, read: PetRead) -> Lookup {
        let commits = self.commits.now();
        match self.answers.get(&read) {
            Some(kept) if kept.commits == commits => {
                metrics::counter!(READ_CACHE_METRIC, "result" => "hit").increment(1);
                Lookup::Kept(kept.pets.to_vec())
            }
            _ => {
                metrics::counter!(READ_CACHE_METRIC, "result" => "miss").increment(1);
                Lookup::Missed(Ticket { read, commits })
            }
        }
    }

    /// Keeps `pets`, the answer `ticket`'s read found.
    pub(crate) fn keep(&self, ticket: &Ticket, pets: &[Pet]) {
        let kept = Kept { commits: ticket.commits, pets: pets.into() };
        self.answers.insert(ticket.read, kept);
    }
}

/// What an answer weighs: its pets, their names, and the entry's own bookkeeping.
fn weight(pets: &[Pet]) -> u32 {
    const ENTRY: usize = 128;
    let bytes =
        ENTRY + pets.iter().map(|pet| size_of::<Pet>() + pet.name.as_str().len()).sum::<usize>();
    u32::try_from(bytes).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use animal_store_domain::{CategoryId, PetName};

    use super::*;

    fn pets(count: i64) -> Vec<Pet> {
        (1..=count)
            .map(|id| Pet {
                id: PetId::new(id),
                name: PetName::stored(format!("pet {id}")).expect("a name"),
                category_id: CategoryId::new(1).expect("a category"),
                status: PetStatus::Available,
            })
            .collect()
    }

    fn kept(cache: &ReadCache, read: PetRead) -> Option<Vec<Pet>> {
        match cache.lookup(read) {
            Lookup::Kept(pets) => Some(pets),
            Lookup::Missed(_) => None,
        }
    }

    const PAGE: PetRead = PetRead::Page { status: None, after: None, count: 21 };

    #[test]
    fn an_answer_is_given_until_a_transaction_ends() {
        let commits = Arc::new(Commits::default());
        let cache = ReadCache::new(1 << 20, Arc::clone(&commits));
        let Lookup::Missed(ticket) = cache.lookup(PAGE) else { panic!("nothing kept yet") };
        cache.keep(&ticket, &pets(3));
        assert_eq!(kept(&cache, PAGE), Some(pets(3)));
        commits.ended();
        assert_eq!(kept(&cache, PAGE), None);
    }

    #[test]
    fn an_answer_read_before_a_commit_is_never_given_after_it() {
        let commits = Arc::new(Commits::default());
        let cache = ReadCache::new(1 << 20, Arc::clone(&commits));
        let Lookup::Missed(ticket) = cache.lookup(PAGE) else { panic!("nothing kept yet") };
        // The writer commits while the read is on its way.
        commits.ended();
        cache.keep(&ticket, &pets(2));
        assert_eq!(kept(&cache, PAGE), None);
        let Lookup::Missed(ticket) = cache.lookup(PAGE) else { panic!("a miss") };
        cache.keep(&ticket, &pets(3));
        assert_eq!(kept(&cache, PAGE), Some(pets(3)));
    }

    #[test]
    fn the_answers_kept_stay_within_their_bound() {
        let cache = ReadCache::new(64 * 1024, Arc::default());
        for after in 0..2_000 {
            let read = PetRead::Page { status: None, after: Some(PetId::new(after)), count: 21 };
            let Lookup::Missed(ticket) = cache.lookup(read) else { panic!("a miss") };
            cache.keep(&ticket, &pets(20));
        }
        cache.answers.run_pending_tasks();
        assert!(cache.answers.weighted_size() <= 64 * 1024, "{}", cache.answers.weighted_size());
        assert!(cache.answers.entry_count() > 0);
    }
}
