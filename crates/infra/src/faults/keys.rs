//! The wrappers of the key store and the rate limiter: the two ports every request passes
//! before any other.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use animal_store_domain::{
    ApiKey, ApiKeyStore, Decision, GiveBack, KeyDigest, KeyId, Quota, RateLimitPolicy, RateLimiter,
    RepositoryError, Rotation, Subject,
};
use async_trait::async_trait;

use super::Injector;

/// An [`ApiKeyStore`] that fails on purpose.
pub struct FaultyApiKeyStore {
    inner: Arc<dyn ApiKeyStore>,
    injector: Arc<Injector>,
    /// Only the lookups of keys by digest fail and count.
    lookups_only: bool,
}

impl FaultyApiKeyStore {
    /// `inner`, failing as `injector` decides.
    pub fn new(inner: Arc<dyn ApiKeyStore>, injector: Arc<Injector>) -> Self {
        Self { inner, injector, lookups_only: false }
    }

    /// `inner`, whose lookups of keys by digest, one for each request with a key, fail as
    /// `injector` decides: the key of every Nth request cannot be checked. Nothing else
    /// fails or counts.
    pub fn failing_lookups(inner: Arc<dyn ApiKeyStore>, injector: Arc<Injector>) -> Self {
        Self { inner, injector, lookups_only: true }
    }

    /// The injector's say on a call other than a lookup.
    async fn call(&self) -> Result<(), RepositoryError> {
        if self.lookups_only { Ok(()) } else { self.injector.call().await }
    }
}

#[async_trait]
impl ApiKeyStore for FaultyApiKeyStore {
    async fn create(&self, key: &ApiKey) -> Result<(), RepositoryError> {
        self.call().await?;
        self.inner.create(key).await
    }

    async fn find_by_digest(&self, digest: &KeyDigest) -> Result<Option<ApiKey>, RepositoryError> {
        self.injector.call().await?;
        self.inner.find_by_digest(digest).await
    }

    async fn list(&self) -> Result<Vec<ApiKey>, RepositoryError> {
        self.call().await?;
        self.inner.list().await
    }

    async fn revoke(&self, id: &KeyId, at: SystemTime) -> Result<Option<ApiKey>, RepositoryError> {
        self.call().await?;
        self.inner.revoke(id, at).await
    }

    async fn rotate(
        &self,
        successor: &ApiKey,
        old: &KeyId,
        now: SystemTime,
        until: SystemTime,
    ) -> Result<Rotation, RepositoryError> {
        self.call().await?;
        self.inner.rotate(successor, old, now, until).await
    }

    async fn touch(&self, id: &KeyId, at: SystemTime) -> Result<(), RepositoryError> {
        self.call().await?;
        self.inner.touch(id, at).await
    }
}

/// A [`RateLimiter`] that lags on purpose. Its port cannot fail (every request gets a
/// decision), so only the latency of the [`Faults`](super::Faults) applies: for tests of
/// what a slow shared limiter store does to requests.
pub struct SlowRateLimiter {
    inner: Arc<dyn RateLimiter>,
    latency: Duration,
}

impl SlowRateLimiter {
    /// `inner`, each decision `latency` late.
    pub fn new(inner: Arc<dyn RateLimiter>, latency: Duration) -> Self {
        Self { inner, latency }
    }
}

#[async_trait]
impl RateLimiter for SlowRateLimiter {
    async fn check(&self, subject: &Subject, quota: Quota) -> Decision {
        tokio::time::sleep(self.latency).await;
        self.inner.check(subject, quota).await
    }

    async fn peek(&self, subject: &Subject, quota: Quota) -> Decision {
        tokio::time::sleep(self.latency).await;
        self.inner.peek(subject, quota).await
    }

    async fn give_back(&self, subject: &Subject, taken: &Decision, windows: GiveBack) {
        tokio::time::sleep(self.latency).await;
        self.inner.give_back(subject, taken, windows).await;
    }

    fn policy(&self) -> RateLimitPolicy {
        self.inner.policy()
    }

    fn subjects(&self) -> Option<u64> {
        self.inner.subjects()
    }
}
