//! Claims of webhook deliveries: which deliveries an instance takes, and their leases.
//!
//! On PostgreSQL the due rows are picked `FOR UPDATE SKIP LOCKED`, so that instances
//! claiming at once take different ones, and leased in the same transaction. On SQLite, which
//! one process serves, the leases are that process's own ([`Leases`]), and a claim is a read:
//! it takes nothing of the writer, which the requests' writes wait for. A leased delivery is
//! not due again until its lease ends. See [`deliveries`](crate::sql::webhooks::deliveries).

use std::collections::{HashMap, HashSet};

use animal_store_domain::{ClaimLimits, EndpointId, KeyId};
use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbBackend, DbErr,
    EntityTrait, QueryFilter, QueryResult, Statement,
};
use tokio::sync::Mutex;

use crate::sql::bound::Bound;
use crate::sql::schema::entity::webhook_delivery as delivery;

/// The statement that picks the deliveries to claim on PostgreSQL: the deliveries due at
/// `now`, not leased (or their lease over), of each enabled endpoint with room (see
/// [`with_room`]), in a lateral subquery over the index of each endpoint's deliveries,
/// soonest due first, `FOR UPDATE SKIP LOCKED`, at most as many as one endpoint or one
/// owner may take (and no more than the whole claim: PostgreSQL locks every row the
/// subquery picks, and rows locked but not claimed would be skipped by the instances
/// claiming meanwhile).
fn postgres_due(now: DateTime<Utc>, limits: &ClaimLimits) -> Statement {
    let count = i64::try_from(limits.count).unwrap_or(i64::MAX);
    let per = limits.per_endpoint.min(limits.per_owner);
    let per = Ord::min(i64::try_from(per).unwrap_or(i64::MAX), count);
    let mut bound = Bound::new(DbBackend::Postgres);
    let (now, per, count) = (bound.bind(now), bound.bind(per), bound.bind(count));
    let (busy, full) = with_room(&mut bound, limits);
    let sql = format!(
        "SELECT d.id, d.endpoint_id, d.event_id, d.attempts, e.owner FROM webhook_endpoints e \
         CROSS JOIN LATERAL (SELECT d.* FROM webhook_deliveries d \
             WHERE d.endpoint_id = e.id AND d.next_attempt_at <= {now} \
             AND (d.leased_until IS NULL OR d.leased_until <= {now}) \
             AND e.status = 'enabled' AND {busy} AND {full} \
             ORDER BY d.next_attempt_at, d.id LIMIT {per} FOR UPDATE OF d SKIP LOCKED) d \
         ORDER BY d.next_attempt_at, d.id LIMIT {count}"
    );
    bound.statement(sql)
}

/// The statement that counts the owners with deliveries due at `now` on an enabled endpoint,
/// leased or not: one seek into each enabled endpoint's deliveries. PostgreSQL turns
/// `EXISTS` into a join, which with the lagging statistics of a fast-growing queue reads the
/// whole table; a lateral subquery with a `LIMIT` runs once an endpoint, from the index.
/// SQLite runs `EXISTS` that way already, and knows no `LATERAL`.
pub(crate) fn owners_due(backend: DbBackend, now: DateTime<Utc>) -> Statement {
    let mut bound = Bound::new(backend);
    let now = bound.bind(now);
    let due = if backend == DbBackend::Postgres {
        format!(
            "CROSS JOIN LATERAL (SELECT 1 FROM webhook_deliveries d \
             WHERE d.endpoint_id = e.id AND d.next_attempt_at <= {now} LIMIT 1) due \
             WHERE e.status = 'enabled'"
        )
    } else {
        format!(
            "WHERE e.status = 'enabled' AND EXISTS (SELECT 1 FROM webhook_deliveries d \
             WHERE d.endpoint_id = e.id AND d.next_attempt_at <= {now})"
        )
    };
    bound.statement(format!(
        "SELECT COUNT(DISTINCT e.owner) AS owners FROM webhook_endpoints e {due}"
    ))
}

/// The conditions that leave out the endpoints with no room left, and those of the owners
/// with none.
fn with_room(bound: &mut Bound, limits: &ClaimLimits) -> (String, String) {
    let busy = bound.not_in("e.id", limits.full_endpoints().map(EndpointId::get));
    let full = bound.not_in("e.owner", limits.full_owners().map(|owner| owner.as_str().to_owned()));
    (busy, full)
}

/// The deliveries to claim on SQLite, whose one process claims alone: the enabled endpoints
/// with room (see [`ClaimLimits`]) taken in turn, from one picked at random so that each
/// gets its share over the claims, and of each as many of its deliveries due at `now` as it
/// and its owner have room for, soonest first, read from the index of each endpoint's
/// deliveries (one seek each), passing over those the process holds (`held`), until the
/// claim is full. However long an endpoint's queue, and however many wait for a disabled
/// one, a claim reads the first rows of the endpoints it takes from.
async fn due_in_process(
    readers: &DatabaseConnection,
    now: DateTime<Utc>,
    limits: &ClaimLimits,
    held: &HashSet<i64>,
) -> Result<Vec<Claimed>, DbErr> {
    let mut bound = Bound::new(DbBackend::Sqlite);
    let (busy, full) = with_room(&mut bound, limits);
    let enabled = bound.statement(format!(
        "SELECT id, owner FROM webhook_endpoints e WHERE status = 'enabled' AND {busy} \
         AND {full} ORDER BY id"
    ));
    let rows = readers.query_all_raw(enabled).await?;
    let mut endpoints: Vec<(i64, String)> = rows
        .iter()
        .map(|row| Ok((row.try_get("", "id")?, row.try_get("", "owner")?)))
        .collect::<Result<_, DbErr>>()?;
    if !endpoints.is_empty() {
        let first = rand::random_range(0..endpoints.len());
        endpoints.rotate_left(first);
    }
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
        let due = Statement::from_sql_and_values(
            DbBackend::Sqlite,
            "SELECT id, endpoint_id, event_id, attempts FROM webhook_deliveries \
             WHERE endpoint_id = ?1 AND next_attempt_at <= ?2 \
             AND (leased_until IS NULL OR leased_until <= ?2) \
             ORDER BY next_attempt_at, id LIMIT ?3",
            [endpoint.into(), now.into(), take.into()],
        );
        let rows = readers.query_all_raw(due).await?;
        let rows = rows
            .iter()
            .map(|row| Ok((claimed_columns(row)?, owner.clone())))
            .collect::<Result<Vec<_>, DbErr>>()?;
        claimed.extend(pick(rows, left, &mut room, |id| held.contains(&id)));
    }
    Ok(claimed)
}

/// A claimed delivery: its id, endpoint, event, and the attempts made before.
pub(crate) type Claimed = (i64, i64, i64, i32);

/// The leases of the deliveries an SQLite database's process claimed, by delivery: kept in
/// memory, for the process's own worker. One process serves an SQLite file, and its leases
/// end with it: a process that stops leaves its deliveries due at once to the next start.
#[derive(Default)]
pub(crate) struct Leases(Mutex<HashMap<i64, DateTime<Utc>>>);

impl Leases {
    /// Ends the leases of `deliveries`.
    pub(crate) async fn end(&self, deliveries: impl Iterator<Item = i64>) {
        let mut leases = self.0.lock().await;
        for delivery in deliveries {
            leases.remove(&delivery);
        }
    }
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

/// On SQLite, reading on `readers`: leases up to `count` deliveries due at `now` (see
/// [`due_in_process`]) in `leases` until `until`, and returns them. Claims take turns.
pub(crate) async fn claim_with_leases(
    readers: &DatabaseConnection,
    leases: &Leases,
    (now, until): (DateTime<Utc>, DateTime<Utc>),
    limits: ClaimLimits,
) -> Result<Vec<Claimed>, DbErr> {
    let mut leases = leases.0.lock().await;
    leases.retain(|_, ends| *ends > now);
    let held: HashSet<i64> = leases.keys().copied().collect();
    let claimed = due_in_process(readers, now, &limits, &held).await?;
    leases.extend(claimed.iter().map(|c| (c.0, until)));
    Ok(claimed)
}

/// On PostgreSQL, in `txn`: leases up to `count` deliveries due at `now` (see
/// [`postgres_due`]) until `until`, and returns them.
pub(crate) async fn claim_skip_locked(
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
    let owner: String = row.try_get("", "owner")?;
    let owner = KeyId::new(&owner).map_err(|e| DbErr::Type(e.to_string()))?;
    Ok((claimed_columns(row)?, owner))
}

/// A due row's delivery: its id, endpoint, event and attempts.
fn claimed_columns(row: &QueryResult) -> Result<Claimed, DbErr> {
    let get = |column: &str| row.try_get::<i64>("", column);
    Ok((get("id")?, get("endpoint_id")?, get("event_id")?, row.try_get::<i32>("", "attempts")?))
}
