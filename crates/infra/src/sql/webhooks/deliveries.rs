//! Webhook deliveries over SeaORM: claimed, recorded, and forgotten with their events.
//!
//! The worker queues the deliveries of the events written since it last looked, after their
//! commit (see [`fan_out`](crate::sql::webhooks::fan_out)). An instance claims the deliveries
//! due by giving them a lease (see [`claims`](crate::sql::webhooks::claims)): a leased
//! delivery is not due again until its lease ends (an instance that dies mid-attempt leaves
//! its lease to run out, and the delivery is attempted again). A delivery is deleted once
//! delivered or given up, its attempts keeping what came of it. The worker's writes stay out
//! of the requests' way: on SQLite a claim is a read, and records are writer jobs; on
//! PostgreSQL both run in transactions of their own.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use animal_store_domain::{
    Attempt, AttemptId, Attempted, Backlog, ClaimLimits, Closed, DeliveryId, DisabledReason, Due,
    Endpoint, EndpointId, EndpointStatus, EventId, KeyId, Outcome, RepositoryError,
    WebhookDeliveries,
};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use futures_util::future::BoxFuture;
use sea_orm::sea_query::{Expr, ExprTrait as _};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseTransaction, DbBackend, DbErr, EntityTrait, NotSet,
    QueryFilter, QueryOrder, QuerySelect, Set, TransactionTrait as _,
};

use crate::sql::connection::failure::corrupt;
use crate::sql::rows::events::to_event;
use crate::sql::schema::entity::webhook_endpoint as endpoint;
use crate::sql::schema::entity::{event, webhook_attempt as attempt, webhook_delivery as delivery};
use crate::sql::webhooks::claims::{Claimed, claim_skip_locked, claim_with_leases, owners_due};
use crate::sql::webhooks::endpoints::{SeaOrmWebhooks, owned, to_endpoint};
use crate::sql::webhooks::fan_out;
use crate::sql::webhooks::share::{FAN_OUT_WHILE_WRITING, WORKER_SHARE};

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

/// In `txn`, as the events `ids` are swept: removes their deliveries (the table holds only
/// those that wait: a scan is short). Their attempts are swept by age, on their own (see
/// [`ends`](crate::sql::webhooks::ends)).
pub(crate) async fn forget_events(txn: &DatabaseTransaction, ids: &[i64]) -> Result<(), DbErr> {
    delivery::Entity::delete_many()
        .filter(delivery::Column::EventId.is_in(ids.iter().copied()))
        .exec(txn)
        .await?;
    Ok(())
}

impl SeaOrmWebhooks {
    /// Runs `work`, a write of the delivery worker's, within the worker's share of the
    /// database (see [`share`](crate::sql::webhooks::share)): on SQLite as a job of the
    /// writer, the one connection that writes; on PostgreSQL in a transaction of its own on a
    /// pooled connection. There, instances claim and record beside each other already, and
    /// the worker's statements in the writer's transactions would hold up the requests'
    /// writes committed with them (and the lock their events' ids take, see
    /// [`rows::events`](crate::sql::rows::events)) by as many round trips.
    pub(crate) async fn worker_write<T, F>(&self, work: F) -> Result<T, RepositoryError>
    where
        T: Send + 'static,
        F: for<'t> FnOnce(&'t DatabaseTransaction) -> BoxFuture<'t, Result<T, DbErr>>
            + Send
            + 'static,
    {
        let mut share = self.worker_share.lock().await;
        if share.writing() {
            tokio::time::sleep_until(share.next).await;
        }
        let started = tokio::time::Instant::now();
        let written = if self.readers.get_database_backend() == DbBackend::Postgres {
            let transaction = async {
                let txn = self.readers.begin().await?;
                let output = work(&txn).await?;
                txn.commit().await?;
                Ok(output)
            };
            self.reads.run(transaction).await
        } else {
            self.writer.write(work).await
        };
        share.next = tokio::time::Instant::now() + started.elapsed() * (WORKER_SHARE - 1);
        written
    }

    /// The endpoints and the events of the deliveries `claimed`, read on the reader pool.
    async fn due_rows(
        &self,
        claimed: &[Claimed],
    ) -> Result<(Vec<endpoint::Model>, Vec<event::Model>), RepositoryError> {
        let endpoint_ids: Vec<i64> = claimed.iter().map(|c| c.1).collect();
        let event_ids: Vec<i64> = claimed.iter().map(|c| c.2).collect();
        let endpoints = endpoint::Entity::find().filter(endpoint::Column::Id.is_in(endpoint_ids));
        let endpoints = self.reads.read(|| endpoints.clone().all(&self.readers)).await?;
        let events = event::Entity::find().filter(event::Column::Id.is_in(event_ids));
        Ok((endpoints, self.reads.read(|| events.clone().all(&self.readers)).await?))
    }

    /// The deliveries `claimed`, with their endpoints and events (see [`Self::due_rows`]; the
    /// writer has other work). A delivery whose endpoint is gone meanwhile (removed) is
    /// left out, its lease running out; one whose event is gone (swept by a binary that did
    /// not know deliveries, during a rollback) can never be made, and is removed.
    async fn due(&self, claimed: Vec<Claimed>) -> Result<Vec<Due>, RepositoryError> {
        if claimed.is_empty() {
            return Ok(Vec::new());
        }
        let (endpoints, events) = self.due_rows(&claimed).await?;
        let endpoints: HashMap<i64, Endpoint> = endpoints
            .into_iter()
            .map(|row| to_endpoint(row).map(|endpoint| (endpoint.id.get(), endpoint)))
            .collect::<Result<_, _>>()?;
        let events: HashMap<i64, animal_store_domain::Event> = events
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
    // The endpoints first, then the deliveries, in the order in which the removal of an
    // endpoint locks them: on PostgreSQL the two never wait for each other's locks in turn.
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
            .col_expr(
                endpoint::Column::DisabledReason,
                Expr::value(DisabledReason::Failing.as_str()),
            )
            .filter(endpoint::Column::Id.eq(a.endpoint.get()))
            .filter(endpoint::Column::Status.eq(EndpointStatus::Enabled.as_str()))
            .filter(endpoint::Column::FailingSince.lte(a.at - disable_after))
            .exec(txn)
            .await?;
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
    Ok(())
}

#[async_trait]
impl WebhookDeliveries for SeaOrmWebhooks {
    async fn claim(
        &self,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
        limits: &ClaimLimits,
    ) -> Result<Vec<Due>, RepositoryError> {
        let limits = limits.clone();
        let claimed = if self.readers.get_database_backend() == DbBackend::Postgres {
            self.worker_write(move |txn| Box::pin(claim_skip_locked(txn, now, until, limits)))
                .await?
        } else {
            let claim = claim_with_leases(&self.readers, &self.leases, (now, until), limits);
            self.reads.run(claim).await?
        };
        self.due(claimed).await
    }

    async fn record(
        &self,
        attempts: Vec<Attempted>,
        disable_after: Duration,
    ) -> Result<(), RepositoryError> {
        let disable_after =
            chrono::Duration::from_std(disable_after).unwrap_or(chrono::Duration::MAX);
        let ended: Vec<i64> = attempts.iter().map(|a| a.delivery.get()).collect();
        self.worker_write(move |txn| Box::pin(record(txn, attempts, disable_after))).await?;
        self.leases.end(ended.into_iter()).await;
        Ok(())
    }

    async fn attempts(
        &self,
        owner: &KeyId,
        endpoint: EndpointId,
        before: Option<AttemptId>,
        count: usize,
    ) -> Result<Option<Vec<Attempt>>, RepositoryError> {
        if self.reads.read(|| owned(owner, endpoint).one(&self.readers)).await?.is_none() {
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
        let rows = self.reads.read(|| query.clone().all(&self.readers)).await?;
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

    async fn close(&self, now: DateTime<Utc>, batch: usize) -> Result<Closed, RepositoryError> {
        self.close_ended(now, batch).await
    }

    async fn trim(
        &self,
        now: DateTime<Utc>,
        max_waiting: usize,
        batch: usize,
    ) -> Result<usize, RepositoryError> {
        self.trim_backlogs(now, max_waiting, batch).await
    }

    async fn sweep(&self, before: DateTime<Utc>, batch: usize) -> Result<usize, RepositoryError> {
        self.sweep_attempts(before, batch).await
    }

    async fn fan_out(&self, batch: usize) -> Result<usize, RepositoryError> {
        let positions = fan_out::positions(self.readers.get_database_backend());
        let read = || async {
            let row = self.readers.query_one_raw(positions.clone()).await?;
            let get = |column| row.as_ref().map(|row| row.try_get::<Option<i64>>("", column));
            Ok::<_, DbErr>((
                get("last").transpose()?.flatten(),
                get("fanned").transpose()?.flatten(),
            ))
        };
        let (last, fanned) = self.reads.read(read).await?;
        let writing = {
            let mut share = self.worker_share.lock().await;
            if share.last_event != last {
                share.last_event = last;
                share.events_seen = Some(tokio::time::Instant::now());
            }
            share.writing()
        };
        if last.unwrap_or(0) <= fanned.unwrap_or(0) {
            return Ok(0);
        }
        let sqlite = self.readers.get_database_backend() != DbBackend::Postgres;
        let batch = if sqlite && writing { batch.min(FAN_OUT_WHILE_WRITING) } else { batch };
        self.worker_write(move |txn| Box::pin(fan_out::fan_out(txn, batch))).await
    }

    async fn owners_due(&self, now: DateTime<Utc>) -> Result<usize, RepositoryError> {
        let query = owners_due(self.readers.get_database_backend(), now);
        let count = || async {
            let row = self.readers.query_one_raw(query.clone()).await?;
            row.map(|row| row.try_get::<i64>("", "owners")).transpose()
        };
        let owners = self.reads.read(count).await?.unwrap_or(0);
        Ok(usize::try_from(owners).unwrap_or(0))
    }

    async fn backlog(&self) -> Result<Backlog, RepositoryError> {
        let query = delivery::Entity::find()
            .select_only()
            .column_as(delivery::Column::Id.count(), "pending")
            .column_as(delivery::Column::CreatedAt.min(), "oldest");
        let found = self
            .reads
            .read(|| query.clone().into_tuple::<(i64, Option<DateTime<Utc>>)>().one(&self.readers))
            .await?;
        let (pending, oldest) = found.unwrap_or((0, None));
        Ok(Backlog { pending: u64::try_from(pending).unwrap_or(0), oldest })
    }
}
