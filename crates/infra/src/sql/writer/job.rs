//! What the stores hand the writer (see [`writer`](crate::sql::writer::thread)): additions of pets,
//! which the pets' statements merge per batch (see [`additions`](crate::sql::writer::additions)),
//! and any other statements, run one job after the other; then the events of every change the jobs
//! made, in one statement (see [`rows::events`](crate::sql::rows::events)).

use std::sync::Arc;

use animal_store_domain::{
    AnswerEncoder, IdempotentWrite, KeyUse, NewEvent, NewPet, Pet, RepositoryError, StoredAnswer,
};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use futures_util::future::BoxFuture;
use sea_orm::{DatabaseTransaction, DbErr};

use crate::sql::rows;
use crate::sql::writer::additions::{Addition, add_all};
use crate::sql::writer::thread::{self, JobMisused, Reply, Work, reply};

/// The writer of a database, running its stores' jobs.
pub(crate) type Writer = thread::Writer<Job>;

/// What a write decided (its output or the rules' refusal), and the events of what it
/// changed.
pub(crate) type Decided<T, E> = (Result<T, E>, Vec<NewEvent>);

/// One caller's share of a transaction.
pub(crate) enum Job {
    /// Adding a pet, with or without an idempotency key (boxed as the other jobs are: the
    /// queue holds jobs by value).
    Add(Box<Addition>),
    /// Any other statements.
    Statements(Box<dyn Statements>),
}

/// Statements a caller runs in a transaction, and the output it waits for.
#[async_trait]
pub(crate) trait Statements: Send {
    /// Runs the statements.
    async fn run(&mut self, txn: &DatabaseTransaction) -> Result<(), DbErr>;

    /// The events of the changes they made, once they ran.
    fn take_events(&mut self) -> Vec<NewEvent>;

    /// Answers the caller (see [`Work::finish`]).
    fn finish(self: Box<Self>, outcome: Result<(), RepositoryError>);
}

#[async_trait]
impl Work for Job {
    /// Adds the batch's pets first, then runs the other jobs in order: no other job can
    /// depend on a pet of its own batch, whose id its caller learns after the commit. Then
    /// records the events of what they changed, in that order.
    async fn run(txn: &DatabaseTransaction, batch: &mut [Self]) -> Result<(), DbErr> {
        add_all(txn, additions(batch)).await?;
        let mut changes = pets_created(batch);
        for job in batch {
            if let Job::Statements(statements) = job {
                statements.run(txn).await?;
                changes.extend(statements.take_events());
            }
        }
        rows::events::record(txn, &changes).await
    }

    fn finish(self, outcome: Result<(), RepositoryError>) {
        match self {
            Job::Add(addition) => addition.finish(outcome),
            Job::Statements(statements) => statements.finish(outcome),
        }
    }
}

/// The additions of `batch`, in order.
fn additions(batch: &mut [Job]) -> Vec<&mut Addition> {
    batch
        .iter_mut()
        .filter_map(|job| match job {
            Job::Add(addition) => Some(&mut **addition),
            Job::Statements(_) => None,
        })
        .collect()
}

/// The events of the pets `batch`'s additions created, once they ran.
fn pets_created(batch: &[Job]) -> Vec<NewEvent> {
    batch
        .iter()
        .filter_map(|job| match job {
            Job::Add(addition) => addition.event(),
            Job::Statements(_) => None,
        })
        .collect()
}

impl Writer {
    /// Runs `work` inside a write transaction, possibly beside other callers' work, and
    /// returns its output once the transaction has committed. For writes that change no pet
    /// and no order: those are [`Writer::change`]s.
    ///
    /// `work` must leave every decision in its output, never in an error: an `Err` from it,
    /// or from any statement, undoes the whole transaction, other callers' work included.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the transaction did not commit; nothing of `work` is stored
    /// then.
    pub(crate) async fn write<T, F>(&self, work: F) -> Result<T, RepositoryError>
    where
        T: Send + 'static,
        F: for<'t> FnOnce(&'t DatabaseTransaction) -> BoxFuture<'t, Result<T, DbErr>>
            + Send
            + 'static,
    {
        self.change(move |txn| Box::pin(async move { Ok((work(txn).await?, Vec::new())) })).await
    }

    /// [`Writer::write`] for `work` that changes pets or orders: it returns its output and
    /// the events of its changes, which the transaction records with them.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the transaction did not commit; nothing of `work` is stored
    /// then, and none of its events.
    pub(crate) async fn change<T, F>(&self, work: F) -> Result<T, RepositoryError>
    where
        T: Send + 'static,
        F: for<'t> FnOnce(
                &'t DatabaseTransaction,
            ) -> BoxFuture<'t, Result<(T, Vec<NewEvent>), DbErr>>
            + Send
            + 'static,
    {
        self.submit(|reply| {
            Job::Statements(Box::new(Pending {
                work: Some(work),
                output: None,
                events: Vec::new(),
                reply,
            }))
        })
        .await
    }

    /// Adds `pet`, asked for `at`, and returns it with its id once the transaction has
    /// committed. The pets added by one transaction share their statements.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the transaction did not commit; the pet is not stored then.
    pub(crate) async fn add_pet(
        &self,
        pet: NewPet,
        at: DateTime<Utc>,
    ) -> Result<Pet, RepositoryError> {
        self.submit(|reply| Job::Add(Box::new(Addition::plain(pet, at, reply)))).await
    }

    /// Adds `pet` under `write`'s key, unless the key has an unexpired record, which it
    /// returns instead; the record stores the answer `answers` encodes.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the transaction did not commit; nothing is stored then.
    pub(crate) async fn add_keyed_pet(
        &self,
        write: IdempotentWrite,
        pet: NewPet,
        answers: Arc<dyn AnswerEncoder>,
    ) -> Result<KeyUse<(Pet, StoredAnswer)>, RepositoryError> {
        self.submit(|reply| Job::Add(Box::new(Addition::keyed(write, pet, answers, reply)))).await
    }
}

/// The statements [`Writer::write`] was given, until they run.
struct Pending<T, F> {
    work: Option<F>,
    output: Option<T>,
    events: Vec<NewEvent>,
    reply: Reply<T>,
}

#[async_trait]
impl<T, F> Statements for Pending<T, F>
where
    T: Send + 'static,
    F: for<'t> FnOnce(&'t DatabaseTransaction) -> BoxFuture<'t, Result<(T, Vec<NewEvent>), DbErr>>
        + Send
        + 'static,
{
    async fn run(&mut self, txn: &DatabaseTransaction) -> Result<(), DbErr> {
        let work = self.work.take().ok_or_else(|| DbErr::Custom(JobMisused.to_string()))?;
        let (output, events) = work(txn).await?;
        self.output = Some(output);
        self.events = events;
        Ok(())
    }

    fn take_events(&mut self) -> Vec<NewEvent> {
        std::mem::take(&mut self.events)
    }

    fn finish(self: Box<Self>, outcome: Result<(), RepositoryError>) {
        let Self { output, reply: to, .. } = *self;
        reply(to, output, outcome);
    }
}
