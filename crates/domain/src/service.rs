//! The use cases: what a client of the API or an operator at the command line can do.
//!
//! Services hold their ports as `Arc<dyn Port>` and nothing else they do not need; they are
//! cheap to clone and shared by every request.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use thiserror::Error;

use crate::api_key::{ApiKey, ApiKeySecret, Environment, KeyId, KeyName, PresentedKey};
use crate::pet::{NewPet, PageSize, Pet, PetId, PetStatus};
use crate::plan::Plan;
use crate::ports::{ApiKeyStore, Clock, PetRepository, RepositoryError};

/// What a listing asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PetQuery {
    /// Only pets with this status, when given.
    pub status: Option<PetStatus>,
    /// At most this many pets.
    pub limit: PageSize,
    /// Only pets after this id: the position a cursor carries.
    pub after: Option<PetId>,
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PetPage {
    /// The pets, ordered by id ascending.
    pub pets: Vec<Pet>,
    /// Where the next page starts, when there is one.
    pub next_after: Option<PetId>,
}

/// Why a pet could not be fetched.
#[derive(Debug, Error)]
pub enum GetPetError {
    /// No pet has this id.
    #[error("no pet has id {0}")]
    NotFound(PetId),
    /// The store failed.
    #[error(transparent)]
    Repository(#[from] RepositoryError),
}

/// The pet catalogue.
#[derive(Clone)]
pub struct PetService {
    pets: Arc<dyn PetRepository>,
}

impl PetService {
    /// A catalogue kept in `pets`.
    pub fn new(pets: Arc<dyn PetRepository>) -> Self {
        Self { pets }
    }

    /// Adds a pet.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when it could not be stored durably.
    pub async fn add(&self, pet: NewPet) -> Result<Pet, RepositoryError> {
        self.pets.create(pet).await
    }

    /// The pet with this id.
    ///
    /// # Errors
    ///
    /// [`GetPetError::NotFound`] when there is none.
    pub async fn get(&self, id: PetId) -> Result<Pet, GetPetError> {
        self.pets.get(id).await?.ok_or(GetPetError::NotFound(id))
    }

    /// One page of pets. Asks the store for one pet more than the page holds, to know whether
    /// a next page exists without a second query.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    pub async fn list(&self, query: PetQuery) -> Result<PetPage, RepositoryError> {
        let limit = query.limit.get();
        let mut pets = self.pets.list(query.status, query.after, limit + 1).await?;
        let next_after = if pets.len() > limit {
            pets.truncate(limit);
            pets.last().map(|pet| pet.id)
        } else {
            None
        };
        Ok(PetPage { pets, next_after })
    }
}

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

/// Issuing, listing, revoking and checking API keys.
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

    /// Issues a new key on `plan`.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when it could not be stored.
    pub async fn issue(
        &self,
        name: Option<KeyName>,
        plan: Plan,
    ) -> Result<IssuedKey, RepositoryError> {
        // A random 12-character id collides about never; retry the rare clash rather than
        // fail the operator's command.
        let mut attempts = 0;
        loop {
            let (id, secret) = ApiKeySecret::generate(self.environment);
            let key = ApiKey {
                id,
                name: name.clone(),
                plan,
                environment: self.environment,
                digest: secret.digest(),
                created_at: self.clock.now(),
                last_used_at: None,
                revoked_at: None,
            };
            match self.keys.create(&key).await {
                Ok(()) => return Ok(IssuedKey { key, secret }),
                Err(RepositoryError::Duplicate) if attempts < 3 => attempts += 1,
                Err(err) => return Err(err),
            }
        }
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
        self.keys
            .revoke(id, self.clock.now())
            .await?
            .ok_or_else(|| RevokeKeyError::NotFound(id.clone()))
    }

    /// The live key of this environment that `presented` is, if any. Malformed, unknown,
    /// revoked and other-environment keys are all simply `None`: the caller must not be able
    /// to tell them apart.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    pub async fn authenticate(&self, presented: &str) -> Result<Option<ApiKey>, RepositoryError> {
        let Some(presented) = PresentedKey::parse(presented) else {
            return Ok(None);
        };
        if presented.environment != self.environment {
            return Ok(None);
        }
        let Some(key) = self.keys.find_by_digest(&presented.digest).await? else {
            return Ok(None);
        };
        let live = key.digest.matches(&presented.digest)
            && key.id == presented.id
            && key.environment == self.environment
            && key.revoked_at.is_none();
        Ok(live.then_some(key))
    }

    /// Records that `key` authenticated a request now, at most once per
    /// [`Self::LAST_USED_RESOLUTION`]. Separate from [`Self::authenticate`] so that a caller
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
