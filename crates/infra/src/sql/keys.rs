//! The API key store over SeaORM.
//!
//! Lookups go to the reader pool; every write (creation, revocation, last use) goes through the
//! database's writer (see [`writer`](crate::sql::writer::thread)), like the pets', so that a failed
//! commit can never leave a connection holding SQLite's write lock.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use animal_store_domain::{
    ApiKey, ApiKeyStore, Environment, KeyDigest, KeyId, KeyName, Plan, RepositoryError, Rotation,
    Scope,
};
use async_trait::async_trait;
use sea_orm::sea_query::{CaseStatement, Expr, ExprTrait};
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder, Set};

use crate::sql::connection::failure::corrupt;
use crate::sql::connection::reachability::Reads;
use crate::sql::schema::entity::api_key;
use crate::sql::writer::job::Writer;

/// API keys in an SQL database.
#[derive(Clone)]
pub struct SeaOrmApiKeyStore {
    readers: DatabaseConnection,
    reads: Arc<Reads>,
    writer: Writer,
}

impl SeaOrmApiKeyStore {
    pub(crate) fn new(readers: DatabaseConnection, reads: Arc<Reads>, writer: Writer) -> Self {
        Self { readers, reads, writer }
    }
}

fn millis(at: SystemTime) -> i64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn instant(millis: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(millis).unwrap_or(0))
}

// The mappings below name every field, on both sides and without `..`: a field added to
// `ApiKey` or the row does not compile until it is mapped here.

fn to_row(key: &ApiKey) -> api_key::ActiveModel {
    let ApiKey {
        id,
        name,
        plan,
        scope,
        environment,
        digest,
        created_at,
        last_used_at,
        revoked_at,
        expires_at,
        rotated_to,
        owner,
    } = key;
    let custom = match plan {
        Plan::Enterprise(quota) => Some(*quota),
        _ => None,
    };
    api_key::ActiveModel {
        id: Set(id.as_str().to_owned()),
        digest: Set(digest.as_bytes().to_vec()),
        name: Set(name.as_ref().map(|n| n.as_str().to_owned())),
        plan: Set(plan.name().to_owned()),
        per_minute: Set(custom.map(|q| i64::from(q.per_minute.get()))),
        per_day: Set(custom.map(|q| i64::from(q.per_day.get()))),
        environment: Set(environment.name().to_owned()),
        created_at: Set(millis(*created_at)),
        last_used_at: Set(last_used_at.map(millis)),
        revoked_at: Set(revoked_at.map(millis)),
        expires_at: Set(expires_at.map(millis)),
        rotated_to: Set(rotated_to.as_ref().map(|to| to.as_str().to_owned())),
        lineage: Set((owner != id).then(|| owner.as_str().to_owned())),
        scope: Set(Some(scope.name().to_owned())),
    }
}

fn to_key(row: &api_key::Model) -> Result<ApiKey, RepositoryError> {
    let api_key::Model {
        id,
        digest,
        name,
        plan,
        per_minute,
        per_day,
        environment,
        created_at,
        last_used_at,
        revoked_at,
        expires_at,
        rotated_to,
        lineage,
        scope,
    } = row;
    let key_id = |id: &str| KeyId::new(id).map_err(|e| corrupt("api_keys", e));
    let limit = |n: &Option<i64>| {
        n.map(|n| u32::try_from(n).map_err(|e| corrupt("api_keys", e))).transpose()
    };
    Ok(ApiKey {
        id: key_id(id)?,
        name: name
            .as_deref()
            .map(KeyName::stored)
            .transpose()
            .map_err(|e| corrupt("api_keys", e))?,
        plan: Plan::new(plan, limit(per_minute)?, limit(per_day)?)
            .map_err(|e| corrupt("api_keys", e))?,
        // A key issued before scopes existed could do everything.
        scope: scope
            .as_deref()
            .map_or(Ok(Scope::Write), str::parse)
            .map_err(|e| corrupt("api_keys", e))?,
        environment: environment.parse::<Environment>().map_err(|e| corrupt("api_keys", e))?,
        digest: KeyDigest::from_bytes(digest)
            .ok_or_else(|| corrupt("api_keys", "the digest is not 32 bytes"))?,
        created_at: instant(*created_at),
        last_used_at: last_used_at.map(instant),
        revoked_at: revoked_at.map(instant),
        expires_at: expires_at.map(instant),
        rotated_to: rotated_to.as_deref().map(key_id).transpose()?,
        owner: key_id(lineage.as_deref().unwrap_or(id))?,
    })
}

#[async_trait]
impl ApiKeyStore for SeaOrmApiKeyStore {
    async fn create(&self, key: &ApiKey) -> Result<(), RepositoryError> {
        let row = to_row(key);
        self.writer
            .write(move |txn| {
                Box::pin(async move {
                    api_key::Entity::insert(row).exec_without_returning(txn).await.map(drop)
                })
            })
            .await
    }

    async fn find_by_digest(&self, digest: &KeyDigest) -> Result<Option<ApiKey>, RepositoryError> {
        let query =
            api_key::Entity::find().filter(api_key::Column::Digest.eq(digest.as_bytes().to_vec()));
        self.reads
            .read(|| query.clone().one(&self.readers))
            .await?
            .map(|row| to_key(&row))
            .transpose()
    }

    async fn list(&self) -> Result<Vec<ApiKey>, RepositoryError> {
        let query = api_key::Entity::find()
            .order_by_asc(api_key::Column::CreatedAt)
            .order_by_asc(api_key::Column::Id);
        self.reads
            .run(query.all(&self.readers))
            .await?
            .into_iter()
            .map(|row| to_key(&row))
            .collect()
    }

    async fn revoke(&self, id: &KeyId, at: SystemTime) -> Result<Option<ApiKey>, RepositoryError> {
        // Only a live key gets a revocation time: revoking twice keeps the first one.
        let revoke = api_key::Entity::update_many()
            .col_expr(api_key::Column::RevokedAt, Expr::value(millis(at)))
            .filter(api_key::Column::Id.eq(id.as_str()))
            .filter(api_key::Column::RevokedAt.is_null());
        let find = api_key::Entity::find_by_id(id.as_str());
        let row = self
            .writer
            .write(move |txn| {
                Box::pin(async move {
                    revoke.exec(txn).await?;
                    find.one(txn).await
                })
            })
            .await?;
        row.map(|row| to_key(&row)).transpose()
    }

    async fn rotate(
        &self,
        successor: &ApiKey,
        old: &KeyId,
        now: SystemTime,
        until: SystemTime,
    ) -> Result<Rotation, RepositoryError> {
        let (now, until) = (millis(now), millis(until));
        // Only a live key that was not rotated yet is rotated, checked and changed in one
        // statement: two rotations at once cannot both succeed.
        // The sooner of its own expiry and the end of the grace.
        let expires_at = CaseStatement::new()
            .case(api_key::Column::ExpiresAt.lt(until), Expr::col(api_key::Column::ExpiresAt))
            .finally(until);
        let rotate = api_key::Entity::update_many()
            .col_expr(api_key::Column::RotatedTo, Expr::value(successor.id.as_str()))
            .col_expr(api_key::Column::ExpiresAt, expires_at.into())
            .filter(api_key::Column::Id.eq(old.as_str()))
            .filter(api_key::Column::RevokedAt.is_null())
            .filter(api_key::Column::RotatedTo.is_null())
            .filter(api_key::Column::ExpiresAt.is_null().or(api_key::Column::ExpiresAt.gt(now)));
        let insert = api_key::Entity::insert(to_row(successor));
        let find = api_key::Entity::find_by_id(old.as_str());
        let (rotated, row) = self
            .writer
            .write(move |txn| {
                Box::pin(async move {
                    let rotated = rotate.exec(txn).await?.rows_affected == 1;
                    if rotated {
                        insert.exec_without_returning(txn).await?;
                    }
                    Ok((rotated, find.one(txn).await?))
                })
            })
            .await?;
        Ok(match row.map(|row| to_key(&row)).transpose()? {
            None => Rotation::NotFound,
            Some(key) if rotated => Rotation::Rotated(key),
            Some(key) => Rotation::Refused(key),
        })
    }

    async fn touch(&self, id: &KeyId, at: SystemTime) -> Result<(), RepositoryError> {
        let touch = api_key::Entity::update_many()
            .col_expr(api_key::Column::LastUsedAt, Expr::value(millis(at)))
            .filter(api_key::Column::Id.eq(id.as_str()));
        self.writer.write(move |txn| Box::pin(async move { touch.exec(txn).await.map(drop) })).await
    }
}
