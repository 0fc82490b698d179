//! A read-through cache in front of any [`ApiKeyStore`].
//!
//! Every request authenticates, and without a cache every request would read the key store.
//! Lookups by digest are cached for [`CachedApiKeyStore::TTL`], misses included (so that a
//! client retrying a wrong key does not reach the database each time). The TTL bounds how
//! long a revocation made by another process (`animal-store keys revoke`) takes to apply;
//! revocations through this store apply at once.
//!
//! The TTL runs on the clock port, like every other time of the service, so that a test that
//! moves its clock sees lookups expire. moka's own expiry, on the real clock, only bounds how
//! long an entry takes memory.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use animal_store_domain::{
    ApiKey, ApiKeyStore, Clock, KeyDigest, KeyId, RepositoryError, Rotation,
};
use async_trait::async_trait;
use moka::future::Cache;

/// An [`ApiKeyStore`] whose lookups by digest are cached briefly.
pub struct CachedApiKeyStore {
    inner: Arc<dyn ApiKeyStore>,
    clock: Arc<dyn Clock>,
    /// Each lookup, with the time (on `clock`) it was made.
    by_digest: Cache<[u8; 32], (SystemTime, Option<ApiKey>)>,
    /// The digest of each cached key, so that a write by id can drop the key's entry.
    digests: Cache<KeyId, [u8; 32]>,
}

impl CachedApiKeyStore {
    /// How long a lookup is reused: the longest a revocation waits to apply.
    pub const TTL: Duration = Duration::from_millis(900);
    /// The most lookups kept.
    pub const CAPACITY: u64 = 100_000;

    /// A cache in front of `inner`, whose entries age on `clock`.
    pub fn new(inner: Arc<dyn ApiKeyStore>, clock: Arc<dyn Clock>) -> Self {
        Self {
            inner,
            clock,
            by_digest: Cache::builder()
                .max_capacity(Self::CAPACITY)
                .time_to_live(Self::TTL)
                .build(),
            digests: Cache::builder().max_capacity(Self::CAPACITY).time_to_live(Self::TTL).build(),
        }
    }

    async fn forget(&self, id: &KeyId) {
        if let Some(digest) = self.digests.remove(id).await {
            self.by_digest.invalidate(&digest).await;
        }
    }
}

#[async_trait]
impl ApiKeyStore for CachedApiKeyStore {
    async fn create(&self, key: &ApiKey) -> Result<(), RepositoryError> {
        self.inner.create(key).await?;
        self.by_digest.invalidate(key.digest.as_bytes()).await;
        Ok(())
    }

    async fn find_by_digest(&self, digest: &KeyDigest) -> Result<Option<ApiKey>, RepositoryError> {
        let now = self.clock.now();
        if let Some((looked_up, _)) = self.by_digest.get(digest.as_bytes()).await {
            // Older than the TTL, or from a "future" the clock was moved back from.
            let fresh = now.duration_since(looked_up).is_ok_and(|age| age < Self::TTL);
            if !fresh {
                self.by_digest.invalidate(digest.as_bytes()).await;
            }
        }
        let lookup = async { self.inner.find_by_digest(digest).await.map(|key| (now, key)) };
        let found = self.by_digest.try_get_with(*digest.as_bytes(), lookup).await;
        if let Ok((_, Some(key))) = &found {
            self.digests.insert(key.id.clone(), *digest.as_bytes()).await;
        }
        found.map(|(_, key)| key).map_err(|err| match Arc::try_unwrap(err) {
            Ok(err) => err,
            // Other requests waited on the same lookup and hold the error too.
            Err(shared) => match *shared {
                RepositoryError::Unavailable(_) => RepositoryError::Unavailable(Box::new(shared)),
                _ => RepositoryError::Backend(Box::new(shared)),
            },
        })
    }

    async fn find_at_hand(&self, digest: &KeyDigest) -> Option<Option<ApiKey>> {
        let (looked_up, key) = self.by_digest.get(digest.as_bytes()).await?;
        let fresh = self.clock.now().duration_since(looked_up).is_ok_and(|age| age < Self::TTL);
        fresh.then_some(key)
    }

    async fn list(&self) -> Result<Vec<ApiKey>, RepositoryError> {
        self.inner.list().await
    }

    async fn revoke(&self, id: &KeyId, at: SystemTime) -> Result<Option<ApiKey>, RepositoryError> {
        let revoked = self.inner.revoke(id, at).await?;
        self.forget(id).await;
        Ok(revoked)
    }

    async fn rotate(
        &self,
        successor: &ApiKey,
        old: &KeyId,
        now: SystemTime,
        until: SystemTime,
    ) -> Result<Rotation, RepositoryError> {
        let rotation = self.inner.rotate(successor, old, now, until).await?;
        self.forget(old).await;
        self.by_digest.invalidate(successor.digest.as_bytes()).await;
        Ok(rotation)
    }

    async fn touch(&self, id: &KeyId, at: SystemTime) -> Result<(), RepositoryError> {
        self.inner.touch(id, at).await?;
        // The cached copy has the old last-use time: without this, every request in the next
        // TTL would find the key stale and write again.
        self.forget(id).await;
        Ok(())
    }
}
