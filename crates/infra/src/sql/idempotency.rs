//! Idempotency records over SeaORM.
//!
//! A write sent with an `Idempotency-Key` runs as one job of the database's writer (see
//! [`writer`](super::writer)), in one transaction: it claims the key by inserting its record
//! (`INSERT ... ON CONFLICT DO UPDATE ... WHERE` the record there has expired, see
//! [`claim_all`]), does the work, then fills the record in with the response. A key already
//! claimed inserts nothing, and the job returns the record instead of doing the work. On
//! PostgreSQL, a second process claiming the same key waits on the first one's row until it
//! commits, then finds the record: one of them does the work.
//!
//! Keyed additions of pets are merged with the other additions of their batch (see
//! [`batch`](super::batch)): their records are complete when they claim their keys, and one
//! statement claims all of them.

use std::collections::HashMap;
use std::sync::Arc;

use animal_store_domain::{
    Fingerprint, IdempotencyKey, IdempotencyRecord, IdempotencyStore, Idempotent, IdempotentWrite,
    KeyId, NewOrder, NewPet, Order, Pet, PetId, PlaceOrderError, RenderOrder, RenderPet,
    RepositoryError, StoredResponse,
};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{
    CommonTableExpression, Expr, ExprTrait as _, InsertStatement, OnConflict, Query, WithClause,
};
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbErr,
    EntityTrait, QueryFilter, QuerySelect,
};

use super::corrupt;
use super::entity::idempotency_key as record;
use super::failure::in_write;
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

/// The records of any of `keys` (owner, key).
fn any_key<'k>(keys: impl IntoIterator<Item = (&'k str, &'k str)>) -> Condition {
    keys.into_iter().fold(Condition::any(), |any, (owner, key)| any.add(the_key(owner, key)))
}

/// In `txn`: claims the keys of `records` by inserting them, each in place of an expired
/// record of its key, and returns, for each of `records` in order, the record of its key
/// when another write claimed it before (its key then has an unexpired record, or another
/// transaction claimed it first; on PostgreSQL this waits for that one to end). The rows go
/// in the order of their keys, so that two transactions claiming the same keys take their
/// locks in one order.
///
/// One statement, which streams nothing back, when every key is free, as under load; when
/// it changed fewer rows than it was given, one more reads the keys' records: those that are
/// not `records`' own were claimed before.
///
/// `alongside`, on PostgreSQL only, is another insert run by the same statement (a
/// data-modifying `WITH`): one round trip for both. It runs whatever the claim finds.
pub(super) async fn claim_all(
    txn: &DatabaseTransaction,
    records: &[&IdempotencyRecord],
    alongside: Option<InsertStatement>,
) -> Result<Vec<Option<IdempotencyRecord>>, DbErr> {
    let backend = txn.get_database_backend();
    if records.is_empty() {
        if let Some(other) = alongside {
            txn.execute_raw(backend.build(&other)).await?;
        }
        return Ok(Vec::new());
    }
    let mut insert = claim_statement(records)?;
    if let Some(other) = alongside {
        let cte = CommonTableExpression::new().query(other).table_name(ALONGSIDE).to_owned();
        insert.with_cte(WithClause::new().cte(cte).to_owned());
    }
    let done = txn.execute_raw(backend.build(&insert)).await?;
    if done.rows_affected() == u64::try_from(records.len()).unwrap_or(u64::MAX) {
        return Ok(vec![None; records.len()]);
    }
    claimed_before(txn, records).await
}

/// The statement that claims the keys of `records` (see [`claim_all`]), its rows in the
/// order of their keys.
fn claim_statement(
    records: &[&IdempotencyRecord],
) -> Result<sea_orm::sea_query::InsertStatement, DbErr> {
    let mut sorted = records.to_vec();
    sorted.sort_by_key(|record| (record.owner.as_str(), record.key.as_str()));
    let retention = chrono::Duration::from_std(animal_store_domain::idempotency::RETENTION)
        .map_err(|e| DbErr::Custom(e.to_string()))?;
    // Expired for every write of the statement: a record within the second or so the
    // batch's writes arrived in of its end is still answered.
    let first = sorted.iter().map(|record| record.created_at).min().unwrap_or_default();
    let expired = Expr::col((record::Entity, record::Column::CreatedAt)).lte(first - retention);
    let mut insert = Query::insert();
    insert.into_table(record::Entity).columns(COLUMNS);
    for record in sorted {
        insert.values_panic(row(record));
    }
    insert.on_conflict(
        OnConflict::columns([record::Column::Owner, record::Column::Key])
            .update_columns(COLUMNS.into_iter().skip(2))
            .action_and_where(expired)
            .to_owned(),
    );
    Ok(insert)
}

/// In `txn`, once `records` tried to claim their keys: for each of them in order, the record
/// of its key when it is not that one, which another write claimed before.
async fn claimed_before(
    txn: &DatabaseTransaction,
    records: &[&IdempotencyRecord],
) -> Result<Vec<Option<IdempotencyRecord>>, DbErr> {
    let keys: Vec<(&str, &str)> =
        records.iter().map(|record| (record.owner.as_str(), record.key.as_str())).collect();
    let mut stored: HashMap<(String, String), IdempotencyRecord> = records_of(txn, &keys)
        .await?
        .into_iter()
        .map(|record| ((record.owner.as_str().to_owned(), record.key.as_str().to_owned()), record))
        .collect();
    records
        .iter()
        .map(|&ours| {
            let id = (ours.owner.as_str().to_owned(), ours.key.as_str().to_owned());
            match stored.remove(&id) {
                Some(record) if record == *ours => Ok(None),
                Some(record) => Ok(Some(record)),
                None => Err(DbErr::Custom("a claimed key has no record".to_owned())),
            }
        })
        .collect()
}

/// The name of the insert a claim runs [`claim_all`]'s `alongside`.
const ALONGSIDE: &str = "alongside";

/// The columns of a record, the key's two first.
const COLUMNS: [record::Column; 7] = [
    record::Column::Owner,
    record::Column::Key,
    record::Column::Fingerprint,
    record::Column::Status,
    record::Column::Body,
    record::Column::Location,
    record::Column::CreatedAt,
];

/// The values of `record`, in the order of [`COLUMNS`].
fn row(record: &IdempotencyRecord) -> [Expr; 7] {
    [
        record.owner.as_str().into(),
        record.key.as_str().into(),
        record.fingerprint.to_bytes().to_vec().into(),
        i32::from(record.response.status).into(),
        record.response.body.as_str().into(),
        record.response.location.clone().into(),
        record.created_at.into(),
    ]
}

/// In `txn`: the records of `keys` (owner, key), which some transaction has claimed.
async fn records_of(
    txn: &DatabaseTransaction,
    keys: &[(&str, &str)],
) -> Result<Vec<IdempotencyRecord>, DbErr> {
    let rows = record::Entity::find().filter(any_key(keys.iter().copied())).all(txn).await?;
    rows.into_iter().map(|row| to_record(row).map_err(|e| in_write(&e))).collect()
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
