//! Webhook deliveries over SeaORM: claimed, recorded, and forgotten with their events.
//!
//! Deliveries are queued by the writer with the events they carry (see
//! [`event_rows`](super::event_rows)). An instance claims the deliveries due by giving them a lease:
//! on PostgreSQL the due rows are picked `FOR UPDATE SKIP LOCKED`, so that instances
//! claiming at once take different ones, and a leased row is not due again until its lease
//! ends (an instance that dies mid-attempt leaves its lease to run out, and the delivery is
//! attempted again). Claims and records are writer jobs, like every write; a delivery is
//! deleted once delivered or given up, its attempts keeping what came of it.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use animal_store_domain::{
    Attempt, AttemptId, Attempted, Backlog, DeliveryId, Due, Endpoint, EndpointId, EndpointStatus,
    EventId, KeyId, Outcome, RepositoryError, WebhookDeliveries,
};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait as _};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseTransaction, DbBackend, DbErr, EntityTrait, NotSet,
    QueryFilter, QueryOrder, QueryResult, QuerySelect, Set, Statement,
};

use super::entity::webhook_endpoint as endpoint;
use super::entity::{event, webhook_attempt as attempt, webhook_delivery as delivery};
use super::event_rows::to_event;
use super::failure::corrupt;
use super::webhooks::{SeaOrmWebhooks, owned, to_endpoint};

fn to_attempt(row: attempt::Model) -> Result<Attempt, RepositoryError> {
    let attempt::Model {
        id,
        delivery_id: _,
        endpoint_id: _,
        event_id,
        attempt,
        attempted_at,
        outcome,
        status_code,
        next_attempt_at,
    } = row;
    let bad = |e: &dyn std::fmt::Display| corrupt("webhook_attempts", e);
    let status = status_code.map(u16::try_from).transpose().map_err(|e| bad(&e))?;
    Ok(Attempt {
        id: AttemptId::new(id),
        event: EventId::new(event_id),
        attempt: u32::try_from(attempt).map_err(|e| bad(&e))?,
        at: attempted_at,
        outcome: Outcome::stored(&outcome, status).ok_or_else(|| bad(&outcome))?,
        next_attempt_at,
    })
}

/// In `txn`, as the events `ids` are swept (every one made before `before`): removes their
/// deliveries (the table holds only those that wait: a scan is short), and up to as many of
/// the oldest attempts, made before `before`, in the order of their key (attempts are made
/// in time order, so the expired ones come first).
pub(super) async fn forget_events(
    txn: &DatabaseTransaction,
    ids: &[i64],
    before: DateTime<Utc>,
) -> Result<(), DbErr> {
    delivery::Entity::delete_many()
        .filter(delivery::Column::EventId.is_in(ids.iter().copied()))
        .exec(txn)
        .await?;
    let oldest = attempt::Entity::find()
        .select_only()
        .columns([attempt::Column::Id, attempt::Column::AttemptedAt])
        .order_by_asc(attempt::Column::Id)
        .limit(u64::try_from(ids.len()).unwrap_or(u64::MAX))
        .into_tuple::<(i64, DateTime<Utc>)>()
        .all(txn)
        .await?;
    let expired = oldest.into_iter().filter(|(_, at)| *at < before).map(|(id, _)| id);
    attempt::Entity::delete_many().filter(attempt::Column::Id.is_in(expired)).exec(txn).await?;
    Ok(())
}

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
type Claimed = (i64, i64, i64, i32);

/// In `txn`: leases up to `count` deliveries due at `now` (see [`postgres_due`] and
/// [`sqlite_due`]) until
/// `until`, and returns them.
async fn claim(
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

impl SeaOrmWebhooks {
    /// The deliveries `claimed`, with their endpoints and events, read on the reader pool
    /// (the writer has other work). A delivery whose endpoint is gone meanwhile (removed) is
    /// left out, its lease running out; one whose event is gone (swept by a binary that did
    /// not know deliveries, during a rollback) can never be made, and is removed.
    async fn due(&self, claimed: Vec<Claimed>) -> Result<Vec<Due>, RepositoryError> {
        if claimed.is_empty() {
            return Ok(Vec::new());
        }
        let endpoints = endpoint::Entity::find()
            .filter(endpoint::Column::Id.is_in(claimed.iter().map(|c| c.1)));
        let endpoints: HashMap<i64, Endpoint> = self
            .reads
            .run(endpoints.all(&self.readers))
            .await?
            .into_iter()
            .map(|row| to_endpoint(row).map(|endpoint| (endpoint.id.get(), endpoint)))
            .collect::<Result<_, _>>()?;
        let events =
            event::Entity::find().filter(event::Column::Id.is_in(claimed.iter().map(|c| c.2)));
        let events: HashMap<i64, animal_store_domain::Event> = self
            .reads
            .run(events.all(&self.readers))
            .await?
            .into_iter()
            .map(|row| to_event(row).map(|event| (event.id.get(), event)))
            .collect::<Result<_, _>>()?;
        let orphans: Vec<i64> =
            claimed.iter().filter(|c| !events.contains_key(&c.2)).map(|c| c.0).collect();
        if !orphans.is_empty() {
            self.writer
                .write(move |txn| {
                    Box::pin(async move {
                        let gone = delivery::Entity::delete_many()
                            .filter(delivery::Column::Id.is_in(orphans))
                            .exec(txn);
                        gone.await.map(drop)
                    })
                })
                .await?;
        }
        Ok(claimed
            .into_iter()
            .filter_map(|(id, endpoint, event, attempts)| {
                Some(Due {
                    delivery: DeliveryId::new(id),
                    attempt: u32::try_from(attempts).ok()? + 1,
                    endpoint: endpoints.get(&endpoint)?.clone(),
                    event: events.get(&event)?.clone(),
                })
            })
            .collect())
    }
}

/// In `txn`: records `attempts` and ends their leases; the endpoints that failed since
/// `disable_after` before their attempt are disabled.
async fn record(
    txn: &DatabaseTransaction,
    attempts: Vec<Attempted>,
    disable_after: chrono::Duration,
) -> Result<(), DbErr> {
    if attempts.is_empty() {
        return Ok(());
    }
    let rows = attempts.iter().map(|a| attempt::ActiveModel {
        id: NotSet,
        delivery_id: Set(a.delivery.get()),
        endpoint_id: Set(a.endpoint.get()),
        event_id: Set(a.event.get()),
        attempt: Set(i32::try_from(a.attempt).unwrap_or(i32::MAX)),
        attempted_at: Set(a.at),
        outcome: Set(a.outcome.kind().to_owned()),
        status_code: Set(a.outcome.status().map(i32::from)),
        next_attempt_at: Set(a.next_attempt_at),
    });
    attempt::Entity::insert_many(rows).exec_without_returning(txn).await?;
    // Delivered or given up: done, the attempts keep what came of it.
    let done = attempts.iter().filter(|a| a.outcome.delivered() || a.next_attempt_at.is_none());
    delivery::Entity::delete_many()
        .filter(delivery::Column::Id.is_in(done.map(|a| a.delivery.get())))
        .exec(txn)
        .await?;
    for a in attempts.iter().filter(|a| !a.outcome.delivered() && a.next_attempt_at.is_some()) {
        delivery::Entity::update_many()
            .col_expr(
                delivery::Column::Attempts,
                Expr::value(i32::try_from(a.attempt).unwrap_or(i32::MAX)),
            )
            .col_expr(delivery::Column::NextAttemptAt, Expr::value(a.next_attempt_at))
            .col_expr(delivery::Column::LeasedUntil, Expr::value(None::<DateTime<Utc>>))
            .filter(delivery::Column::Id.eq(a.delivery.get()))
            .exec(txn)
            .await?;
    }
    let answered: BTreeSet<i64> =
        attempts.iter().filter(|a| a.outcome.delivered()).map(|a| a.endpoint.get()).collect();
    endpoint::Entity::update_many()
        .col_expr(endpoint::Column::FailingSince, Expr::value(None::<DateTime<Utc>>))
        .filter(endpoint::Column::Id.is_in(answered))
        .filter(endpoint::Column::FailingSince.is_not_null())
        .exec(txn)
        .await?;
    for a in attempts.iter().filter(|a| !a.outcome.delivered()) {
        let since = Expr::col(endpoint::Column::FailingSince);
        endpoint::Entity::update_many()
            .col_expr(endpoint::Column::FailingSince, since.if_null(a.at))
            .filter(endpoint::Column::Id.eq(a.endpoint.get()))
            .exec(txn)
            .await?;
        endpoint::Entity::update_many()
            .col_expr(endpoint::Column::Status, Expr::value(EndpointStatus::Disabled.as_str()))
            .filter(endpoint::Column::Id.eq(a.endpoint.get()))
            .filter(endpoint::Column::FailingSince.lte(a.at - disable_after))
            .exec(txn)
            .await?;
    }
    Ok(())
}

#[async_trait]
impl WebhookDeliveries for SeaOrmWebhooks {
    async fn claim(
        &self,
        now: DateTime<Utc>,
        lease: Duration,
        count: usize,
        per_endpoint: usize,
        busy: &[EndpointId],
    ) -> Result<Vec<Due>, RepositoryError> {
        let until = now + chrono::Duration::from_std(lease).unwrap_or(chrono::Duration::MAX);
        let (busy, sizes) = (busy.to_vec(), (count, per_endpoint));
        let claimed =
            self.writer.write(move |txn| Box::pin(claim(txn, now, until, sizes, busy))).await?;
        self.due(claimed).await
    }

    async fn record(
        &self,
        attempts: Vec<Attempted>,
        disable_after: Duration,
    ) -> Result<(), RepositoryError> {
        let disable_after =
            chrono::Duration::from_std(disable_after).unwrap_or(chrono::Duration::MAX);
        self.writer.write(move |txn| Box::pin(record(txn, attempts, disable_after))).await
    }

    async fn attempts(
        &self,
        owner: &KeyId,
        endpoint: EndpointId,
        before: Option<AttemptId>,
        count: usize,
    ) -> Result<Option<Vec<Attempt>>, RepositoryError> {
        if self.reads.run(owned(owner, endpoint).one(&self.readers)).await?.is_none() {
            return Ok(None);
        }
        let mut query =
            attempt::Entity::find().filter(attempt::Column::EndpointId.eq(endpoint.get()));
        if let Some(before) = before {
            query = query.filter(attempt::Column::Id.lt(before.get()));
        }
        let query = query
            .order_by_desc(attempt::Column::Id)
            .limit(u64::try_from(count).unwrap_or(u64::MAX));
        let rows = self.reads.run(query.all(&self.readers)).await?;
        rows.into_iter().map(to_attempt).collect::<Result<_, _>>().map(Some)
    }

    async fn release_leases(&self) -> Result<u64, RepositoryError> {
        self.writer
            .write(|txn| {
                Box::pin(async move {
                    if txn.get_database_backend() == DbBackend::Postgres {
                        return Ok(0);
                    }
                    let done = delivery::Entity::update_many()
                        .col_expr(delivery::Column::LeasedUntil, Expr::value(None::<DateTime<Utc>>))
                        .filter(delivery::Column::LeasedUntil.is_not_null())
                        .exec(txn)
                        .await?;
                    Ok(done.rows_affected)
                })
            })
            .await
    }

    async fn backlog(&self) -> Result<Backlog, RepositoryError> {
        let query = delivery::Entity::find()
            .select_only()
            .column_as(delivery::Column::Id.count(), "pending")
            .column_as(delivery::Column::CreatedAt.min(), "oldest")
            .into_tuple::<(i64, Option<DateTime<Utc>>)>();
        let found = self.reads.run(query.one(&self.readers)).await?;
        let (pending, oldest) = found.unwrap_or((0, None));
        Ok(Backlog { pending: u64::try_from(pending).unwrap_or(0), oldest })
    }
}
