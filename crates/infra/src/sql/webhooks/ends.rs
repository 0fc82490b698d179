//! Where deliveries end without being made, and attempts end with their events.
//!
//! - A rotation chain with no live key left (each revoked or expired) ends its endpoints:
//!   they are disabled (`key_ended`), and what waits for them, as for an endpoint an
//!   operator disabled, is dropped, each delivery recorded as an attempt whose outcome is
//!   `dropped` ([`SeaOrmWebhooks::close_ended`]).
//! - An endpoint's backlog is bounded: what waits beyond it is dropped the same way
//!   ([`SeaOrmWebhooks::trim_backlogs`]).
//! - Attempts are swept by age, in batches of their own, whatever number of events expire
//!   ([`SeaOrmWebhooks::sweep_attempts`]).
//!
//! Each finds what to change with a read on the reader pool, and writes only when there is
//! something to change: on SQLite the writes are the writer's jobs, which the requests' own
//! writes wait behind.

use animal_store_domain::{Closed, DisabledReason, EndpointStatus, Outcome, RepositoryError};
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Condition, Expr, ExprTrait as _, Query};
use sea_orm::{
    ColumnTrait, DatabaseTransaction, DbErr, EntityTrait, NotSet, QueryFilter, QueryOrder,
    QuerySelect, QueryTrait as _, Set,
};

use crate::sql::schema::entity::{
    api_key, webhook_attempt as attempt, webhook_delivery as delivery, webhook_endpoint as endpoint,
};
use crate::sql::webhooks::endpoints::SeaOrmWebhooks;

/// The reasons that disable an endpoint for good, as stored.
fn final_reasons() -> Vec<&'static str> {
    DisabledReason::ALL.into_iter().filter(|r| r.is_final()).map(DisabledReason::as_str).collect()
}

/// The enabled endpoints whose owner's rotation chain has no key live at `now`: none of the
/// line (the owner's own key, or one whose `lineage` is the owner) unrevoked and unexpired.
fn ended_lines(now: DateTime<Utc>) -> sea_orm::Select<endpoint::Entity> {
    let now = now.timestamp_millis();
    let owner = Expr::col((endpoint::Entity, endpoint::Column::Owner));
    let live = Query::select()
        .expr(Expr::val(1))
        .from(api_key::Entity)
        .cond_where(
            Condition::any()
                .add(Expr::col((api_key::Entity, api_key::Column::Id)).eq(owner.clone()))
                .add(Expr::col((api_key::Entity, api_key::Column::Lineage)).eq(owner)),
        )
        .and_where(Expr::col((api_key::Entity, api_key::Column::RevokedAt)).is_null())
        .cond_where(
            Condition::any()
                .add(Expr::col((api_key::Entity, api_key::Column::ExpiresAt)).is_null())
                .add(Expr::col((api_key::Entity, api_key::Column::ExpiresAt)).gt(now)),
        )
        .to_owned();
    endpoint::Entity::find()
        .filter(endpoint::Column::Status.eq(EndpointStatus::Enabled.as_str()))
        .filter(Expr::exists(live).not())
}

/// In `txn`: drops the deliveries `ids` that still wait, each recorded as an attempt made
/// `at` whose outcome is `dropped`; returns how many it dropped.
async fn drop_deliveries(
    txn: &DatabaseTransaction,
    ids: Vec<i64>,
    at: DateTime<Utc>,
) -> Result<u64, DbErr> {
    let waiting = delivery::Entity::find()
        .select_only()
        .columns([
            delivery::Column::Id,
            delivery::Column::EndpointId,
            delivery::Column::EventId,
            delivery::Column::Attempts,
        ])
        .filter(delivery::Column::Id.is_in(ids))
        .into_tuple::<(i64, i64, i64, i32)>()
        .all(txn)
        .await?;
    if waiting.is_empty() {
        return Ok(0);
    }
    let rows = waiting.iter().map(|&(id, endpoint, event, attempts)| attempt::ActiveModel {
        id: NotSet,
        delivery_id: Set(id),
        endpoint_id: Set(endpoint),
        event_id: Set(event),
        attempt: Set(attempts.saturating_add(1)),
        attempted_at: Set(at),
        outcome: Set(Outcome::Dropped.kind().to_owned()),
        status_code: Set(None),
        next_attempt_at: Set(None),
    });
    attempt::Entity::insert_many(rows).exec_without_returning(txn).await?;
    let done = delivery::Entity::delete_many()
        .filter(delivery::Column::Id.is_in(waiting.iter().map(|w| w.0)))
        .exec(txn)
        .await?;
    Ok(done.rows_affected)
}

/// `count` as a query's limit.
fn limit(count: usize) -> u64 {
    u64::try_from(count).unwrap_or(u64::MAX)
}

impl SeaOrmWebhooks {
    /// See [`WebhookDeliveries::close`](animal_store_domain::WebhookDeliveries::close).
    pub(crate) async fn close_ended(
        &self,
        now: DateTime<Utc>,
        batch: usize,
    ) -> Result<Closed, RepositoryError> {
        let ended = ended_lines(now).select_only().column(endpoint::Column::Id);
        let ended: Vec<i64> =
            self.reads.read(|| ended.clone().into_tuple().all(&self.readers)).await?;
        let mut closed = Closed::default();
        if !ended.is_empty() {
            closed.endpoints = self
                .worker_write(move |txn| {
                    Box::pin(async move {
                        // Again in the write: a line found ended is ended for good.
                        let still = ended_lines(now).select_only().column(endpoint::Column::Id);
                        let done = endpoint::Entity::update_many()
                            .col_expr(
                                endpoint::Column::Status,
                                Expr::value(EndpointStatus::Disabled.as_str()),
                            )
                            .col_expr(
                                endpoint::Column::DisabledReason,
                                Expr::value(DisabledReason::KeyEnded.as_str()),
                            )
                            .filter(endpoint::Column::Id.is_in(ended))
                            .filter(endpoint::Column::Id.in_subquery(still.into_query()))
                            .exec(txn)
                            .await?;
                        Ok(done.rows_affected)
                    })
                })
                .await?;
        }
        let ended_for_good = Query::select()
            .column(endpoint::Column::Id)
            .from(endpoint::Entity)
            .and_where(endpoint::Column::DisabledReason.is_in(final_reasons()))
            .to_owned();
        let doomed = delivery::Entity::find()
            .select_only()
            .column(delivery::Column::Id)
            .filter(delivery::Column::EndpointId.in_subquery(ended_for_good))
            .limit(limit(batch));
        let doomed: Vec<i64> =
            self.reads.read(|| doomed.clone().into_tuple().all(&self.readers)).await?;
        if !doomed.is_empty() {
            closed.dropped =
                self.worker_write(move |txn| Box::pin(drop_deliveries(txn, doomed, now))).await?;
        }
        Ok(closed)
    }

    /// See [`WebhookDeliveries::trim`](animal_store_domain::WebhookDeliveries::trim).
    pub(crate) async fn trim_backlogs(
        &self,
        now: DateTime<Utc>,
        max_waiting: usize,
        batch: usize,
    ) -> Result<usize, RepositoryError> {
        let max = i64::try_from(max_waiting).unwrap_or(i64::MAX);
        let full = delivery::Entity::find()
            .select_only()
            .column(delivery::Column::EndpointId)
            .column_as(delivery::Column::Id.count(), "waiting")
            .group_by(delivery::Column::EndpointId)
            .having(delivery::Column::Id.count().gt(max));
        let full =
            self.reads.read(|| full.clone().into_tuple::<(i64, i64)>().all(&self.readers)).await?;
        let mut doomed = Vec::new();
        for (endpoint, waiting) in full {
            let excess = usize::try_from(waiting - max).unwrap_or(0).min(batch - doomed.len());
            // The soonest due first, read from the index of each endpoint's deliveries.
            let oldest = delivery::Entity::find()
                .select_only()
                .column(delivery::Column::Id)
                .filter(delivery::Column::EndpointId.eq(endpoint))
                .order_by_asc(delivery::Column::NextAttemptAt)
                .order_by_asc(delivery::Column::Id)
                .limit(limit(excess));
            doomed.extend(
                self.reads.read(|| oldest.clone().into_tuple::<i64>().all(&self.readers)).await?,
            );
            if doomed.len() >= batch {
                break;
            }
        }
        if doomed.is_empty() {
            return Ok(0);
        }
        let dropped = self.worker_write(move |txn| Box::pin(drop_deliveries(txn, doomed, now)));
        Ok(usize::try_from(dropped.await?).unwrap_or(usize::MAX))
    }

    /// See [`WebhookDeliveries::sweep`](animal_store_domain::WebhookDeliveries::sweep): the
    /// `batch` oldest attempts by key (attempts are recorded in about the order they are
    /// made, so the expired ones come first), those of them made before `before`.
    pub(crate) async fn sweep_attempts(
        &self,
        before: DateTime<Utc>,
        batch: usize,
    ) -> Result<usize, RepositoryError> {
        let oldest = attempt::Entity::find()
            .select_only()
            .columns([attempt::Column::Id, attempt::Column::AttemptedAt])
            .order_by_asc(attempt::Column::Id)
            .limit(limit(batch));
        let oldest = self
            .reads
            .read(|| oldest.clone().into_tuple::<(i64, DateTime<Utc>)>().all(&self.readers))
            .await?;
        let expired: Vec<i64> =
            oldest.into_iter().filter(|(_, at)| *at < before).map(|(id, _)| id).collect();
        if expired.is_empty() {
            return Ok(0);
        }
        self.worker_write(move |txn| {
            Box::pin(async move {
                let done =
                    attempt::Entity::delete_many().filter(attempt::Column::Id.is_in(expired));
                Ok(usize::try_from(done.exec(txn).await?.rows_affected).unwrap_or(usize::MAX))
            })
        })
        .await
    }
}
