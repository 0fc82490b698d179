//! Claims of webhook deliveries: which deliveries an instance takes, and their leases.
//!
//! On PostgreSQL the due rows are picked `FOR UPDATE SKIP LOCKED`, so that instances
//! claiming at once take different ones; on SQLite the one writer claims alone. A leased row
//! is not due again until its lease ends. Claims are writer jobs (see
//! [`deliveries`](super::deliveries)).

use std::collections::HashMap;

use animal_store_domain::EndpointId;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseTransaction, DbBackend, DbErr, EntityTrait, QueryFilter,
    QueryResult, Statement,
};

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

/// The deliveries to claim on SQLite, whose one writer claims alone: the enabled endpoints
/// taken in turn, from one picked at random so that each gets its share over the claims,
/// and of each at most `per_endpoint` of its deliveries due, soonest first, read from the
/// index of each endpoint's deliveries (one seek each), until `count`. However long an
/// endpoint's queue, and however many wait for a disabled one, a claim reads the first rows
/// of the endpoints it takes from.
async fn sqlite_due(
    txn: &DatabaseTransaction,
    now: DateTime<Utc>,
    (count, per_endpoint): (usize, usize),
    busy: &str,
) -> Result<Vec<QueryResult>, DbErr> {
    let enabled = format!(
        "SELECT id FROM webhook_endpoints WHERE status = 'enabled' AND id NOT IN ({busy}) \
         ORDER BY id"
    );
    let mut endpoints = Vec::new();
    for row in txn.query_all_raw(Statement::from_string(DbBackend::Sqlite, enabled)).await? {
        endpoints.push(row.try_get::<i64>("", "id")?);
    }
    if !endpoints.is_empty() {
        let first = rand::random_range(0..endpoints.len());
        endpoints.rotate_left(first);
    }
    let mut rows = Vec::new();
    for endpoint in endpoints {
        let left = count.saturating_sub(rows.len());
        if left == 0 {
            break;
        }
        let take = i64::try_from(per_endpoint.min(left)).unwrap_or(i64::MAX);
        let due = Statement::from_sql_and_values(
            DbBackend::Sqlite,
            "SELECT id, endpoint_id, event_id, attempts FROM webhook_deliveries \
             WHERE endpoint_id = $1 AND next_attempt_at <= $2 \
             AND (leased_until IS NULL OR leased_until <= $2) \
             ORDER BY next_attempt_at, id LIMIT $3",
            [endpoint.into(), now.into(), take.into()],
        );
        rows.extend(txn.query_all_raw(due).await?);
    }
    Ok(rows)
}

/// A claimed delivery: its id, endpoint, event, and the attempts made before.
pub(super) type Claimed = (i64, i64, i64, i32);

/// In `txn`: leases up to `count` deliveries due at `now` (see [`postgres_due`] and
/// [`sqlite_due`]) until `until`, and returns them.
pub(super) async fn claim(
    txn: &DatabaseTransaction,
    now: DateTime<Utc>,
    until: DateTime<Utc>,
    (count, per_endpoint): (usize, usize),
    busy: Vec<EndpointId>,
) -> Result<Vec<Claimed>, DbErr> {
    // Ids are integers: written in the statement, they need no placeholder each.
    let busy = match busy.as_slice() {
        [] => "-1".to_owned(),
        busy => busy.iter().map(|id| id.get().to_string()).collect::<Vec<_>>().join(", "),
    };
    let rows = match txn.get_database_backend() {
        DbBackend::Postgres => {
            // The table's statistics lag behind a queue that grows by thousands a second
            // (analysed while it was nearly empty, it looks like a few rows): the planner then
            // reads an endpoint's whole backlog in a bitmap scan and sorts it, 17 ms for
            // 42,000 deliveries. Walking the index in its order reads only the first rows,
            // whatever the size: this transaction's plans may not sort what an index orders.
            // Plans so priced look costly enough to compile (JIT, 40 ms), which this read of a
            // few rows never repays.
            txn.execute_unprepared(
                "SET LOCAL enable_sort = off; SET LOCAL enable_bitmapscan = off; \
                 SET LOCAL jit = off",
            )
            .await?;
            txn.query_all_raw(postgres_due(now, count, per_endpoint, &busy)).await?
        }
        _ => sqlite_due(txn, now, (count, per_endpoint), &busy).await?,
    };
    let mut claimed = Vec::with_capacity(count);
    let mut taken: HashMap<i64, usize> = HashMap::new();
    for row in &rows {
        let get = |column: &str| row.try_get::<i64>("", column);
        let attempts = row.try_get::<i32>("", "attempts")?;
        let endpoint = get("endpoint_id")?;
        let of_endpoint = taken.entry(endpoint).or_default();
        if claimed.len() == count || *of_endpoint == per_endpoint {
            continue;
        }
        *of_endpoint += 1;
        claimed.push((get("id")?, endpoint, get("event_id")?, attempts));
    }
    if !claimed.is_empty() {
        delivery::Entity::update_many()
            .col_expr(delivery::Column::LeasedUntil, Expr::value(until))
            .filter(delivery::Column::Id.is_in(claimed.iter().map(|c| c.0)))
            .exec(txn)
            .await?;
    }
    Ok(claimed)
}
