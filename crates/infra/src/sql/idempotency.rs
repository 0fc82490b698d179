//! Idempotency records over SeaORM.
//!
//! A write sent with an `Idempotency-Key` runs as one job of the database's writer (see
//! [`writer`](super::writer)), in one transaction: it claims the key by inserting its record
//! (`INSERT ... ON CONFLICT DO UPDATE ... WHERE` the record there has expired, see
//! [`claim`](super::claim)), does the work, then fills the record in with the response. A
//! key already claimed inserts nothing, and the job returns the record instead of doing the
//! work. On PostgreSQL, a second process claiming the same key waits on the first one's row
//! until it commits, then finds the record: one of them does the work.
//!
//! Keyed additions of pets are merged with the other additions of their batch (see
//! [`batch`](super::batch)): their records are complete when they claim their keys, and one
//! statement claims all of them.

use std::sync::Arc;

use animal_store_domain::{
    Fingerprint, IdempotencyKey, IdempotencyRecord, IdempotencyStore, Idempotent, IdempotentWrite,
    KeyId, NewOrder, NewPet, Order, Pet, PetId, PlaceOrderError, RenderOrder, RenderPet,
    RepositoryError, StoredResponse,
};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, Condition, DatabaseConnection, DatabaseTransaction, DbErr, EntityTrait,
    QueryFilter, QuerySelect,
};

use super::claim::claim_all;
use super::corrupt;
use super::entity::idempotency_key as record;
use super::job::{Job, JobMisused, Reply, answer};
use super::reachability::Reads;
use super::writer::Writer;

/// Idempotency records in an SQL database. Cheap to clone: clones share the writer.
#[derive(Clone)]
pub struct SeaOrmIdempotencyStore {
    readers: DatabaseConnection,
    reads: Arc<Reads>,
    writer: Writer,
}

impl SeaOrmIdempotencyStore {
    pub(super) fn new(readers: DatabaseConnection, reads: Arc<Reads>, writer: Writer) -> Self {
        Self { readers, reads, writer }
    }
}

pub(super) fn to_record(row: record::Model) -> Result<IdempotencyRecord, RepositoryError> {
    let record::Model { owner, key, fingerprint, status, body, location, created_at } = row;
    let fingerprint: [u8; 32] = fingerprint
        .try_into()
        .map_err(|_| corrupt("idempotency_keys", "a fingerprint of another length"))?;
    Ok(IdempotencyRecord {
        owner: KeyId::new(&owner).map_err(|e| corrupt("idempotency_keys", e))?,
        key: IdempotencyKey::new(&key).map_err(|e| corrupt("idempotency_keys", e))?,
        fingerprint: Fingerprint::from_bytes(fingerprint),
        response: StoredResponse {
            status: u16::try_from(status).map_err(|e| corrupt("idempotency_keys", e))?,
            body,
            location,
        },
        created_at,
    })
}

/// The record of `owner`'s `key`.
fn the_key(owner: &str, key: &str) -> Condition {
    Condition::all().add(record::Column::Owner.eq(owner)).add(record::Column::Key.eq(key))
}

/// The records of any of `keys` (owner, key).
pub(super) fn any_key<'k>(keys: impl IntoIterator<Item = (&'k str, &'k str)>) -> Condition {
    keys.into_iter().fold(Condition::any(), |any, (owner, key)| any.add(the_key(owner, key)))
}

/// In `txn`: claims `write`'s key, or returns its unexpired record.
async fn claim(
    txn: &DatabaseTransaction,
    write: &IdempotentWrite,
) -> Result<Option<IdempotencyRecord>, DbErr> {
    let unfilled = StoredResponse { status: 0, body: String::new(), location: None };
    let placeholder = IdempotencyRecord::of(write.clone(), unfilled);
    Ok(claim_all(txn, &[&placeholder], None).await?.pop().flatten())
}

/// In `txn`: fills the claimed record of `write` in with `response`.
async fn fill(
    txn: &DatabaseTransaction,
    write: &IdempotentWrite,
    response: StoredResponse,
) -> Result<(), DbErr> {
    record::Entity::update_many()
        .col_expr(record::Column::Status, Expr::value(i32::from(response.status)))
        .col_expr(record::Column::Body, Expr::value(response.body))
        .col_expr(record::Column::Location, Expr::value(response.location))
        .filter(the_key(write.owner.as_str(), write.key.as_str()))
        .exec(txn)
        .await
        .map(drop)
}

async fn create_pet(
    txn: &DatabaseTransaction,
    write: IdempotentWrite,
    pet: NewPet,
    render: RenderPet,
) -> Result<Idempotent<Pet>, DbErr> {
    if let Some(record) = claim(txn, &write).await? {
        return Ok(Idempotent::Before(record));
    }
    let pet = super::pets::insert(txn, pet).await?;
    fill(txn, &write, render(&pet)).await?;
    Ok(Idempotent::Done(pet))
}

async fn place_order(
    txn: &DatabaseTransaction,
    write: IdempotentWrite,
    order: NewOrder,
    render: RenderOrder,
) -> Result<Idempotent<Result<Order, PlaceOrderError>>, DbErr> {
    if let Some(record) = claim(txn, &write).await? {
        return Ok(Idempotent::Before(record));
    }
    let placed = super::orders::place(txn, order).await?;
    match render(&placed) {
        Some(response) => fill(txn, &write, response).await?,
        // Not an outcome to store: the key is free again.
        None => {
            record::Entity::delete_many()
                .filter(the_key(write.owner.as_str(), write.key.as_str()))
                .exec(txn)
                .await?;
        }
    }
    Ok(Idempotent::Done(placed))
}

/// Adding a pet under an idempotency key: merged with the additions of its batch (see
/// [`batch`](super::batch)), or on its own, `create_pet` in the transaction, when another
/// job of the batch holds the same key.
struct AddKeyedPet {
    write: IdempotentWrite,
    pet: Option<NewPet>,
    render: Option<RenderPet>,
    alone: bool,
    record: Option<IdempotencyRecord>,
    output: Option<Idempotent<Pet>>,
    reply: Reply<Idempotent<Pet>>,
}

#[async_trait]
impl Job for AddKeyedPet {
    async fn run(&mut self, txn: &DatabaseTransaction) -> Result<(), DbErr> {
        if self.output.is_some() {
            return Ok(());
        }
        let (pet, render) = (self.pet.take(), self.render.take());
        let (Some(pet), Some(render)) = (pet, render) else {
            return Err(DbErr::Custom(JobMisused.to_string()));
        };
        self.output = Some(create_pet(txn, self.write.clone(), pet, render).await?);
        Ok(())
    }

    fn answer(self: Box<Self>, outcome: Result<(), RepositoryError>) {
        let Self { output, reply, .. } = *self;
        answer(reply, output, outcome);
    }

    fn pet(&self) -> Option<&NewPet> {
        if self.alone || self.output.is_some() { None } else { self.pet.as_ref() }
    }

    fn added(&mut self, id: PetId) {
        if let (Some(new), Some(render)) = (self.pet.take(), self.render.take()) {
            let pet = Pet::from_new(id, new);
            self.record = Some(IdempotencyRecord::of(self.write.clone(), render(&pet)));
            self.output = Some(Idempotent::Done(pet));
        }
    }

    fn keyed(&self) -> Option<&IdempotentWrite> {
        (self.output.is_none() && !self.alone).then_some(&self.write)
    }

    fn found(&mut self, record: IdempotencyRecord) {
        self.pet = None;
        self.record = None;
        self.output = Some(Idempotent::Before(record));
    }

    fn record(&self) -> Option<&IdempotencyRecord> {
        self.record.as_ref()
    }

    fn run_alone(&mut self) {
        self.alone = true;
    }
}

#[async_trait]
impl IdempotencyStore for SeaOrmIdempotencyStore {
    async fn find(
        &self,
        owner: &KeyId,
        key: &IdempotencyKey,
        now: DateTime<Utc>,
    ) -> Result<Option<IdempotencyRecord>, RepositoryError> {
        let query = record::Entity::find().filter(the_key(owner.as_str(), key.as_str()));
        let row = self.reads.run(query.one(&self.readers)).await?;
        let record = row.map(to_record).transpose()?;
        Ok(record.filter(|record| !record.is_expired(now)))
    }

    async fn create_pet(
        &self,
        write: IdempotentWrite,
        pet: NewPet,
        render: RenderPet,
    ) -> Result<Idempotent<Pet>, RepositoryError> {
        self.writer
            .submit(|reply| {
                Box::new(AddKeyedPet {
                    write,
                    pet: Some(pet),
                    render: Some(render),
                    alone: false,
                    record: None,
                    output: None,
                    reply,
                })
            })
            .await
    }

    async fn place_order(
        &self,
        write: IdempotentWrite,
        order: NewOrder,
        render: RenderOrder,
    ) -> Result<Idempotent<Result<Order, PlaceOrderError>>, RepositoryError> {
        self.writer.write(move |txn| Box::pin(place_order(txn, write, order, render))).await
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
            .limit(limit)
            .into_tuple::<(String, String)>();
        let keys = self.reads.run(expired.all(&self.readers)).await?;
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
