//! Where API keys are kept.

use std::time::SystemTime;

use async_trait::async_trait;

use crate::keys::model::{ApiKey, KeyDigest, KeyId};
use crate::repository_error::RepositoryError;

/// Where API keys are kept.
#[async_trait]
pub trait ApiKeyStore: Send + Sync + 'static {
    /// Stores a new key.
    ///
    /// # Errors
    ///
    /// [`RepositoryError::Duplicate`] when a key with the same id or digest exists; other
    /// [`RepositoryError`]s when the store fails.
    async fn create(&self, key: &ApiKey) -> Result<(), RepositoryError>;

    /// The key whose digest is `digest`, revoked or not.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    async fn find_by_digest(&self, digest: &KeyDigest) -> Result<Option<ApiKey>, RepositoryError>;

    /// What [`Self::find_by_digest`] would answer, when this store can tell without reading
    /// its storage (a cache's fresh entry): `Some` of the answer, or `None` when only a
    /// lookup can tell. Stores that always read their storage keep this default.
    async fn find_at_hand(&self, _digest: &KeyDigest) -> Option<Option<ApiKey>> {
        None
    }

    /// Every key, revoked ones included, oldest first.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    async fn list(&self) -> Result<Vec<ApiKey>, RepositoryError>;

    /// Marks the key revoked at `at` and returns it; a key revoked before keeps its first
    /// revocation time. `None` when no key has this id.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store fails.
    async fn revoke(&self, id: &KeyId, at: SystemTime) -> Result<Option<ApiKey>, RepositoryError>;

    /// Stores `successor` and marks the key `old` as rotated to it, expiring at `until` (or
    /// at its own expiry, if sooner), in one step: only if `old` exists and is live at `now`
    /// (neither revoked, expired nor rotated already), else nothing is stored.
    ///
    /// # Errors
    ///
    /// [`RepositoryError::Duplicate`] when a key with the successor's id or digest exists;
    /// other [`RepositoryError`]s when the store fails.
    async fn rotate(
        &self,
        successor: &ApiKey,
        old: &KeyId,
        now: SystemTime,
        until: SystemTime,
    ) -> Result<Rotation, RepositoryError>;

    /// Records that the key authenticated a request at `at`.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store fails.
    async fn touch(&self, id: &KeyId, at: SystemTime) -> Result<(), RepositoryError>;
}

/// What [`ApiKeyStore::rotate`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rotation {
    /// The old key, now rotated; the successor is stored.
    Rotated(ApiKey),
    /// No key has the old id.
    NotFound,
    /// The old key as it is, revoked, expired or rotated already; nothing was stored.
    Refused(ApiKey),
}
