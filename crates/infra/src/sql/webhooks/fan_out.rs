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

/// Whether any event waits to be fanned out: a read of one row of the events' index.
pub(crate) fn waiting(backend: DbBackend) -> Statement {
    Statement::from_string(
        backend,
        "SELECT id FROM events \
         WHERE id > (SELECT last_event_id FROM webhook_fan_out WHERE id = 1) LIMIT 1",
    )
}

/// In `txn`: queues the deliveries of up to `batch` events past the position, and moves the
/// position past them; how many events it fanned out.
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
    let last = bound.statement(format!(
        "SELECT MAX(id) AS last, COUNT(*) AS events FROM \
         (SELECT id FROM events WHERE id > {after} ORDER BY id LIMIT {count}) AS batch"
    ));
    let Some(row) = txn.query_one_raw(last).await? else { return Ok(0) };
    let (Some(to), events) =
        (row.try_get::<Option<i64>>("", "last")?, row.try_get::<i64>("", "events")?)
    else {
        return Ok(0);
    };
    let mut bound = Bound::new(backend);
    let (after, up_to) = (bound.bind(from), bound.bind(to));
    txn.execute_raw(bound.statement(format!(
        "INSERT INTO webhook_deliveries \
         (endpoint_id, event_id, attempts, next_attempt_at, leased_until, created_at) \
         SELECT endpoint.id, added.id, 0, added.created_at, NULL, added.created_at \
         FROM events AS added JOIN webhook_endpoints AS endpoint \
         ON (added.owner IS NULL OR added.owner = endpoint.owner) \
         WHERE added.id > {after} AND added.id <= {up_to} \
         AND endpoint.status = 'enabled' AND endpoint.after_event < added.id \
         AND (endpoint.events = '*' OR endpoint.events LIKE '%,' || added.event_type || ',%')"
    )))
    .await?;
    let mut bound = Bound::new(backend);
    let to = bound.bind(to);
    txn.execute_raw(
        bound.statement(format!("UPDATE webhook_fan_out SET last_event_id = {to} WHERE id = 1")),
    )
    .await?;
    Ok(usize::try_from(events).unwrap_or(0))
}
