//! Adding pets, with or without an idempotency key: the additions of one batch of the writer
//! (see [`writer`](crate::sql::writer::thread)) merged into a few statements.
//!
//! Under load most jobs of a batch add one pet. Run one after the other, each would cost the
//! writer a round trip per statement; here they share two:
//!
//! - SQLite: one `INSERT` adds every pet (the rows of one statement get consecutive row
//!   ids), then one statement claims the keys with their complete records
//!   ([`claim_all`](crate::sql::rows::records::claim_all)). A key another write claimed first (a
//!   retry) is rare: its pet is deleted again, in the same transaction, and the addition
//!   answers the key's record instead.
//! - PostgreSQL: one query takes the pets' ids from the table's sequence, then one statement
//!   adds every pet and claims the keys with their complete records (the pets' `INSERT` in a
//!   data-modifying `WITH`, one round trip for both). The pet of a key claimed before is
//!   deleted again, as on SQLite.
//!
//! A key held by two additions of one batch is claimed by the first; the other is added on
//! its own, after the merged statements, and finds the first one's record. A batch whose
//! only addition is a plain one adds it on its own: one statement either way.

use std::collections::HashSet;
use std::sync::Arc;

use animal_store_domain::{
    AnswerEncoder, IdempotencyRecord, IdempotentWrite, KeyUse, NewEvent, NewPet, Pet, PetId,
    StoredAnswer,
};
use chrono::{DateTime, Utc};
use sea_orm::sea_query::InsertStatement;
use sea_orm::{ConnectionTrait, DatabaseTransaction, DbBackend, DbErr};

use crate::sql::rows;
use crate::sql::rows::records::{claim, claim_all, fill};
use crate::sql::writer::thread::{JobMisused, Reply, reply};

/// Adding one pet: a caller's share of a transaction.
pub(crate) struct Addition {
    /// The pet to add, until it is added.
    pet: Option<NewPet>,
    /// When it was asked for: the time of its event.
    at: DateTime<Utc>,
    /// The key it is added under, if any.
    keyed: Option<Keyed>,
    /// What it did, once it ran.
    output: Option<KeyUse<Pet>>,
    caller: Caller,
}

/// An addition's idempotency key, and the answer stored in the key's record.
struct Keyed {
    write: IdempotentWrite,
    answers: Arc<dyn AnswerEncoder>,
    /// Encoded when the pet is added.
    answer: Option<StoredAnswer>,
}

/// Where an addition's caller waits.
enum Caller {
    Plain(Reply<Pet>),
    Keyed(Reply<KeyUse<(Pet, StoredAnswer)>>),
}

impl Addition {
    /// Adding `pet`, asked for `at`.
    pub(crate) fn plain(pet: NewPet, at: DateTime<Utc>, reply: Reply<Pet>) -> Self {
        Self { pet: Some(pet), at, keyed: None, output: None, caller: Caller::Plain(reply) }
    }

    /// Adding `pet` under `write`'s key, unless the key has an unexpired record: its answer
    /// encoded by `answers` and stored with it.
    pub(crate) fn keyed(
        write: IdempotentWrite,
        pet: NewPet,
        answers: Arc<dyn AnswerEncoder>,
        reply: Reply<KeyUse<(Pet, StoredAnswer)>>,
    ) -> Self {
        Self {
            pet: Some(pet),
            at: write.at,
            keyed: Some(Keyed { write, answers, answer: None }),
            output: None,
            caller: Caller::Keyed(reply),
        }
    }

    /// Answers the caller once the transaction has ended (see
    /// [`Work::finish`](crate::sql::writer::thread::Work::finish)).
    pub(crate) fn finish(self, outcome: Result<(), animal_store_domain::RepositoryError>) {
        let Self { output, caller, keyed, .. } = self;
        match caller {
            Caller::Keyed(to) => {
                let answer = keyed.and_then(|keyed| keyed.answer);
                let output = output.and_then(|done| match done {
                    KeyUse::First(pet) => answer.map(|answer| KeyUse::First((pet, answer))),
                    KeyUse::Again(record) => Some(KeyUse::Again(record)),
                });
                reply(to, output, outcome);
            }
            // A plain addition always adds its pet.
            Caller::Plain(to) => {
                let pet = output.and_then(|done| match done {
                    KeyUse::First(pet) => Some(pet),
                    KeyUse::Again(_) => None,
                });
                reply(to, pet, outcome);
            }
        }
    }

    /// The pet to add.
    fn new_pet(&self) -> Result<&NewPet, DbErr> {
        self.pet.as_ref().ok_or_else(misused)
    }

    /// Records the id the batch's statement gave the pet, and returns the record to claim
    /// its key with, if it has one.
    fn added(&mut self, id: PetId) -> Result<Option<IdempotencyRecord>, DbErr> {
        let pet = Pet::from_new(id, self.pet.take().ok_or_else(misused)?);
        let record = match &mut self.keyed {
            Some(Keyed { write, answers, answer }) => {
                let encoded = answer.insert(answers.pet_created(&pet));
                Some(IdempotencyRecord::of(write.clone(), encoded.clone()))
            }
            None => None,
        };
        self.output = Some(KeyUse::First(pet));
        Ok(record)
    }

    /// The event of the pet this addition created, once the batch's statements ran: none
    /// when its key was claimed before.
    pub(crate) fn event(&self) -> Option<NewEvent> {
        match &self.output {
            Some(KeyUse::First(pet)) => Some(NewEvent::pet_created(pet.clone(), self.at)),
            _ => None,
        }
    }

    /// The pet added, once it is.
    fn pet_added(&self) -> Result<&Pet, DbErr> {
        match &self.output {
            Some(KeyUse::First(pet)) => Ok(pet),
            _ => Err(misused()),
        }
    }

    /// Adds the pet on its own, with its own statements.
    async fn add_alone(&mut self, txn: &DatabaseTransaction) -> Result<(), DbErr> {
        let new = self.pet.take().ok_or_else(misused)?;
        let Some(Keyed { write, answers, answer }) = &mut self.keyed else {
            self.output = Some(KeyUse::First(rows::pets::insert(txn, new).await?));
            return Ok(());
        };
        if let Some(record) = claim(txn, write).await? {
            self.output = Some(KeyUse::Again(record));
            return Ok(());
        }
        let pet = rows::pets::insert(txn, new).await?;
        fill(txn, write, answer.insert(answers.pet_created(&pet))).await?;
        self.output = Some(KeyUse::First(pet));
        Ok(())
    }
}

fn misused() -> DbErr {
    DbErr::Custom(JobMisused.to_string())
}

/// In `txn`: adds the pets of `additions`, the additions of one batch in order, with their
/// idempotency records; each has its output then.
pub(crate) async fn add_all(
    txn: &DatabaseTransaction,
    additions: Vec<&mut Addition>,
) -> Result<(), DbErr> {
    if additions.is_empty() {
        return Ok(());
    }
    let (mut merged, alone) = first_of_each_key(additions);
    let keyed = merged.iter().any(|addition| addition.keyed.is_some());
    if merged.len() >= 2 || keyed {
        match txn.get_database_backend() {
            DbBackend::Postgres => postgres(txn, &mut merged).await?,
            _ => sqlite(txn, &mut merged).await?,
        }
    } else {
        for addition in merged {
            addition.add_alone(txn).await?;
        }
    }
    for addition in alone {
        addition.add_alone(txn).await?;
    }
    Ok(())
}

/// Splits `additions` into those merged into the batch's statements and those added alone
/// afterwards: the later additions under a key another addition of the batch holds.
fn first_of_each_key(additions: Vec<&mut Addition>) -> (Vec<&mut Addition>, Vec<&mut Addition>) {
    let mut held = HashSet::new();
    additions.into_iter().partition(|addition| match &addition.keyed {
        Some(Keyed { write, .. }) => held
            .insert((write.owner.as_str().to_owned(), write.idempotency_key.as_str().to_owned())),
        None => true,
    })
}

/// On SQLite: one statement adds the pets of `merged`, additions under distinct keys, and
/// one claims their keys.
async fn sqlite(txn: &DatabaseTransaction, merged: &mut [&mut Addition]) -> Result<(), DbErr> {
    let new = merged.iter().map(|addition| addition.new_pet()).collect::<Result<Vec<_>, _>>()?;
    let ids = rows::pets::sqlite_insert_many(txn, &new).await?;
    let records = added(merged, &ids)?;
    claim_keys(txn, merged, &ids, &records, None).await
}

async fn postgres(txn: &DatabaseTransaction, merged: &mut [&mut Addition]) -> Result<(), DbErr> {
    let ids = rows::pets::take_postgres_ids(txn, merged.len()).await?;
    let records = added(merged, &ids)?;
    let pets = merged.iter().map(|addition| addition.pet_added()).collect::<Result<Vec<_>, _>>()?;
    let pet_rows = rows::pets::postgres_rows(&pets);
    claim_keys(txn, merged, &ids, &records, Some(pet_rows)).await
}

/// Hands each of `merged` its id; returns their records, for those added under a key.
fn added(
    merged: &mut [&mut Addition],
    ids: &[PetId],
) -> Result<Vec<Option<IdempotencyRecord>>, DbErr> {
    merged.iter_mut().zip(ids).map(|(addition, &id)| addition.added(id)).collect()
}

/// Claims the keys of `records` (one for each of `merged`, whose pets have `ids`) with one
/// statement, beside `alongside`. Every addition whose key was claimed before answers that
/// record, and its pet is deleted again.
async fn claim_keys(
    txn: &DatabaseTransaction,
    merged: &mut [&mut Addition],
    ids: &[PetId],
    records: &[Option<IdempotencyRecord>],
    alongside: Option<InsertStatement>,
) -> Result<(), DbErr> {
    let claiming: Vec<&IdempotencyRecord> = records.iter().flatten().collect();
    let before = claim_all(txn, &claiming, alongside).await?;
    let lost = answer_claimed(merged, ids, records, before);
    rows::pets::delete(txn, &lost).await
}

/// Once the keys of `records` (one for each of `merged`, whose pets have `ids`) were
/// claimed: every addition whose key was claimed `before` answers that record. Returns the
/// ids of their pets, to delete again.
fn answer_claimed(
    merged: &mut [&mut Addition],
    ids: &[PetId],
    records: &[Option<IdempotencyRecord>],
    before: Vec<Option<IdempotencyRecord>>,
) -> Vec<PetId> {
    let keyed = (0..records.len()).filter(|&n| records[n].is_some());
    let mut lost = Vec::new();
    for (n, record) in keyed.zip(before) {
        if let Some(record) = record {
            merged[n].output = Some(KeyUse::Again(record));
            lost.push(ids[n]);
        }
    }
    lost
}
