//! Claims of webhook deliveries: which deliveries an instance takes, and their leases.
//!
//! On PostgreSQL the due rows are picked `FOR UPDATE SKIP LOCKED`, so that instances
//! claiming at once take different ones, and leased in the same transaction. On SQLite, which
//! one process serves, the leases are that process's own ([`Leases`]), and a claim is a read:
//! it takes nothing of the writer, which the requests' writes wait for. A leased delivery is
//! not due again until its lease ends. See [`deliveries`](super::deliveries).

use std::collections::HashMap;

use animal_store_domain::EndpointId;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseTransaction, DbBackend, DbErr, EntityTrait, QueryFilter,
    QueryResult, Statement,
};
use tokio::sync::Mutex;

use super::entity::webhook_delivery as delivery;

/// The deliveries due: their next attempt due at `$now`, not leased (or their lease over),
/// to an enabled endpoint.
const DUE: &str = "d.next_attempt_at <= $now \
     AND (d.leased_until IS NULL OR d.leased_until <= $now) \
     AND e.status = 'enabled' AND e.id NOT IN ($busy)";

/// The statement that picks the deliveries to claim on PostgreSQL (see [`DUE`]): each
/// enabled endpoint's, in a lateral subquery over the index of each endpoint's deliveries,
/// soonest due first, `FOR UPDATE SKIP LOCKED`, at most `per_endpoint` (and no more than the
/// whole claim: PostgreSQL locks every row the subquery picks, and rows locked but not
/// claimed would be skipped by the instances claiming meanwhile).
fn postgres_due(now: DateTime<Utc>, count: usize, per_endpoint: usize, busy: &str) -> Statement {
    let due = DUE.replace("$busy", busy).replace("$now", "$1");
    let count = i64::try_from(count).unwrap_or(i64::MAX);
    let per = Ord::min(i64::try_from(per_endpoint).unwrap_or(i64::MAX), count);
    let sql = format!(
        "SELECT d.id, d.endpoint_id, d.event_id, d.attempts FROM webhook_endpoints e \
         CROSS JOIN LATERAL (SELECT d.* FROM webhook_deliveries d \
             WHERE d.endpoint_id = e.id AND {due} \
             ORDER BY d.next_attempt_at, d.id LIMIT $2 FOR UPDATE OF d SKIP LOCKED) d \
         ORDER BY d.next_attempt_at, d.id LIMIT $3"
    );
    Statement::from_sql_and_values(DbBackend::Postgres, sql, [now.into(), per.into(), count.into()])
}

/// The deliveries to claim on SQLite, whose one process claims alone: the enabled endpoints
/// taken in turn, from one picked at random so that each gets its share over the claims,
/// and of each at most `per_endpoint` of its deliveries due, soonest first, read from the
/// index of each endpoint's deliveries (one seek each), passing over those the process
/// holds (`held`), until `count`. However long an endpoint's queue, and however many wait for
/// a disabled one, a claim reads the first rows of the endpoints it takes from.
async fn sqlite_due(
    readers: &impl ConnectionTrait,
    now: DateTime<Utc>,
    (count, per_endpoint): (usize, usize),
    (busy, held): (&str, &HashMap<i64, DateTime<Utc>>),
) -> Result<Vec<Claimed>, DbErr> {
    let enabled = format!(
        "SELECT id FROM webhook_endpoints WHERE status = 'enabled' AND id NOT IN ({busy}) \
         ORDER BY id"
    );
    let mut endpoints = Vec::new();
    for row in readers.query_all_raw(Statement::from_string(DbBackend::Sqlite, enabled)).await? {
        endpoints.push(row.try_get::<i64>("", "id")?);
    }
    if !endpoints.is_empty() {
        let first = rand::random_range(0..endpoints.len());
        endpoints.rotate_left(first);
    }
    let mut claimed = Vec::new();
    for endpoint in endpoints {
        let left = count.saturating_sub(claimed.len());
        if left == 0 {
            break;
        }
        // Enough rows to take `left` past the ones this process holds already.
        let take = i64::try_from(per_endpoint.min(left) + held.len()).unwrap_or(i64::MAX);
        let due = Statement::from_sql_and_values(
            DbBackend::Sqlite,
            "SELECT id, endpoint_id, event_id, attempts FROM webhook_deliveries \
             WHERE endpoint_id = $1 AND next_attempt_at <= $2 \
             AND (leased_until IS NULL OR leased_until <= $2) \
             ORDER BY next_attempt_at, id LIMIT $3",
            [endpoint.into(), now.into(), take.into()],
        );
        let rows = readers.query_all_raw(due).await?;
        claimed.extend(pick(&rows, (left, per_endpoint), |id| held.contains_key(&id))?);
    }
    Ok(claimed)
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

/// The endpoints `busy`, as an SQL list: ids are integers, which need no placeholder each.
fn busy_list(busy: &[EndpointId]) -> String {
    match busy {
        [] => "-1".to_owned(),
        busy => busy.iter().map(|id| id.get().to_string()).collect::<Vec<_>>().join(", "),
    }
}

/// Of the due `rows`, in their order, those to claim: up to `count`, at most `per_endpoint`
/// of one endpoint's, none that `held`.
fn pick(
    rows: &[QueryResult],
    (count, per_endpoint): (usize, usize),
    held: impl Fn(i64) -> bool,
) -> Result<Vec<Claimed>, DbErr> {
    let mut claimed = Vec::with_capacity(count);
    let mut taken: HashMap<i64, usize> = HashMap::new();
    for row in rows {
        let get = |column: &str| row.try_get::<i64>("", column);
        let id = get("id")?;
        let endpoint = get("endpoint_id")?;
        let of_endpoint = taken.entry(endpoint).or_default();
        if claimed.len() == count || *of_endpoint == per_endpoint || held(id) {
            continue;
        }
        *of_endpoint += 1;
        claimed.push((id, endpoint, get("event_id")?, row.try_get::<i32>("", "attempts")?));
    }
    Ok(claimed)
}

/// On SQLite, reading on `readers`: leases up to `count` deliveries due at `now` (see
/// [`sqlite_due`]) in `leases` until `until`, and returns them. Claims take turns.
pub(super) async fn claim_on_sqlite(
    readers: &impl ConnectionTrait,
    leases: &Leases,
    (now, until): (DateTime<Utc>, DateTime<Utc>),
    sizes: (usize, usize),
    busy: &[EndpointId],
) -> Result<Vec<Claimed>, DbErr> {
    let mut leases = leases.0.lock().await;
    leases.retain(|_, ends| *ends > now);
    let claimed = sqlite_due(readers, now, sizes, (&busy_list(busy), &leases)).await?;
    leases.extend(claimed.iter().map(|c| (c.0, until)));
    Ok(claimed)
}

/// On PostgreSQL, in `txn`: leases up to `count` deliveries due at `now` (see
/// [`postgres_due`]) until `until`, and returns them.
pub(super) async fn claim_on_postgres(
    txn: &DatabaseTransaction,
    now: DateTime<Utc>,
    until: DateTime<Utc>,
    (count, per_endpoint): (usize, usize),
    busy: Vec<EndpointId>,
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
    let due = postgres_due(now, count, per_endpoint, &busy_list(&busy));
    let claimed = pick(&txn.query_all_raw(due).await?, (count, per_endpoint), |_| false)?;
    if !claimed.is_empty() {
        delivery::Entity::update_many()
            .col_expr(delivery::Column::LeasedUntil, Expr::value(until))
            .filter(delivery::Column::Id.is_in(claimed.iter().map(|c| c.0)))
            .exec(txn)
            .await?;
    }
    Ok(claimed)
}
