//! Claims of webhook deliveries: which deliveries an instance takes, and their leases.
//!
//! On PostgreSQL the due rows are picked `FOR UPDATE SKIP LOCKED`, so that instances
//! claiming at once take different ones, and leased in the same transaction. On SQLite, which
//! one process serves, the leases are that process's own ([`Leases`]), and a claim is a read:
//! it takes nothing of the writer, which the requests' writes wait for. A leased delivery is
//! not due again until its lease ends. See [`deliveries`](super::deliveries).

use std::collections::{HashMap, HashSet};

use animal_store_domain::{ClaimLimits, EndpointId, KeyId};
use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseTransaction, DbBackend, DbErr, EntityTrait, QueryFilter,
    QueryResult, Statement,
};
use sea_query_rusqlite::rusqlite::{self, Connection};
use tokio::sync::Mutex;

use super::entity::{event, webhook_delivery as delivery, webhook_endpoint as endpoint};
use super::reader_threads::ReaderThreads;

/// The deliveries due: their next attempt due at `$now`, not leased (or their lease over),
/// to an enabled endpoint with room (not in `$busy`, nor of an owner in `$owners`).
const DUE: &str = "d.next_attempt_at <= $now \
     AND (d.leased_until IS NULL OR d.leased_until <= $now) \
     AND e.status = 'enabled' AND e.id NOT IN ($busy) AND e.owner NOT IN ($owners)";

/// The statement that picks the deliveries to claim on PostgreSQL (see [`DUE`]): each
/// enabled endpoint's, in a lateral subquery over the index of each endpoint's deliveries,
/// soonest due first, `FOR UPDATE SKIP LOCKED`, at most as many as one endpoint or one
/// owner may take (and no more than the whole claim: PostgreSQL locks every row the
/// subquery picks, and rows locked but not claimed would be skipped by the instances
/// claiming meanwhile).
fn postgres_due(now: DateTime<Utc>, limits: &ClaimLimits) -> Statement {
    let due = DUE
        .replace("$busy", &busy_list(limits))
        .replace("$owners", &full_owners(limits))
        .replace("$now", "$1");
    let count = i64::try_from(limits.count).unwrap_or(i64::MAX);
    let per = limits.per_endpoint.min(limits.per_owner);
    let per = Ord::min(i64::try_from(per).unwrap_or(i64::MAX), count);
    let sql = format!(
        "SELECT d.id, d.endpoint_id, d.event_id, d.attempts, e.owner FROM webhook_endpoints e \
         CROSS JOIN LATERAL (SELECT d.* FROM webhook_deliveries d \
             WHERE d.endpoint_id = e.id AND {due} \
             ORDER BY d.next_attempt_at, d.id LIMIT $2 FOR UPDATE OF d SKIP LOCKED) d \
         ORDER BY d.next_attempt_at, d.id LIMIT $3"
    );
    Statement::from_sql_and_values(DbBackend::Postgres, sql, [now.into(), per.into(), count.into()])
}

/// The deliveries to claim on SQLite, whose one process claims alone: the enabled endpoints
/// with room (see [`ClaimLimits`]) taken in turn, from one picked at random so that each
/// gets its share over the claims, and of each as many of its deliveries due at `now` (as
/// stored) as it and its owner have room for, soonest first, read from the index of each
/// endpoint's deliveries (one seek each), passing over those the process holds (`held`),
/// until the claim is full. However long an endpoint's queue, and however many wait for a
/// disabled one, a claim reads the first rows of the endpoints it takes from.
fn sqlite_due(
    connection: &Connection,
    now: &str,
    limits: &ClaimLimits,
    held: &HashSet<i64>,
) -> rusqlite::Result<Vec<Claimed>> {
    let enabled = format!(
        "SELECT id, owner FROM webhook_endpoints WHERE status = 'enabled' AND id NOT IN ({}) \
         AND owner NOT IN ({}) ORDER BY id",
        busy_list(limits),
        full_owners(limits),
    );
    let mut endpoints: Vec<(i64, String)> = connection
        .prepare(&enabled)?
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<Result<_, _>>()?;
    if !endpoints.is_empty() {
        let first = rand::random_range(0..endpoints.len());
        endpoints.rotate_left(first);
    }
    let mut due = connection.prepare_cached(
        "SELECT id, endpoint_id, event_id, attempts FROM webhook_deliveries \
         WHERE endpoint_id = ?1 AND next_attempt_at <= ?2 \
         AND (leased_until IS NULL OR leased_until <= ?2) \
         ORDER BY next_attempt_at, id LIMIT ?3",
    )?;
    let mut room = limits.clone();
    let mut claimed = Vec::new();
    for (endpoint, owner) in endpoints {
        let Ok(owner) = KeyId::new(&owner) else { continue };
        let left = limits.count.saturating_sub(claimed.len());
        let of_endpoint = room.room(EndpointId::new(endpoint), &owner).min(left);
        if left == 0 {
            break;
        }
        if of_endpoint == 0 {
            continue;
        }
        // Enough rows to take what it has room for past the ones this process holds already.
        let take = i64::try_from(of_endpoint + held.len()).unwrap_or(i64::MAX);
        let rows = due
            .query_map(rusqlite::params![endpoint, now, take], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
            })?
            .collect::<Result<Vec<Claimed>, _>>()?;
        let rows = rows.into_iter().map(|row| (row, owner.clone()));
        claimed.extend(pick(rows, left, &mut room, |id| held.contains(&id)));
    }
    Ok(claimed)
}

/// A time as SQLite's columns hold it: the text sqlx writes (RFC 3339, seconds and their
/// fraction as needed), which compares in time order with the text stored.
fn stored_time(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, false)
}

/// A claimed delivery: its id, endpoint, event, and the attempts made before.
pub(super) type Claimed = (i64, i64, i64, i32);

/// The leases of the deliveries an SQLite database's process claimed, by delivery: kept in
/// memory, for the process's own worker. One process serves an SQLite file, and its leases
/// end with it: a process that stops leaves its deliveries due at once to the next start.
#[derive(Default)]
pub(super) struct Leases(Mutex<HashMap<i64, DateTime<Utc>>>);

impl Leases {
    /// Ends the leases of `deliveries`.
    pub(super) async fn end(&self, deliveries: impl Iterator<Item = i64>) {
        let mut leases = self.0.lock().await;
        for delivery in deliveries {
            leases.remove(&delivery);
        }
    }
}

/// The endpoints that have no room left, as an SQL list (see [`id_list`]).
fn busy_list(limits: &ClaimLimits) -> String {
    id_list(&limits.full_endpoints().map(EndpointId::get).collect::<Vec<_>>())
}

/// The owners that have no room left, as an SQL list of strings: key ids are lowercase
/// letters and digits, which need no escaping; `''` (no owner's) for none.
fn full_owners(limits: &ClaimLimits) -> String {
    let owners: Vec<String> =
        limits.full_owners().map(|owner| format!("'{}'", owner.as_str())).collect();
    if owners.is_empty() { "''".to_owned() } else { owners.join(", ") }
}

/// Of the due `rows` and their owners, in their order, those to claim: up to `count`, each
/// within the room `room` has (taken as it is claimed), none that `held`.
fn pick(
    rows: impl IntoIterator<Item = (Claimed, KeyId)>,
    count: usize,
    room: &mut ClaimLimits,
    held: impl Fn(i64) -> bool,
) -> Vec<Claimed> {
    let mut claimed = Vec::new();
    for (row, owner) in rows {
        if claimed.len() == count {
            break;
        }
        if held(row.0) || !room.take(EndpointId::new(row.1), &owner) {
            continue;
        }
        claimed.push(row);
    }
    claimed
}

/// On SQLite, reading on `readers` (on the caller's thread when a connection is free):
/// leases up to `count` deliveries due at `now` (see [`sqlite_due`]) in `leases` until
/// `until`, and returns them. Claims take turns.
pub(super) async fn claim_on_sqlite(
    readers: &ReaderThreads,
    leases: &Leases,
    (now, until): (DateTime<Utc>, DateTime<Utc>),
    limits: ClaimLimits,
) -> Result<Vec<Claimed>, DbErr> {
    let mut leases = leases.0.lock().await;
    leases.retain(|_, ends| *ends > now);
    let held: HashSet<i64> = leases.keys().copied().collect();
    let now_text = stored_time(now);
    let claimed = readers.run(move |connection| sqlite_due(connection, &now_text, &limits, &held));
    let claimed = claimed.await?;
    leases.extend(claimed.iter().map(|c| (c.0, until)));
    Ok(claimed)
}

/// On PostgreSQL, in `txn`: leases up to `count` deliveries due at `now` (see
/// [`postgres_due`]) until `until`, and returns them.
pub(super) async fn claim_on_postgres(
    txn: &DatabaseTransaction,
    now: DateTime<Utc>,
    until: DateTime<Utc>,
    limits: ClaimLimits,
) -> Result<Vec<Claimed>, DbErr> {
    // The table's statistics lag behind a queue that grows by thousands a second (analysed
    // while it was nearly empty, it looks like a few rows): the planner then reads an
    // endpoint's whole backlog in a bitmap scan and sorts it, 17 ms for 42,000 deliveries.
    // Walking the index in its order reads only the first rows, whatever the size: this
    // transaction's plans may not sort what an index orders. Plans so priced look costly
    // enough to compile (JIT, 40 ms), which this read of a few rows never repays.
    txn.execute_unprepared(
        "SET LOCAL enable_sort = off; SET LOCAL enable_bitmapscan = off; SET LOCAL jit = off",
    )
    .await?;
    let due = postgres_due(now, &limits);
    let rows: Vec<(Claimed, KeyId)> =
        txn.query_all_raw(due).await?.iter().map(claimed_row).collect::<Result<_, _>>()?;
    let claimed = pick(rows, limits.count, &mut limits.clone(), |_| false);
    if !claimed.is_empty() {
        delivery::Entity::update_many()
            .col_expr(delivery::Column::LeasedUntil, Expr::value(until))
            .filter(delivery::Column::Id.is_in(claimed.iter().map(|c| c.0)))
            .exec(txn)
            .await?;
    }
    Ok(claimed)
}

/// A due row as PostgreSQL answers it, with its endpoint's owner.
fn claimed_row(row: &QueryResult) -> Result<(Claimed, KeyId), DbErr> {
    let get = |column: &str| row.try_get::<i64>("", column);
    let owner: String = row.try_get("", "owner")?;
    let owner = KeyId::new(&owner).map_err(|e| DbErr::Type(e.to_string()))?;
    let claimed =
        (get("id")?, get("endpoint_id")?, get("event_id")?, row.try_get::<i32>("", "attempts")?);
    Ok((claimed, owner))
}

/// On SQLite, reading on `readers` (on the caller's thread when a connection is free): the
/// endpoints `endpoints` and the events `events` of claimed deliveries, those that are left.
pub(super) async fn sqlite_endpoints_and_events(
    readers: &ReaderThreads,
    endpoints: &[i64],
    events: &[i64],
) -> Result<(Vec<endpoint::Model>, Vec<event::Model>), DbErr> {
    let endpoints = format!(
        "SELECT id, owner, url, events, status, secret, created_at, failing_since, \
         disabled_reason \
         FROM webhook_endpoints WHERE id IN ({})",
        id_list(endpoints)
    );
    let events = format!(
        "SELECT id, event_type, owner, created_at, object FROM events WHERE id IN ({})",
        id_list(events)
    );
    readers
        .run(move |connection| {
            let endpoints = connection
                .prepare(&endpoints)?
                .query_map([], endpoint_row)?
                .collect::<Result<_, _>>()?;
            let events =
                connection.prepare(&events)?.query_map([], event_row)?.collect::<Result<_, _>>()?;
            Ok((endpoints, events))
        })
        .await
}

fn endpoint_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<endpoint::Model> {
    Ok(endpoint::Model {
        id: row.get(0)?,
        owner: row.get(1)?,
        url: row.get(2)?,
        events: row.get(3)?,
        status: row.get(4)?,
        secret: row.get(5)?,
        created_at: time(6, &row.get::<_, String>(6)?)?,
        failing_since: row.get::<_, Option<String>>(7)?.map(|at| time(7, &at)).transpose()?,
        disabled_reason: row.get(8)?,
    })
}

fn event_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<event::Model> {
    Ok(event::Model {
        id: row.get(0)?,
        event_type: row.get(1)?,
        owner: row.get(2)?,
        created_at: time(3, &row.get::<_, String>(3)?)?,
        object: row.get(4)?,
    })
}

/// The time `text` of column `index`, as sqlx writes it (see [`stored_time`]).
fn time(index: usize, text: &str) -> rusqlite::Result<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text).map(|at| at.with_timezone(&Utc)).map_err(|err| {
        rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, err.into())
    })
}

/// Ids as an SQL list, `-1` (no row's) for none: integers need no placeholder each.
fn id_list(ids: &[i64]) -> String {
    match ids {
        [] => "-1".to_owned(),
        ids => ids.iter().map(i64::to_string).collect::<Vec<_>>().join(", "),
    }
}
