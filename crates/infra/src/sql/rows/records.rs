//! The rows of the idempotency records' table, and the statements that write them inside the
//! writer's transactions: claiming keys (many records inserted by one statement, each in
//! place of an expired record of its key, and what another write claimed before), filling a
//! claimed record in, and freeing a key.

use std::collections::HashMap;

use animal_store_domain::{
    Fingerprint, IdempotencyKey, IdempotencyRecord, IdempotentWrite, KeyId, RepositoryError,
    StoredAnswer,
};
use sea_orm::sea_query::{
    CommonTableExpression, Expr, ExprTrait as _, InsertStatement, OnConflict, Query, WithClause,
};
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, DatabaseTransaction, DbErr, EntityTrait, QueryFilter,
};

use crate::sql::connection::failure::{corrupt, in_write};
use crate::sql::schema::entity::idempotency_key as record;

/// The record a row holds.
fn to_record(row: record::Model) -> Result<IdempotencyRecord, RepositoryError> {
    let record::Model { owner, key, fingerprint, answer, status, body, location, created_at } = row;
    let fingerprint: [u8; 32] = fingerprint
        .try_into()
        .map_err(|_| corrupt("idempotency_keys", "a fingerprint of another length"))?;
    let answer = match answer {
        Some(answer) => StoredAnswer::new(answer),
        None => previous_release::answer(status, &body, location.as_deref()),
    };
    Ok(IdempotencyRecord {
        owner: KeyId::new(&owner).map_err(|e| corrupt("idempotency_keys", e))?,
        idempotency_key: IdempotencyKey::new(&key).map_err(|e| corrupt("idempotency_keys", e))?,
        fingerprint: Fingerprint::from_bytes(fingerprint),
        answer,
        created_at,
    })
}

/// The record of `owner`'s `key`.
fn the_key(owner: &str, key: &str) -> Condition {
    Condition::all().add(record::Column::Owner.eq(owner)).add(record::Column::Key.eq(key))
}

/// The records of any of `keys` (owner, key).
pub(crate) fn any_key<'k>(keys: impl IntoIterator<Item = (&'k str, &'k str)>) -> Condition {
    keys.into_iter().fold(Condition::any(), |any, (owner, key)| any.add(the_key(owner, key)))
}

/// In `txn`: claims `write`'s key with a record to fill in later (see [`fill`]), or returns
/// its unexpired record.
pub(crate) async fn claim(
    txn: &DatabaseTransaction,
    write: &IdempotentWrite,
) -> Result<Option<IdempotencyRecord>, DbErr> {
    let placeholder = IdempotencyRecord::of(write.clone(), StoredAnswer::new(Vec::new()));
    Ok(claim_all(txn, &[&placeholder], None).await?.pop().flatten())
}

/// In `txn`: fills the claimed record of `write` in with `answer`.
pub(crate) async fn fill(
    txn: &DatabaseTransaction,
    write: &IdempotentWrite,
    answer: &StoredAnswer,
) -> Result<(), DbErr> {
    let (status, body, location) = previous_release::columns(answer);
    record::Entity::update_many()
        .col_expr(record::Column::Answer, Expr::value(answer.as_bytes().to_vec()))
        .col_expr(record::Column::Status, Expr::value(status))
        .col_expr(record::Column::Body, Expr::value(body))
        .col_expr(record::Column::Location, Expr::value(location))
        .filter(the_key(write.owner.as_str(), write.idempotency_key.as_str()))
        .exec(txn)
        .await
        .map(drop)
}

/// In `txn`: frees the key `write` claimed, with its record.
pub(crate) async fn free(txn: &DatabaseTransaction, write: &IdempotentWrite) -> Result<(), DbErr> {
    record::Entity::delete_many()
        .filter(the_key(write.owner.as_str(), write.idempotency_key.as_str()))
        .exec(txn)
        .await
        .map(drop)
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
pub(crate) async fn claim_all(
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
    claimed_before(records, records_of(txn, &keys(records)).await?)
}

/// The statement that claims the keys of `records` (see [`claim_all`]), its rows in the
/// order of their keys.
fn claim_statement(records: &[&IdempotencyRecord]) -> Result<InsertStatement, DbErr> {
    let mut sorted = records.to_vec();
    sorted.sort_by_key(|record| (record.owner.as_str(), record.idempotency_key.as_str()));
    let retention = chrono::Duration::from_std(animal_store_domain::idempotency::model::RETENTION)
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

/// The keys (owner, key) of `records`.
fn keys<'r>(records: &[&'r IdempotencyRecord]) -> Vec<(&'r str, &'r str)> {
    records.iter().map(|record| (record.owner.as_str(), record.idempotency_key.as_str())).collect()
}

/// Once `records` tried to claim their keys, whose records are `stored` now: for each of
/// them in order, the record of its key when it is not that one, which another write
/// claimed before. A record is told from another by its content: an answer names what its
/// write created (a new pet's id; an unfilled record's is empty), so two writes never store
/// the same record.
fn claimed_before(
    records: &[&IdempotencyRecord],
    stored: Vec<IdempotencyRecord>,
) -> Result<Vec<Option<IdempotencyRecord>>, DbErr> {
    let mut stored: HashMap<(String, String), IdempotencyRecord> = stored
        .into_iter()
        .map(|record| {
            ((record.owner.as_str().to_owned(), record.idempotency_key.as_str().to_owned()), record)
        })
        .collect();
    records
        .iter()
        .map(|&ours| {
            let id = (ours.owner.as_str().to_owned(), ours.idempotency_key.as_str().to_owned());
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
const COLUMNS: [record::Column; 8] = [
    record::Column::Owner,
    record::Column::Key,
    record::Column::Fingerprint,
    record::Column::Answer,
    record::Column::Status,
    record::Column::Body,
    record::Column::Location,
    record::Column::CreatedAt,
];

/// The values of `record`, in the order of [`COLUMNS`].
fn row(record: &IdempotencyRecord) -> [Expr; 8] {
    let (status, body, location) = previous_release::columns(&record.answer);
    [
        record.owner.as_str().into(),
        record.idempotency_key.as_str().into(),
        record.fingerprint.to_bytes().to_vec().into(),
        record.answer.as_bytes().to_vec().into(),
        status.into(),
        body.into(),
        location.into(),
        record.created_at.into(),
    ]
}

/// In `txn`: the records of `keys` (owner, key), which some transaction has claimed.
async fn records_of(
    txn: &DatabaseTransaction,
    keys: &[(&str, &str)],
) -> Result<Vec<IdempotencyRecord>, DbErr> {
    to_records(find_keys(keys).all(txn).await?)
}

/// The query of the records of `keys` (owner, key).
fn find_keys(keys: &[(&str, &str)]) -> sea_orm::Select<record::Entity> {
    record::Entity::find().filter(any_key(keys.iter().copied()))
}

/// The records `rows` hold, read inside a write's transaction.
fn to_records(rows: Vec<record::Model>) -> Result<Vec<IdempotencyRecord>, DbErr> {
    rows.into_iter().map(|row| to_record(row).map_err(|e| in_write(&e))).collect()
}

/// The columns the release before this one reads and writes a record's answer in (`status`,
/// `body`, `location`), kept filled while both may run on one database (see
/// `docs/operations.md#upgrades`). This is the one place outside the API that reads its
/// answers' encoding: the status and the `Location` on the first line (`201 /v1/pets/7`),
/// the body after it.
///
/// Contract: once no binary before the `answer` column runs, a `Contract` migration drops
/// these columns, and this module goes with them.
mod previous_release {
    use animal_store_domain::StoredAnswer;

    /// The status, body and `Location` of `answer`, as the release before stores them; an
    /// empty answer (a key claimed, not yet filled in) has the status 0.
    pub(super) fn columns(answer: &StoredAnswer) -> (i32, String, Option<String>) {
        let text = String::from_utf8_lossy(answer.as_bytes());
        let (head, body) = text.split_once('\n').unwrap_or((&text, ""));
        let (status, location) = head.split_once(' ').unwrap_or((head, ""));
        let location = (!location.is_empty()).then(|| location.to_owned());
        (status.parse().unwrap_or(0), body.to_owned(), location)
    }

    /// The answer of a record the release before stored.
    pub(super) fn answer(status: i32, body: &str, location: Option<&str>) -> StoredAnswer {
        let location = location.unwrap_or_default();
        StoredAnswer::new(format!("{status} {location}\n{body}").into_bytes())
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn the_columns_of_an_answer_give_it_back() {
            let created = answer(201, r#"{"id":7}"#, Some("/v1/pets/7"));
            assert_eq!(created.as_bytes(), b"201 /v1/pets/7\n{\"id\":7}");
            assert_eq!(
                columns(&created),
                (201, r#"{"id":7}"#.to_owned(), Some("/v1/pets/7".into()))
            );
            let refused = answer(409, "{}", None);
            assert_eq!(columns(&refused), (409, "{}".to_owned(), None));
            assert_eq!(columns(&StoredAnswer::new(Vec::new())), (0, String::new(), None));
        }
    }
}
