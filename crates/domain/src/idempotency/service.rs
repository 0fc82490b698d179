//! The idempotent-retry use case: a keyed write runs, or repeats its key's first response,
//! or is refused (`docs/api.md#idempotent-retries`).
//!
//! Within a process, a key is held while its request runs, so that a second request with it
//! gets "in progress" rather than waiting or running twice. The store decides the rest in
//! the write's own transaction, with no read before it: a key used before returns its record
//! instead of doing the work, and of concurrent writes with one key across processes, one
//! does the work (see [`IdempotencyStore`]).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use thiserror::Error;

use crate::idempotency::model::{
    Fingerprint, IdempotencyKey, IdempotentWrite, KeyUse, StoredAnswer,
};
use crate::idempotency::ports::{AnswerEncoder, IdempotencyStore, OrderAnswered};
use crate::keys::model::KeyId;
use crate::orders::model::NewOrder;
use crate::orders::service::to_the_second;
use crate::pets::model::{NewPet, Pet, PetId};
use crate::ports::Clock;
use crate::repository_error::RepositoryError;

/// Why a keyed request does not run.
#[derive(Debug, Error)]
pub enum IdempotencyRefusal {
    /// Another request with the key is still running.
    #[error("a request with this Idempotency-Key is still being processed; retry later")]
    InProgress,
    /// The key was used with another request.
    #[error("this Idempotency-Key was used with another request: use a new key for a new request")]
    KeyReused,
    /// The store failed.
    #[error(transparent)]
    Repository(#[from] RepositoryError),
}

/// What a keyed write answers.
#[derive(Debug)]
pub enum Answer<T> {
    /// Done now, its answer stored for the retries.
    Done(T),
    /// Done before: the stored answer of the key's first request, which this one repeats.
    Replay(StoredAnswer),
}

/// A key held while its request runs; dropping it frees the key in this process.
#[derive(Debug)]
pub struct Hold {
    write: IdempotentWrite,
    running: Arc<Running>,
}

impl Hold {
    /// The write the request does, keyed.
    pub fn write(&self) -> &IdempotentWrite {
        &self.write
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.running.release(&self.write.owner, &self.write.idempotency_key);
    }
}

/// The keys whose requests run in this process.
#[derive(Debug, Default)]
struct Running(Mutex<HashSet<(KeyId, IdempotencyKey)>>);

impl Running {
    fn take(&self, owner: &KeyId, key: &IdempotencyKey) -> bool {
        let mut running = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        running.insert((owner.clone(), key.clone()))
    }

    fn release(&self, owner: &KeyId, key: &IdempotencyKey) {
        let mut running = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        running.remove(&(owner.clone(), key.clone()));
    }
}

/// Idempotent retries of `createPet` and `placeOrder`.
#[derive(Clone)]
pub struct IdempotencyService {
    store: Arc<dyn IdempotencyStore>,
    clock: Arc<dyn Clock>,
    answers: Arc<dyn AnswerEncoder>,
    running: Arc<Running>,
}

impl IdempotencyService {
    /// Records kept in `store`, timed by `clock`, their answers encoded by `answers`.
    pub fn new(
        store: Arc<dyn IdempotencyStore>,
        clock: Arc<dyn Clock>,
        answers: Arc<dyn AnswerEncoder>,
    ) -> Self {
        Self { store, clock, answers, running: Arc::default() }
    }

    /// Holds `key` for a request of `owner` with `fingerprint`, until the hold is dropped.
    ///
    /// # Errors
    ///
    /// [`IdempotencyRefusal::InProgress`] when another request of this process holds the key.
    pub fn hold(
        &self,
        owner: &KeyId,
        key: IdempotencyKey,
        fingerprint: Fingerprint,
    ) -> Result<Hold, IdempotencyRefusal> {
        if !self.running.take(owner, &key) {
            return Err(IdempotencyRefusal::InProgress);
        }
        let at = to_the_second(self.clock.now());
        Ok(Hold {
            write: IdempotentWrite { owner: owner.clone(), idempotency_key: key, fingerprint, at },
            running: Arc::clone(&self.running),
        })
    }

    /// Adds `pet` under `hold`'s key, its answer encoded and stored with it; or, when the
    /// key was used before, repeats the first answer.
    ///
    /// # Errors
    ///
    /// [`IdempotencyRefusal::KeyReused`] when the key was used with another request;
    /// [`IdempotencyRefusal::Repository`] when the store fails (nothing is stored then).
    pub async fn create_pet(
        &self,
        hold: &Hold,
        pet: NewPet,
    ) -> Result<Answer<(Pet, StoredAnswer)>, IdempotencyRefusal> {
        let answers = Arc::clone(&self.answers);
        let done = self.store.create_pet(hold.write.clone(), pet, answers).await?;
        to_answer(hold, done)
    }

    /// Places `pet`'s order for `hold`'s owner under its key; the outcome, refusals of the
    /// rules included, is encoded and stored with it. A key used before repeats the first
    /// answer.
    ///
    /// # Errors
    ///
    /// As [`IdempotencyService::create_pet`].
    pub async fn place_order(
        &self,
        hold: &Hold,
        pet: PetId,
    ) -> Result<Answer<OrderAnswered>, IdempotencyRefusal> {
        let order = NewOrder { pet_id: pet, owner: hold.write.owner.clone(), at: hold.write.at };
        let answers = Arc::clone(&self.answers);
        let done = self.store.place_order(hold.write.clone(), order, answers).await?;
        to_answer(hold, done)
    }

    /// Removes the records older than the retention, a batch of at most `batch` at a time,
    /// until none is left; returns how many it removed.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store fails; what was removed before stays removed.
    pub async fn sweep(&self, batch: usize) -> Result<usize, RepositoryError> {
        let retention =
            chrono::Duration::from_std(crate::idempotency::model::RETENTION).unwrap_or_default();
        let before = to_the_second(self.clock.now()) - retention;
        crate::events::service::in_batches(batch, || self.store.sweep(before, batch)).await
    }
}

/// What a keyed write's outcome answers: the work, or the first answer when the request
/// is the same, or the refusal of a key used for another.
fn to_answer<T>(hold: &Hold, done: KeyUse<T>) -> Result<Answer<T>, IdempotencyRefusal> {
    match done {
        KeyUse::First(work) => Ok(Answer::Done(work)),
        KeyUse::Again(record) => match record.replay(hold.write.fingerprint) {
            Ok(response) => Ok(Answer::Replay(response.clone())),
            Err(_) => Err(IdempotencyRefusal::KeyReused),
        },
    }
}
