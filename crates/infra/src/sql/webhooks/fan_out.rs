//! Deliveries fanned out from the events after their commit: a write records its event and
//! nothing per endpoint, so it costs the same with 0 or 800 endpoints. The delivery worker
//! then queues, in one transaction of its own, the deliveries of the events recorded since
//! the last fan-out, and moves the position (`webhook_fan_out`) past them: a crash before
//! the commit leaves both as they were, and the next fan-out does it again, so no event
//! loses a delivery and none is queued twice. Events are fanned out in id order, which is
//! their commit order ([`events`](crate::sql::rows::events)): no event appears behind the
//! position once it has moved. On PostgreSQL the position's row is locked for the
//! transaction, so the instances fan out one at a time.

use sea_orm::{ConnectionTrait, DatabaseTransaction, DbBackend, DbErr, Statement};

use crate::sql::bound::Bound;

/// The last event recorded (`last`), and the last one fanned out (`fanned`): reads of one
/// row each.
pub(crate) fn positions(backend: DbBackend) -> Statement {
    Statement::from_string(
        backend,
        "SELECT (SELECT MAX(id) FROM events) AS last, \
         (SELECT last_event_id FROM webhook_fan_out WHERE id = 1) AS fanned",
    )
}

/// The most deliveries one fan-out queues, unless its first event alone has more: a bound
/// on how long it holds the writer, which the requests' writes share.
const MOST_DELIVERIES: i64 = 1024;

/// The endpoints each event `added` goes to: enabled, whose owner sees it (every pet event,
/// an order's events to its owner's), which want its type (`*`, or the type between
/// commas), and which were registered before it.
const ENDPOINTS: &str = "webhook_endpoints AS endpoint \
     ON (added.owner IS NULL OR added.owner = endpoint.owner) \
     AND endpoint.status = 'enabled' AND endpoint.after_event < added.id \
     AND (endpoint.events = '*' OR endpoint.events LIKE '%,' || added.event_type || ',%')";

/// In `txn`: queues the deliveries of up to `batch` events past the position, fewer when
/// they would be more than [`MOST_DELIVERIES`], and moves the position past them; how many
/// events it fanned out.
pub(crate) async fn fan_out(txn: &DatabaseTransaction, batch: usize) -> Result<usize, DbErr> {
    let backend = txn.get_database_backend();
    // The one statement the two databases spell apart: SQLite's writer runs one
    // transaction at a time, PostgreSQL's instances take turns on the row.
    let position = match backend {
        DbBackend::Postgres => "SELECT last_event_id FROM webhook_fan_out WHERE id = 1 FOR UPDATE",
        _ => "SELECT last_event_id FROM webhook_fan_out WHERE id = 1",
    };
    let row = txn.query_one_raw(Statement::from_string(backend, position)).await?;
    let from: i64 = row.map(|row| row.try_get("", "last_event_id")).transpose()?.unwrap_or(0);
    let mut bound = Bound::new(backend);
    let (after, count) = (bound.bind(from), bound.bind(i64::try_from(batch).unwrap_or(i64::MAX)));
    let counted = bound.statement(format!(
        "SELECT added.id AS id, COUNT(endpoint.id) AS deliveries FROM \
         (SELECT id, owner, event_type FROM events WHERE id > {after} ORDER BY id LIMIT {count}) \
         AS added LEFT JOIN {ENDPOINTS} GROUP BY added.id ORDER BY added.id"
    ));
    let (mut to, mut events, mut deliveries) = (from, 0_usize, 0_i64);
    for row in txn.query_all_raw(counted).await? {
        let (id, more) = (row.try_get::<i64>("", "id")?, row.try_get::<i64>("", "deliveries")?);
        if events > 0 && deliveries + more > MOST_DELIVERIES {
            break;
        }
        (to, events, deliveries) = (id, events + 1, deliveries + more);
    }
    if events == 0 {
        return Ok(0);
    }
    let mut bound = Bound::new(backend);
    let (after, up_to) = (bound.bind(from), bound.bind(to));
    txn.execute_raw(bound.statement(format!(
        "INSERT INTO webhook_deliveries \
         (endpoint_id, event_id, attempts, next_attempt_at, leased_until, created_at) \
         SELECT endpoint.id, added.id, 0, added.created_at, NULL, added.created_at \
         FROM events AS added JOIN {ENDPOINTS} WHERE added.id > {after} AND added.id <= {up_to}"
    )))
    .await?;
    let mut bound = Bound::new(backend);
    let to = bound.bind(to);
    let moved = format!("UPDATE webhook_fan_out SET last_event_id = {to} WHERE id = 1");
    txn.execute_raw(bound.statement(moved)).await?;
    Ok(events)
}
