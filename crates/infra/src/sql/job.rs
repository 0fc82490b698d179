//! The pieces of work the writer runs: each caller's share of a transaction (see
//! [`writer`](super::writer)), and how its caller gets its output back.

use animal_store_domain::{
    IdempotencyRecord, IdempotentWrite, NewPet, Pet, PetId, RepositoryError,
};
use async_trait::async_trait;
use futures_util::future::BoxFuture;
use sea_orm::{DatabaseTransaction, DbErr};
use thiserror::Error;
use tokio::sync::oneshot;

/// Where a caller waits for its output.
pub(super) type Reply<T> = oneshot::Sender<Result<T, RepositoryError>>;

/// Answers a caller once the transaction has ended: with its output when `outcome` is `Ok`
/// (the transaction committed), with the error otherwise. The caller may have hung up; what
/// committed stays committed all the same.
pub(super) fn answer<T>(reply: Reply<T>, output: Option<T>, outcome: Result<(), RepositoryError>) {
    let answer =
        outcome.and_then(|()| output.ok_or_else(|| RepositoryError::Backend(Box::new(JobMisused))));
    let _ = reply.send(answer);
}

/// One caller's share of a transaction.
#[async_trait]
pub(super) trait Job: Send {
    /// Runs the caller's statements inside the transaction.
    async fn run(&mut self, txn: &DatabaseTransaction) -> Result<(), DbErr>;

    /// Answers the caller once the transaction has ended: with its output when `outcome`
    /// is `Ok` (the transaction committed), with the error otherwise.
    fn answer(self: Box<Self>, outcome: Result<(), RepositoryError>);

    /// The pet this job adds, when adding it (and storing its idempotency record) is all the
    /// job does and it has not run: the writer adds the pets of a batch together (see
    /// `batch.rs`), then hands each job its id with [`Job::added`].
    fn pet(&self) -> Option<&NewPet> {
        None
    }

    /// Records the id the batch's statements gave this job's pet; the job has run then.
    fn added(&mut self, _id: PetId) {}

    /// The key of this job, when it adds a pet under an idempotency key and has not run.
    fn keyed(&self) -> Option<&IdempotentWrite> {
        None
    }

    /// The record this job stores, once its pet has an id: the batch's statements claim its
    /// key with it.
    fn record(&self) -> Option<&IdempotencyRecord> {
        None
    }

    /// Records that another write claimed this job's key first, with this record: the job
    /// adds nothing and answers it.
    fn found(&mut self, _record: IdempotencyRecord) {}

    /// Takes this job out of the batch's merged statements: it runs on its own, after them
    /// (its key is another job's of the same batch, whose record it must then find).
    fn run_alone(&mut self) {}
}

/// Adding one pet: work the writer can merge with the other additions of its batch.
pub(super) struct AddPet {
    pet: Option<NewPet>,
    output: Option<Pet>,
    reply: Reply<Pet>,
}

impl AddPet {
    pub(super) fn new(pet: NewPet, reply: Reply<Pet>) -> Self {
        Self { pet: Some(pet), output: None, reply }
    }
}

#[async_trait]
impl Job for AddPet {
    async fn run(&mut self, txn: &DatabaseTransaction) -> Result<(), DbErr> {
        if let Some(pet) = self.pet.take() {
            self.output = Some(super::pets::insert(txn, pet).await?);
        }
        Ok(())
    }

    fn answer(self: Box<Self>, outcome: Result<(), RepositoryError>) {
        let Self { output, reply, .. } = *self;
        answer(reply, output, outcome);
    }

    fn pet(&self) -> Option<&NewPet> {
        self.pet.as_ref()
    }

    fn added(&mut self, id: PetId) {
        if let Some(pet) = self.pet.take() {
            self.output = Some(Pet::from_new(id, pet));
        }
    }
}

/// A piece of work [`Writer::write`](super::writer::Writer::write) was given.
pub(super) struct Pending<T, F> {
    work: Option<F>,
    output: Option<T>,
    reply: Reply<T>,
}

impl<T, F> Pending<T, F> {
    pub(super) fn new(work: F, reply: Reply<T>) -> Self {
        Self { work: Some(work), output: None, reply }
    }
}

/// A job whose work ran twice, or whose output went missing: a bug of the writer's.
#[derive(Debug, Error)]
#[error("a write job was run twice or answered before it ran")]
pub(super) struct JobMisused;

#[async_trait]
impl<T, F> Job for Pending<T, F>
where
    T: Send + 'static,
    F: for<'t> FnOnce(&'t DatabaseTransaction) -> BoxFuture<'t, Result<T, DbErr>> + Send + 'static,
{
    async fn run(&mut self, txn: &DatabaseTransaction) -> Result<(), DbErr> {
        let work = self.work.take().ok_or_else(|| DbErr::Custom(JobMisused.to_string()))?;
        self.output = Some(work(txn).await?);
        Ok(())
    }

    fn answer(self: Box<Self>, outcome: Result<(), RepositoryError>) {
        let Self { output, reply, .. } = *self;
        answer(reply, output, outcome);
    }
}
