//! Webhook endpoints over SeaORM: an owner's, at most 16, registered, changed and removed
//! by the writer. Their deliveries are in [`deliveries`](crate::sql::webhooks::deliveries).

use std::sync::Arc;

use animal_store_domain::{
    CreateEndpointError, DisabledReason, Endpoint, EndpointId, EndpointPatch, EndpointStatus,
    EventSelection, KeyId, MAX_ENDPOINTS, NewEndpoint, Outcome, RepositoryError, WebhookEndpoints,
    WebhookSecret, WebhookUrl,
};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbBackend, DbErr,
    EntityTrait, NotSet, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, QueryTrait, Set,
    Statement,
};

use crate::sql::connection::failure::{corrupt, in_write};
use crate::sql::connection::reachability::Reads;
use crate::sql::rows::insert::insert_one;
use crate::sql::schema::entity::webhook_endpoint as endpoint;
use crate::sql::schema::entity::{event, webhook_attempt as attempt, webhook_delivery as delivery};
use crate::sql::webhooks::claims::Leases;
use crate::sql::webhooks::share::WorkerShare;
use crate::sql::writer::job::Writer;

/// An endpoint's event types as stored: `*`, or each type between commas, so that a type is
/// found by looking for `,type,`.
fn selection_text(events: &EventSelection) -> String {
    match events.names().as_slice() {
        ["*"] => "*".to_owned(),
        names => format!(",{},", names.join(",")),
    }
}

pub(crate) fn to_endpoint(row: endpoint::Model) -> Result<Endpoint, RepositoryError> {
    let endpoint::Model {
        id,
        owner,
        url,
        events,
        status,
        secret,
        created_at,
        failing_since: _,
        after_event: _,
        disabled_reason,
    } = row;
    let bad = |e: &dyn std::fmt::Display| corrupt("webhook_endpoints", e);
    let events = if events == "*" {
        EventSelection::EVERY
    } else {
        EventSelection::parse(events.split(',').filter(|name| !name.is_empty()))
            .map_err(|e| bad(&e))?
    };
    Ok(Endpoint {
        id: EndpointId::new(id),
        owner: KeyId::new(&owner).map_err(|e| bad(&e))?,
        url: WebhookUrl::stored(&url),
        events,
        status: status.parse().map_err(|e| bad(&e))?,
        disabled_reason: match disabled_reason {
            Some(reason) => Some(DisabledReason::stored(&reason).ok_or_else(|| bad(&reason))?),
            None => None,
        },
        secret: WebhookSecret::parse(&secret).map_err(|e| bad(&e))?,
        created_at,
    })
}

/// The endpoint `id`, if `owner` has it.
pub(crate) fn owned(owner: &KeyId, id: EndpointId) -> sea_orm::Select<endpoint::Entity> {
    endpoint::Entity::find_by_id(id.get()).filter(endpoint::Column::Owner.eq(owner.as_str()))
}

/// Webhook endpoints and deliveries in an SQL database. Cheap to clone: clones share the
/// readers and the writer.
#[derive(Clone)]
pub struct SeaOrmWebhooks {
    pub(crate) readers: DatabaseConnection,
    pub(crate) reads: Arc<Reads>,
    pub(crate) writer: Writer,
    /// On SQLite, the process's leases of the deliveries it claimed.
    pub(crate) leases: Arc<Leases>,
    /// The delivery worker's share of the database (see `worker_write`).
    pub(crate) worker_share: Arc<tokio::sync::Mutex<WorkerShare>>,
}

impl SeaOrmWebhooks {
    pub(crate) fn new(
        readers: DatabaseConnection,
        reads: Arc<Reads>,
        writer: Writer,
        leases: Arc<Leases>,
    ) -> Self {
        let worker_share = Arc::new(tokio::sync::Mutex::new(WorkerShare::default()));
        Self { readers, reads, writer, leases, worker_share }
    }
}

/// In `txn`: stores `new` unless its owner has [`MAX_ENDPOINTS`] already. On PostgreSQL the
/// owner's endpoints are counted under a lock of the owner's, so that two instances
/// registering at once cannot both pass the count.
async fn create(
    txn: &DatabaseTransaction,
    new: NewEndpoint,
) -> Result<Result<Endpoint, CreateEndpointError>, DbErr> {
    if txn.get_database_backend() == DbBackend::Postgres {
        let lock = Statement::from_sql_and_values(
            DbBackend::Postgres,
            "SELECT pg_advisory_xact_lock(hashtext('webhook_endpoints:' || $1))",
            [new.owner.as_str().into()],
        );
        txn.execute_raw(lock).await?;
    }
    let count =
        endpoint::Entity::find().filter(endpoint::Column::Owner.eq(new.owner.as_str())).count(txn);
    if count.await? >= u64::try_from(MAX_ENDPOINTS).unwrap_or(u64::MAX) {
        return Ok(Err(CreateEndpointError::TooMany));
    }
    // The events recorded so far were made before it existed (on PostgreSQL, one whose
    // transaction still holds the event counter commits after it, and is its).
    let recorded = event::Entity::find().select_only().column_as(event::Column::Id.max(), "last");
    let after_event = recorded.into_tuple::<Option<i64>>().one(txn).await?.flatten().unwrap_or(0);
    let row = endpoint::ActiveModel {
        id: NotSet,
        owner: Set(new.owner.as_str().to_owned()),
        url: Set(new.url.as_str().to_owned()),
        events: Set(selection_text(&new.events)),
        status: Set(EndpointStatus::Enabled.as_str().to_owned()),
        secret: Set(new.secret.expose()),
        created_at: Set(new.at),
        failing_since: Set(None),
        disabled_reason: Set(None),
        after_event: Set(after_event),
    };
    let id = insert_one(txn, endpoint::Entity::insert(row).into_query()).await?;
    Ok(Ok(new.registered(EndpointId::new(id))))
}

/// In `txn`: applies `patch` to `owner`'s endpoint `id`. Enabling an endpoint starts its
/// count of failing days afresh.
async fn update(
    txn: &DatabaseTransaction,
    owner: KeyId,
    id: EndpointId,
    patch: EndpointPatch,
) -> Result<Option<Endpoint>, DbErr> {
    let mut query = owned(&owner, id);
    if txn.get_database_backend() == DbBackend::Postgres {
        query = query.lock_exclusive();
    }
    let Some(row) = query.one(txn).await? else {
        return Ok(None);
    };
    let before = to_endpoint(row).map_err(|e| in_write(&e))?;
    let after = patch.apply(&before);
    let mut change = endpoint::Entity::update_many()
        .col_expr(endpoint::Column::Url, Expr::value(after.url.as_str()))
        .col_expr(endpoint::Column::Events, Expr::value(selection_text(&after.events)))
        .col_expr(endpoint::Column::Status, Expr::value(after.status.as_str()))
        .col_expr(
            endpoint::Column::DisabledReason,
            Expr::value(after.disabled_reason.map(DisabledReason::as_str)),
        );
    if before.status == EndpointStatus::Disabled && after.status == EndpointStatus::Enabled {
        change =
            change.col_expr(endpoint::Column::FailingSince, Expr::value(None::<DateTime<Utc>>));
    }
    change.filter(endpoint::Column::Id.eq(id.get())).exec(txn).await?;
    Ok(Some(after))
}

/// In `txn`: removes `owner`'s endpoint `id`, its deliveries and their attempts.
async fn delete(txn: &DatabaseTransaction, owner: KeyId, id: EndpointId) -> Result<bool, DbErr> {
    let done = endpoint::Entity::delete_many()
        .filter(endpoint::Column::Id.eq(id.get()))
        .filter(endpoint::Column::Owner.eq(owner.as_str()))
        .exec(txn)
        .await?;
    if done.rows_affected == 0 {
        return Ok(false);
    }
    delivery::Entity::delete_many()
        .filter(delivery::Column::EndpointId.eq(id.get()))
        .exec(txn)
        .await?;
    attempt::Entity::delete_many()
        .filter(attempt::Column::EndpointId.eq(id.get()))
        .exec(txn)
        .await?;
    Ok(true)
}

#[async_trait]
impl WebhookEndpoints for SeaOrmWebhooks {
    async fn create(&self, new: NewEndpoint) -> Result<Endpoint, CreateEndpointError> {
        self.writer.write(move |txn| Box::pin(create(txn, new))).await?
    }

    async fn list(&self, owner: &KeyId) -> Result<Vec<Endpoint>, RepositoryError> {
        let query = endpoint::Entity::find()
            .filter(endpoint::Column::Owner.eq(owner.as_str()))
            .order_by_asc(endpoint::Column::Id);
        let rows = self.reads.read(|| query.clone().all(&self.readers)).await?;
        rows.into_iter().map(to_endpoint).collect()
    }

    async fn get(
        &self,
        owner: &KeyId,
        id: EndpointId,
    ) -> Result<Option<Endpoint>, RepositoryError> {
        self.reads.read(|| owned(owner, id).one(&self.readers)).await?.map(to_endpoint).transpose()
    }

    async fn update(
        &self,
        owner: &KeyId,
        id: EndpointId,
        patch: EndpointPatch,
    ) -> Result<Option<Endpoint>, RepositoryError> {
        let owner = owner.clone();
        self.writer.write(move |txn| Box::pin(update(txn, owner, id, patch))).await
    }

    async fn delete(&self, owner: &KeyId, id: EndpointId) -> Result<bool, RepositoryError> {
        let owner = owner.clone();
        self.writer.write(move |txn| Box::pin(delete(txn, owner, id))).await
    }

    async fn survey(
        &self,
        owner: Option<&KeyId>,
    ) -> Result<Vec<(Endpoint, Option<Outcome>)>, RepositoryError> {
        let mut query = endpoint::Entity::find().order_by_asc(endpoint::Column::Id);
        if let Some(owner) = owner {
            query = query.filter(endpoint::Column::Owner.eq(owner.as_str()));
        }
        let rows = self.reads.read(|| query.clone().all(&self.readers)).await?;
        let mut surveyed = Vec::with_capacity(rows.len());
        for row in rows {
            let endpoint = to_endpoint(row)?;
            // The newest attempt, from the index of each endpoint's attempts.
            let last = attempt::Entity::find()
                .select_only()
                .columns([attempt::Column::Outcome, attempt::Column::StatusCode])
                .filter(attempt::Column::EndpointId.eq(endpoint.id.get()))
                .order_by_desc(attempt::Column::Id);
            let last = self
                .reads
                .read(|| last.clone().into_tuple::<(String, Option<i32>)>().one(&self.readers))
                .await?;
            let outcome = last.and_then(|(kind, status)| {
                Outcome::stored(&kind, status.and_then(|s| u16::try_from(s).ok()))
            });
            surveyed.push((endpoint, outcome));
        }
        Ok(surveyed)
    }

    async fn disable(
        &self,
        id: EndpointId,
        reason: DisabledReason,
    ) -> Result<Option<Endpoint>, RepositoryError> {
        self.writer.write(move |txn| Box::pin(disable(txn, id, reason))).await
    }
}

/// In `txn`: disables the endpoint `id` for `reason`, unless it is disabled for good already.
async fn disable(
    txn: &DatabaseTransaction,
    id: EndpointId,
    reason: DisabledReason,
) -> Result<Option<Endpoint>, DbErr> {
    let mut query = endpoint::Entity::find_by_id(id.get());
    if txn.get_database_backend() == DbBackend::Postgres {
        query = query.lock_exclusive();
    }
    let Some(row) = query.one(txn).await? else {
        return Ok(None);
    };
    let mut endpoint = to_endpoint(row).map_err(|e| in_write(&e))?;
    if endpoint.disabled_reason.is_some_and(DisabledReason::is_final) {
        return Ok(Some(endpoint));
    }
    endpoint.status = EndpointStatus::Disabled;
    endpoint.disabled_reason = Some(reason);
    endpoint::Entity::update_many()
        .col_expr(endpoint::Column::Status, Expr::value(EndpointStatus::Disabled.as_str()))
        .col_expr(endpoint::Column::DisabledReason, Expr::value(reason.as_str()))
        .filter(endpoint::Column::Id.eq(id.get()))
        .exec(txn)
        .await?;
    Ok(Some(endpoint))
}
