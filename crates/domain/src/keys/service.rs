//! The key use cases: issuing, listing, revoking and rotating API keys, and checking the
//! key a request presents (`docs/operations.md#api-keys`).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use thiserror::Error;

use crate::keys::model::{ApiKey, ApiKeySecret, Environment, KeyId, KeyName, PresentedKey};
use crate::keys::plan::Plan;
use crate::keys::ports::{ApiKeyStore, Rotation};
use crate::keys::scope::Scope;
use crate::ports::Clock;
use crate::repository_error::RepositoryError;

/// A key just issued: the only moment its secret is known.
#[derive(Debug)]
pub struct IssuedKey {
    /// The stored key.
    pub key: ApiKey,
    /// The whole key, to hand to its owner once.
    pub secret: ApiKeySecret,
}

/// Why a key could not be revoked.
#[derive(Debug, Error)]
pub enum RevokeKeyError {
    /// No key has this id.
    #[error("no key has id {0}")]
    NotFound(KeyId),
    /// The store failed.
    #[error(transparent)]
    Repository(#[from] RepositoryError),
}

/// A key rotated: the old key, working until its grace ends, and the new one.
#[derive(Debug)]
pub struct RotatedKey {
    /// The old key, rotated.
    pub old: ApiKey,
    /// The new key and its secret.
    pub new: IssuedKey,
}

/// Why a key could not be rotated.
#[derive(Debug, Error)]
pub enum RotateKeyError {
    /// No key has this id.
    #[error("no key has id {0}")]
    NotFound(KeyId),
    /// The key is revoked or expired.
    #[error("key {0} no longer works: it is revoked or expired")]
    NotLive(KeyId),
    /// The key was rotated already.
    #[error("key {id} was rotated already, to {to}: rotate {to} instead")]
    AlreadyRotated {
        /// The key.
        id: KeyId,
        /// Its successor.
        to: KeyId,
    },
    /// The store failed.
    #[error(transparent)]
    Repository(#[from] RepositoryError),
}

/// What [`KeyService::recognise`] tells of a presented key.
#[derive(Debug)]
pub enum Recognised {
    /// Known without a lookup: the live key, or `None` for a key that is not one (malformed,
    /// of the other environment, or a cached miss).
    Known(Option<ApiKey>),
    /// Only a lookup can tell ([`KeyService::look_up`]).
    ToLookUp(PresentedKey),
}

/// Issuing, listing, revoking, rotating and checking API keys.
#[derive(Clone)]
pub struct KeyService {
    keys: Arc<dyn ApiKeyStore>,
    clock: Arc<dyn Clock>,
    environment: Environment,
}

impl KeyService {
    /// How stale a key's `last_used_at` may get. Writing it on every request would cost a
    /// durable write per read; once a minute is plenty to tell live keys from dead ones.
    pub const LAST_USED_RESOLUTION: Duration = Duration::from_mins(1);

    /// Keys of `environment`, kept in `keys`.
    pub fn new(
        keys: Arc<dyn ApiKeyStore>,
        clock: Arc<dyn Clock>,
        environment: Environment,
    ) -> Self {
        Self { keys, clock, environment }
    }

    /// The environment whose keys this service issues and accepts.
    pub fn environment(&self) -> Environment {
        self.environment
    }

    /// Issues a new key on `plan`, of the `write` scope, valid until revoked.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when it could not be stored.
    pub async fn issue(
        &self,
        name: Option<KeyName>,
        plan: Plan,
    ) -> Result<IssuedKey, RepositoryError> {
        self.issue_as(name, plan, Scope::Write, None).await
    }

    /// Issues a new key on `plan`, of `scope`, that stops working `expires_in` from now, if
    /// given.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when it could not be stored.
    pub async fn issue_as(
        &self,
        name: Option<KeyName>,
        plan: Plan,
        scope: Scope,
        expires_in: Option<Duration>,
    ) -> Result<IssuedKey, RepositoryError> {
        let now = self.clock.now();
        let template = Successor {
            name,
            plan,
            scope,
            environment: self.environment,
            created_at: now,
            expires_at: expires_in.map(|d| now + d),
            owner: None,
        };
        with_fresh_id(|| {
            let issued = template.issue();
            let keys = &self.keys;
            async move { keys.create(&issued.key).await.map(|()| issued) }
        })
        .await
    }

    /// Rotates the key `id`: issues a key with its plan, quotas, scope, name and environment,
    /// which shares its quota, and lets the old key work `grace` longer (or until its own
    /// expiry, if sooner). The new key expires `expires_in` from now, if given.
    ///
    /// # Errors
    ///
    /// [`RotateKeyError`] when no key has this id, when it no longer works or was rotated
    /// already, or when the store fails.
    pub async fn rotate(
        &self,
        id: &KeyId,
        grace: Duration,
        expires_in: Option<Duration>,
    ) -> Result<RotatedKey, RotateKeyError> {
        let now = self.clock.now();
        let old = self.keys.list().await?.into_iter().find(|key| key.id == *id);
        let old = old.ok_or_else(|| RotateKeyError::NotFound(id.clone()))?;
        refuse_rotation(&old, now)?;
        let template = Successor {
            name: old.name.clone(),
            plan: old.plan,
            scope: old.scope,
            environment: old.environment,
            created_at: now,
            expires_at: expires_in.map(|d| now + d),
            owner: Some(old.owner.clone()),
        };
        with_fresh_id(|| {
            let new = template.issue();
            let keys = &self.keys;
            async move {
                match keys.rotate(&new.key, id, now, now + grace).await? {
                    Rotation::Rotated(old) => Ok(Ok(RotatedKey { old, new })),
                    Rotation::NotFound => Ok(Err(RotateKeyError::NotFound(id.clone()))),
                    // Changed since it was read: say how.
                    Rotation::Refused(old) => Ok(refuse_rotation(&old, now)
                        .and_then(|()| Err(RotateKeyError::NotLive(old.id.clone())))),
                }
            }
        })
        .await?
    }

    /// Every key, oldest first.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    pub async fn list(&self) -> Result<Vec<ApiKey>, RepositoryError> {
        self.keys.list().await
    }

    /// Revokes a key; revoking a revoked key again is not an error.
    ///
    /// # Errors
    ///
    /// [`RevokeKeyError::NotFound`] when no key has this id.
    pub async fn revoke(&self, id: &KeyId) -> Result<ApiKey, RevokeKeyError> {
        self.revoke_at(id, self.clock.now()).await
    }

    /// Revokes the key `id` as of `at`, which may be to come (a harness's fixture key that
    /// stops working during a test); it authenticates nothing from then on.
    ///
    /// # Errors
    ///
    /// As [`Self::revoke`].
    pub async fn revoke_at(&self, id: &KeyId, at: SystemTime) -> Result<ApiKey, RevokeKeyError> {
        self.keys.revoke(id, at).await?.ok_or_else(|| RevokeKeyError::NotFound(id.clone()))
    }

    /// What can be told of the key `presented` without reading the key store: a key that
    /// cannot be one of this service's is known not to be live, and a key the store has at
    /// hand (a cached lookup) is known either way; any other needs [`Self::look_up`], which
    /// gets it parsed and digested once already.
    pub async fn recognise(&self, presented: &str) -> Recognised {
        let Some(presented) = PresentedKey::parse(presented) else {
            return Recognised::Known(None);
        };
        if presented.environment != self.environment {
            return Recognised::Known(None);
        }
        match self.keys.find_at_hand(&presented.digest).await {
            Some(key) => Recognised::Known(key.filter(|key| self.is_live(key, &presented))),
            None => Recognised::ToLookUp(presented),
        }
    }

    /// The live key of this environment that `presented` is, read from the key store.
    /// Unknown, revoked, expired and rotated-out keys are all simply `None`: the caller must
    /// not be able to tell them apart.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    pub async fn look_up(
        &self,
        presented: &PresentedKey,
    ) -> Result<Option<ApiKey>, RepositoryError> {
        let key = self.keys.find_by_digest(&presented.digest).await?;
        Ok(key.filter(|key| self.is_live(key, presented)))
    }

    /// Whether `key`, found by the digest of `presented`, is that key and works now.
    fn is_live(&self, key: &ApiKey, presented: &PresentedKey) -> bool {
        key.digest.matches(&presented.digest)
            && key.id == presented.id
            && key.environment == self.environment
            && key.is_live(self.clock.now())
    }

    /// Records that `key` authenticated a request now, at most once per
    /// [`Self::LAST_USED_RESOLUTION`]. Separate from [`Self::look_up`] so that a caller
    /// can let the request go on when only this bookkeeping fails.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be written.
    pub async fn record_use(&self, key: &ApiKey) -> Result<(), RepositoryError> {
        let now = self.clock.now();
        if is_stale(key.last_used_at, now) {
            self.keys.touch(&key.id, now).await?;
        }
        Ok(())
    }
}

/// Why `old` cannot be rotated at `now`, if it cannot.
fn refuse_rotation(old: &ApiKey, now: SystemTime) -> Result<(), RotateKeyError> {
    if let Some(successor) = &old.rotated_to {
        return Err(RotateKeyError::AlreadyRotated { id: old.id.clone(), to: successor.clone() });
    }
    if !old.is_live(now) {
        return Err(RotateKeyError::NotLive(old.id.clone()));
    }
    Ok(())
}

/// What a new key is made of, but its id and secret.
struct Successor {
    name: Option<KeyName>,
    plan: Plan,
    scope: Scope,
    environment: Environment,
    created_at: SystemTime,
    expires_at: Option<SystemTime>,
    /// The line it continues; its own id when `None`.
    owner: Option<KeyId>,
}

impl Successor {
    /// A key with a fresh id and secret.
    fn issue(&self) -> IssuedKey {
        let (id, secret) = ApiKeySecret::generate(self.environment);
        let key = ApiKey {
            owner: self.owner.clone().unwrap_or_else(|| id.clone()),
            id,
            name: self.name.clone(),
            plan: self.plan,
            scope: self.scope,
            environment: self.environment,
            digest: secret.digest(),
            created_at: self.created_at,
            last_used_at: None,
            revoked_at: None,
            expires_at: self.expires_at,
            rotated_to: None,
        };
        IssuedKey { key, secret }
    }
}

/// Runs `store` with a fresh key until its id and digest are new: a random 12-character id
/// collides about never, and the rare clash is retried rather than failing the operator's
/// command.
async fn with_fresh_id<T, F, Fut>(mut store: F) -> Result<T, RepositoryError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, RepositoryError>>,
{
    let mut attempts = 0;
    loop {
        match store().await {
            Err(RepositoryError::Duplicate) if attempts < 3 => attempts += 1,
            outcome => return outcome,
        }
    }
}

fn is_stale(last_used_at: Option<SystemTime>, now: SystemTime) -> bool {
    last_used_at.is_none_or(|at| {
        now.duration_since(at).is_ok_and(|age| age >= KeyService::LAST_USED_RESOLUTION)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_used_is_refreshed_once_a_minute() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        assert!(is_stale(None, t0));
        assert!(!is_stale(Some(t0), t0 + Duration::from_secs(59)));
        assert!(is_stale(Some(t0), t0 + Duration::from_mins(1)));
        assert!(!is_stale(Some(t0 + Duration::from_secs(5)), t0));
    }
}
