//! The pet repository over SeaORM, with group commit.
//!
//! Every durable commit costs a sync of the disk (150–200 µs here, far more on network
//! storage). Inserts are therefore queued to one writer task that takes everything queued, up
//! to [`MAX_BATCH`] pets, and commits them in one transaction: under load many pets share one
//! sync; alone, a pet is committed at once. Each waiting request gets its own pet back, or the
//! error that undid the whole batch. Because the writer is a task of its own, a client that
//! hangs up cannot interrupt a transaction halfway.
//!
//! Rows are inserted with `Entity::insert(..).exec(..)`, and sea-orm's default feature
//! `sqlite-use-returning-for-3_35` is off: with it, inserts run `INSERT ... RETURNING`
//! through a fetch that leaves the statement open, which on SQLite blocks WAL checkpoints for
//! good and lets the WAL grow without bound. `tests/sqlite.rs` checks the bound (and fails,
//! at 64 MiB, when checkpoints are disabled).

use std::sync::Arc;

use animal_store_domain::{
    CategoryId, NewPet, Pet, PetId, PetName, PetRepository, PetStatus, RepositoryError,
};
use async_trait::async_trait;
use sea_orm::{
    ColumnTrait, DatabaseConnection, DatabaseTransaction, DbErr, EntityTrait, QueryFilter,
    QueryOrder, QuerySelect, Set, SqliteTransactionMode, TransactionOptions, TransactionTrait,
};
use thiserror::Error;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::entity::pet;
use super::{Backend, Failure, corrupt, repository_error};

/// The most pets committed in one transaction.
pub const MAX_BATCH: usize = 64;
/// How many inserts may wait for the writer before callers wait to enqueue.
const QUEUE_DEPTH: usize = 1024;

/// Pets in an SQL database. Cheap to clone: clones share the reader pool and the writer task.
#[derive(Clone)]
pub struct SeaOrmPetRepository {
    readers: DatabaseConnection,
    queue: mpsc::Sender<Insert>,
}

struct Insert {
    pet: NewPet,
    reply: oneshot::Sender<Result<Pet, RepositoryError>>,
}

/// The writer task is gone: the server is shutting down.
#[derive(Debug, Error)]
#[error("the pet writer has stopped")]
struct WriterStopped;

/// One batch's failure, shared by every request of the batch.
#[derive(Debug, Error)]
#[error(transparent)]
struct BatchFailed(Arc<DbErr>);

impl SeaOrmPetRepository {
    /// Starts the writer task on `writer`. The task runs until `stop` fires, then commits
    /// what is already queued and ends; inserts that arrive later are refused.
    pub(super) fn start(
        backend: Backend,
        readers: DatabaseConnection,
        writer: DatabaseConnection,
        stop: oneshot::Receiver<()>,
    ) -> (Self, JoinHandle<()>) {
        let (queue, inserts) = mpsc::channel(QUEUE_DEPTH);
        let task = tokio::spawn(write_batches(backend, writer, inserts, stop));
        (Self { readers, queue }, task)
    }
}

async fn write_batches(
    backend: Backend,
    writer: DatabaseConnection,
    mut inserts: mpsc::Receiver<Insert>,
    mut stop: oneshot::Receiver<()>,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    loop {
        let received = tokio::select! {
            received = inserts.recv_many(&mut batch, MAX_BATCH) => received,
            _ = &mut stop => {
                // Refuse new inserts, then commit those already queued.
                inserts.close();
                while inserts.recv_many(&mut batch, MAX_BATCH).await > 0 {
                    write_batch(backend, &writer, &mut batch).await;
                }
                return;
            }
        };
        if received == 0 {
            return;
        }
        write_batch(backend, &writer, &mut batch).await;
    }
}

/// Commits `batch` and answers each of its requests.
async fn write_batch(backend: Backend, writer: &DatabaseConnection, batch: &mut Vec<Insert>) {
    match insert_batch(backend, writer, batch).await {
        Ok(ids) => {
            for (insert, id) in batch.drain(..).zip(ids) {
                // The requester may have hung up; the pet is stored all the same.
                let _ = insert.reply.send(Ok(Pet::from_new(PetId::new(id), insert.pet)));
            }
        }
        Err(err) => {
            tracing::error!(error = %err, pets = batch.len(), "a batch of pets could not be stored");
            let failure = Failure::of(&err);
            let err = Arc::new(err);
            for insert in batch.drain(..) {
                let _ = insert.reply.send(Err(failure.with_source(BatchFailed(Arc::clone(&err)))));
            }
        }
    }
}

async fn insert_batch(
    backend: Backend,
    writer: &DatabaseConnection,
    batch: &[Insert],
) -> Result<Vec<i64>, DbErr> {
    let txn = match backend {
        // IMMEDIATE takes SQLite's write lock at BEGIN, so the transaction can never fail
        // half-way for want of it; a busy lock is waited for (busy timeout) up front.
        Backend::Sqlite => {
            writer
                .begin_with_options(TransactionOptions {
                    sqlite_transaction_mode: Some(SqliteTransactionMode::Immediate),
                    ..TransactionOptions::default()
                })
                .await?
        }
        Backend::Postgres => writer.begin().await?,
    };
    match insert_rows(&txn, batch).await {
        Ok(ids) => {
            txn.commit().await?;
            Ok(ids)
        }
        Err(err) => {
            txn.rollback().await?;
            Err(err)
        }
    }
}

async fn insert_rows(txn: &DatabaseTransaction, batch: &[Insert]) -> Result<Vec<i64>, DbErr> {
    let mut ids = Vec::with_capacity(batch.len());
    for Insert { pet, .. } in batch {
        let row = pet::ActiveModel {
            name: Set(pet.name.as_str().to_owned()),
            category_id: Set(pet.category_id.get()),
            status: Set(pet.status.as_str().to_owned()),
            ..Default::default()
        };
        ids.push(pet::Entity::insert(row).exec(txn).await?.last_insert_id);
    }
    Ok(ids)
}

fn to_pet(row: &pet::Model) -> Result<Pet, RepositoryError> {
    Ok(Pet {
        id: PetId::new(row.id),
        name: PetName::new(&row.name).map_err(|e| corrupt("pets", e))?,
        category_id: CategoryId::new(row.category_id).map_err(|e| corrupt("pets", e))?,
        status: row.status.parse::<PetStatus>().map_err(|e| corrupt("pets", e))?,
    })
}

#[async_trait]
impl PetRepository for SeaOrmPetRepository {
    async fn create(&self, pet: NewPet) -> Result<Pet, RepositoryError> {
        let (reply, stored) = oneshot::channel();
        self.queue
            .send(Insert { pet, reply })
            .await
            .map_err(|_| RepositoryError::Unavailable(Box::new(WriterStopped)))?;
        stored.await.map_err(|_| RepositoryError::Unavailable(Box::new(WriterStopped)))?
    }

    async fn get(&self, id: PetId) -> Result<Option<Pet>, RepositoryError> {
        pet::Entity::find_by_id(id.get())
            .one(&self.readers)
            .await
            .map_err(repository_error)?
            .map(|row| to_pet(&row))
            .transpose()
    }

    async fn list(
        &self,
        status: Option<PetStatus>,
        after: Option<PetId>,
        limit: usize,
    ) -> Result<Vec<Pet>, RepositoryError> {
        let mut query = pet::Entity::find();
        if let Some(status) = status {
            query = query.filter(pet::Column::Status.eq(status.as_str()));
        }
        if let Some(after) = after {
            query = query.filter(pet::Column::Id.gt(after.get()));
        }
        query
            .order_by_asc(pet::Column::Id)
            .limit(u64::try_from(limit).unwrap_or(u64::MAX))
            .all(&self.readers)
            .await
            .map_err(repository_error)?
            .into_iter()
            .map(|row| to_pet(&row))
            .collect()
    }
}
