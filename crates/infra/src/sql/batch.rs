//! The additions of pets of one batch, merged into a few statements.
//!
//! Under load most jobs of a batch (see [`writer`](super::writer)) add one pet, with or
//! without an idempotency key. Run one after the other, each would cost the writer a round
//! trip per statement; here they share two:
//!
//! - SQLite: one `INSERT` adds every pet (the rows of one statement get consecutive row ids),
//!   then one statement claims the keys with their complete records
//!   ([`claim_all`](super::claim::claim_all)). A key another write claimed first (a
//!   retry) is rare: its pet is deleted again, in the same transaction, and the job answers
//!   the key's record instead.
//! - PostgreSQL: one query takes the pets' ids from the table's sequence, then one statement
//!   adds every pet and claims the keys with their complete records (the pets' `INSERT` in a
//!   data-modifying `WITH`, one round trip for both). The pet of a key claimed before is
//!   deleted again, as on SQLite.
//!
//! A key held by two jobs of one batch is claimed by the first; the other runs alone, after
//! the merged statements, and finds the first one's record. A batch whose only addition is
//! a plain one runs it alone: one statement either way.

use std::collections::HashSet;

use animal_store_domain::{IdempotencyRecord, NewPet, Pet, PetId};
use sea_orm::sea_query::InsertStatement;
use sea_orm::{ColumnTrait, DatabaseTransaction, DbErr, EntityTrait, QueryFilter};

use super::claim::claim_all;
use super::entity::pet;
use super::job::{Job, JobMisused};
use super::{Backend, pets};

/// Adds the pets of the jobs of `batch` that add one, with their idempotency records, and
/// hands each job its outcome; those jobs have run then.
pub(super) async fn add_pets(
    txn: &DatabaseTransaction,
    backend: Backend,
    batch: &mut [Box<dyn Job>],
) -> Result<(), DbErr> {
    hold_keys(batch);
    let adding: Vec<usize> = (0..batch.len()).filter(|&i| batch[i].pet().is_some()).collect();
    let keyed = adding.iter().any(|&i| batch[i].keyed().is_some());
    if adding.len() < 2 && !keyed {
        return Ok(());
    }
    match backend {
        Backend::Sqlite => sqlite(txn, batch, &adding).await,
        Backend::Postgres => postgres(txn, batch, &adding).await,
    }
}

/// Lets the first job of each key claim it; the later ones of the batch run alone.
fn hold_keys(batch: &mut [Box<dyn Job>]) {
    let mut held = HashSet::new();
    for job in batch.iter_mut() {
        let Some(write) = job.keyed() else { continue };
        if !held.insert((write.owner.as_str().to_owned(), write.key.as_str().to_owned())) {
            job.run_alone();
        }
    }
}

async fn sqlite(
    txn: &DatabaseTransaction,
    batch: &mut [Box<dyn Job>],
    adding: &[usize],
) -> Result<(), DbErr> {
    let new: Vec<&NewPet> = adding.iter().filter_map(|&i| batch[i].pet()).collect();
    let ids = pets::insert_sqlite_rows(txn, &new).await?;
    if ids.len() != adding.len() {
        return Err(DbErr::Custom(JobMisused.to_string()));
    }
    for (&i, &id) in adding.iter().zip(&ids) {
        batch[i].added(id);
    }
    let lost = claim(txn, batch, adding, None).await?;
    delete_lost(txn, &ids, &lost).await
}

async fn postgres(
    txn: &DatabaseTransaction,
    batch: &mut [Box<dyn Job>],
    adding: &[usize],
) -> Result<(), DbErr> {
    let ids = pets::take_postgres_ids(txn, adding.len()).await?;
    let mut rows = Vec::with_capacity(adding.len());
    for (&i, &id) in adding.iter().zip(&ids) {
        let new = batch[i].pet().cloned().ok_or_else(|| DbErr::Custom(JobMisused.to_string()))?;
        rows.push(Pet::from_new(id, new));
        batch[i].added(id);
    }
    let lost = claim(txn, batch, adding, Some(pets::postgres_rows(&rows))).await?;
    delete_lost(txn, &ids, &lost).await
}

/// Deletes the pets of the additions that lost their key (their places in `adding`), added
/// by the batch's statement all the same.
async fn delete_lost(
    txn: &DatabaseTransaction,
    ids: &[PetId],
    lost: &[usize],
) -> Result<(), DbErr> {
    if lost.is_empty() {
        return Ok(());
    }
    let unwanted = lost.iter().map(|&n| ids[n].get());
    pet::Entity::delete_many().filter(pet::Column::Id.is_in(unwanted)).exec(txn).await.map(drop)
}

/// Claims the keys of the added jobs' records with one statement. Every job whose key was
/// claimed before gets that record, and adds nothing; their places in `adding` are returned.
async fn claim(
    txn: &DatabaseTransaction,
    batch: &mut [Box<dyn Job>],
    adding: &[usize],
    alongside: Option<InsertStatement>,
) -> Result<Vec<usize>, DbErr> {
    let keyed: Vec<usize> =
        (0..adding.len()).filter(|&n| batch[adding[n]].record().is_some()).collect();
    let records: Vec<&IdempotencyRecord> =
        keyed.iter().filter_map(|&n| batch[adding[n]].record()).collect();
    let before = claim_all(txn, &records, alongside).await?;
    let mut lost = Vec::new();
    for (n, record) in keyed.into_iter().zip(before) {
        if let Some(record) = record {
            batch[adding[n]].found(record);
            lost.push(n);
        }
    }
    Ok(lost)
}
