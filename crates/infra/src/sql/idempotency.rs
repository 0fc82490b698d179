//! Idempotency records over SeaORM.
//!
//! A write sent with an `Idempotency-Key` runs as one job of the database's writer (see
//! [`writer`](super::writer)), in one transaction: it claims the key by inserting its record
//! (`INSERT ... ON CONFLICT DO NOTHING`, after removing an expired record of the key), does
//! the work, then fills the record in with the response. A key already claimed inserts
//! nothing, and the job returns the record instead of doing the work. On PostgreSQL, a second
//! process claiming the same key waits on the first one's row until it commits, then finds
//! the record: one of them does the work.
//!
//! On SQLite the writer merges keyed additions of pets into its batch: one query looks the
//! batch's keys up, the pets whose key is free are added by the batch's one `INSERT`, and
//! their records by one more ([`look_up_keys`], [`insert_records`]).

use std::sync::Arc;

use animal_store_domain::{
    Fingerprint, IdempotencyKey, IdempotencyRecord, IdempotencyStore, Idempotent, IdempotentWrite,
    KeyId, NewOrder, NewPet, Order, Pet, PetId, PlaceOrderError, RenderOrder, RenderPet,
    RepositoryError, StoredResponse,
};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait as _, OnConflict, Query};
use sea_orm::{
    ColumnTrait, Condition, DatabaseConnection, DatabaseTransaction, DbErr, EntityTrait,
    QueryFilter, Set,
};

use super::corrupt;
use super::entity::idempotency_key as record;
use super::failure::in_write;
use super::reachability::Reads;
use super::writer::{Job, JobMisused, Reply, Writer, answer};

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

fn to_record(row: record::Model) -> Result<IdempotencyRecord, RepositoryError> {
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

fn of_key(write: &IdempotentWrite) -> sea_orm::Select<record::Entity> {
    record::Entity::find().filter(the_key(write.owner.as_str(), write.key.as_str()))
}

/// In `txn`: claims `write`'s key, or returns its unexpired record.
async fn claim(
    txn: &DatabaseTransaction,
    write: &IdempotentWrite,
) -> Result<Option<IdempotencyRecord>, DbErr> {
    let retention = chrono::Duration::from_std(animal_store_domain::idempotency::RETENTION)
        .map_err(|e| DbErr::Custom(e.to_string()))?;
    record::Entity::delete_many()
        .filter(the_key(write.owner.as_str(), write.key.as_str()))
        .filter(record::Column::CreatedAt.lte(write.at - retention))
        .exec(txn)
        .await?;
    let placeholder = record::ActiveModel {
        owner: Set(write.owner.as_str().to_owned()),
        key: Set(write.key.as_str().to_owned()),
        fingerprint: Set(write.fingerprint.to_bytes().to_vec()),
        status: Set(0),
        body: Set(String::new()),
        location: Set(None),
        created_at: Set(write.at),
    };
    let conflict =
        OnConflict::columns([record::Column::Owner, record::Column::Key]).do_nothing().to_owned();
    let inserted = record::Entity::insert(placeholder)
        .on_conflict(conflict)
        .exec_without_returning(txn)
        .await?;
    if inserted > 0 {
        return Ok(None);
    }
    let row = of_key(write)
        .one(txn)
        .await?
        .ok_or_else(|| DbErr::Custom("a claimed key has no record".to_owned()))?;
    to_record(row).map(Some).map_err(|e| in_write(&e))
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

/// Adding a pet under an idempotency key: on its own, `create_pet` in the transaction; on
/// SQLite, merged with the additions of its batch when its key is free (see
/// [`look_up_keys`]).
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
        self.output = Some(Idempotent::Before(record));
    }

    fn record(&self) -> Option<&IdempotencyRecord> {
        self.record.as_ref()
    }

    fn run_alone(&mut self) {
        self.alone = true;
    }
}

/// On SQLite, before the batch's pets are added together: looks the keys of the batch's
/// keyed additions up with one query. A key with an unexpired record gets it and adds
/// nothing; an expired record is removed; a key a job of the batch already holds runs alone,
/// after the others, and finds that job's record.
pub(super) async fn look_up_keys(
    txn: &DatabaseTransaction,
    batch: &mut [Box<dyn Job>],
) -> Result<(), DbErr> {
    let keys: Vec<(String, String, DateTime<Utc>)> = batch
        .iter()
        .filter_map(|job| job.keyed())
        .map(|write| (write.owner.as_str().to_owned(), write.key.as_str().to_owned(), write.at))
        .collect();
    if keys.is_empty() {
        return Ok(());
    }
    let any_of = |keys: &[(String, String, DateTime<Utc>)]| {
        keys.iter().fold(Condition::any(), |any, (owner, key, _)| any.add(the_key(owner, key)))
    };
    let rows = record::Entity::find().filter(any_of(&keys)).all(txn).await?;
    let mut stored = std::collections::HashMap::new();
    for row in rows {
        let record = to_record(row).map_err(|e| in_write(&e))?;
        stored.insert((record.owner.as_str().to_owned(), record.key.as_str().to_owned()), record);
    }
    let mut expired = Vec::new();
    let mut held = std::collections::HashSet::new();
    for job in batch.iter_mut() {
        let Some(write) = job.keyed() else { continue };
        let id = (write.owner.as_str().to_owned(), write.key.as_str().to_owned());
        match stored.get(&id) {
            Some(record) if !record.is_expired(write.at) => job.found(record.clone()),
            found => {
                if found.is_some() {
                    expired.push((id.0.clone(), id.1.clone(), write.at));
                }
                if !held.insert(id) {
                    job.run_alone();
                }
            }
        }
    }
    if !expired.is_empty() {
        record::Entity::delete_many().filter(any_of(&expired)).exec(txn).await?;
    }
    Ok(())
}

/// On SQLite, once the batch's pets are added: inserts the records of its keyed additions
/// with one statement.
pub(super) async fn insert_records(
    txn: &DatabaseTransaction,
    batch: &mut [Box<dyn Job>],
) -> Result<(), DbErr> {
    let rows: Vec<record::ActiveModel> = batch
        .iter()
        .filter_map(|job| job.record())
        .map(|record| record::ActiveModel {
            owner: Set(record.owner.as_str().to_owned()),
            key: Set(record.key.as_str().to_owned()),
            fingerprint: Set(record.fingerprint.to_bytes().to_vec()),
            status: Set(i32::from(record.response.status)),
            body: Set(record.response.body.clone()),
            location: Set(record.response.location.clone()),
            created_at: Set(record.created_at),
        })
        .collect();
    if rows.is_empty() {
        return Ok(());
    }
    record::Entity::insert_many(rows).exec_without_returning(txn).await.map(drop)
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

    async fn sweep(&self, before: DateTime<Utc>, batch: usize) -> Result<usize, RepositoryError> {
        let limit = u64::try_from(batch).unwrap_or(u64::MAX);
        self.writer
            .write(move |txn| {
                Box::pin(async move {
                    let oldest = Query::select()
                        .columns([record::Column::Owner, record::Column::Key])
                        .from(record::Entity)
                        .and_where(record::Column::CreatedAt.lt(before))
                        .order_by(record::Column::CreatedAt, sea_orm::Order::Asc)
                        .limit(limit)
                        .to_owned();
                    let done = record::Entity::delete_many()
                        .filter(
                            Expr::tuple([
                                Expr::col(record::Column::Owner),
                                Expr::col(record::Column::Key),
                            ])
                            .in_subquery(oldest),
                        )
                        .exec(txn)
                        .await?;
                    Ok(usize::try_from(done.rows_affected).unwrap_or(usize::MAX))
                })
            })
            .await
    }
}
