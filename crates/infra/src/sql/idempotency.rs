//! Idempotency records over SeaORM.
//!
//! A write sent with an `Idempotency-Key` runs as one job of the database's writer (see
//! [`writer`](crate::sql::writer::thread)), in one transaction: it claims the key by inserting its
//! record (`INSERT ... ON CONFLICT DO UPDATE ... WHERE` the record there has expired, see
//! [`records`](crate::sql::rows::records)), does the work, then fills the record in with the
//! answer. A key already claimed inserts nothing, and the job returns the record instead of doing
//! the work. On PostgreSQL, a second process claiming the same key waits on the first one's row
//! until it commits, then finds the record: one of them does the work.
//!
//! Keyed additions of pets are merged with the other additions of their batch (see
//! [`additions`](crate::sql::writer::additions)): their records are complete when they claim their
//! keys, and one statement claims all of them.

use std::sync::Arc;

use animal_store_domain::{
    AnswerEncoder, IdempotencyStore, IdempotentWrite, KeyUse, NewEvent, NewOrder, NewPet,
    OrderAnswered, Pet, RepositoryError, StoredAnswer,
};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sea_orm::{
    ColumnTrait, DatabaseConnection, DatabaseTransaction, DbErr, EntityTrait, QueryFilter,
    QuerySelect,
};

use crate::sql::connection::reachability::Reads;
use crate::sql::orders;
use crate::sql::rows::records::{any_key, claim, fill, free};
use crate::sql::schema::entity::idempotency_key as record;
use crate::sql::writer::job::Writer;

/// Idempotency records in an SQL database. Cheap to clone: clones share the writer.
#[derive(Clone)]
pub struct SeaOrmIdempotencyStore {
    readers: DatabaseConnection,
    reads: Arc<Reads>,
    writer: Writer,
}

impl SeaOrmIdempotencyStore {
    pub(crate) fn new(readers: DatabaseConnection, reads: Arc<Reads>, writer: Writer) -> Self {
        Self { readers, reads, writer }
    }
}

async fn place_order(
    txn: &DatabaseTransaction,
    write: IdempotentWrite,
    order: NewOrder,
    answers: Arc<dyn AnswerEncoder>,
) -> Result<(KeyUse<OrderAnswered>, Vec<NewEvent>), DbErr> {
    if let Some(record) = claim(txn, &write).await? {
        return Ok((KeyUse::Again(record), Vec::new()));
    }
    let (placed, events) = orders::place(txn, order).await?;
    let answer = answers.order_placed(&placed);
    match &answer {
        Some(answer) => fill(txn, &write, answer).await?,
        // Not an outcome to store: the key is free again.
        None => free(txn, &write).await?,
    }
    Ok((KeyUse::First((placed, answer)), events))
}

#[async_trait]
impl IdempotencyStore for SeaOrmIdempotencyStore {
    async fn create_pet(
        &self,
        write: IdempotentWrite,
        pet: NewPet,
        answers: Arc<dyn AnswerEncoder>,
    ) -> Result<KeyUse<(Pet, StoredAnswer)>, RepositoryError> {
        self.writer.add_keyed_pet(write, pet, answers).await
    }

    async fn place_order(
        &self,
        write: IdempotentWrite,
        order: NewOrder,
        answers: Arc<dyn AnswerEncoder>,
    ) -> Result<KeyUse<OrderAnswered>, RepositoryError> {
        self.writer.change(move |txn| Box::pin(place_order(txn, write, order, answers))).await
    }

    /// Reads up to `batch` expired keys on a reader connection (no index: the table's oldest
    /// records come first in both databases' order, so with expired records the read is
    /// short, and without any it reads the table once, beside the writes), then removes them
    /// by their keys in one short write, each only if it is still expired.
    async fn sweep(&self, before: DateTime<Utc>, batch: usize) -> Result<usize, RepositoryError> {
        let limit = u64::try_from(batch).unwrap_or(u64::MAX);
        let expired = record::Entity::find()
            .select_only()
            .columns([record::Column::Owner, record::Column::Key])
            .filter(record::Column::CreatedAt.lt(before))
            .limit(limit);
        let keys = self
            .reads
            .read(|| expired.clone().into_tuple::<(String, String)>().all(&self.readers))
            .await?;
        if keys.is_empty() {
            return Ok(0);
        }
        self.writer
            .write(move |txn| {
                Box::pin(async move {
                    let keys = keys.iter().map(|(owner, key)| (owner.as_str(), key.as_str()));
                    let done = record::Entity::delete_many()
                        .filter(any_key(keys))
                        .filter(record::Column::CreatedAt.lt(before))
                        .exec(txn)
                        .await?;
                    Ok(usize::try_from(done.rows_affected).unwrap_or(usize::MAX))
                })
            })
            .await
    }
}
