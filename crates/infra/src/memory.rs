//! In-memory adapters. They keep nothing across restarts and are meant for tests, demos and
//! integration testers (`--database-url memory://`); they honour every port contract, which
//! the conformance suites check.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{PoisonError, RwLock};
use std::time::SystemTime;

use animal_store_domain::{
    ApiKey, ApiKeyStore, KeyDigest, KeyId, NewPet, Pet, PetId, PetRepository, PetStatus,
    RepositoryError, Rotation,
};
use async_trait::async_trait;

/// Pets in a map ordered by id.
#[derive(Debug, Default)]
pub struct MemoryPetRepository {
    pets: RwLock<BTreeMap<PetId, Pet>>,
}

impl MemoryPetRepository {
    /// An empty catalogue.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl PetRepository for MemoryPetRepository {
    async fn create(&self, pet: NewPet) -> Result<Pet, RepositoryError> {
        let mut pets = self.pets.write().unwrap_or_else(PoisonError::into_inner);
        let id = PetId::new(pets.last_key_value().map_or(1, |(id, _)| id.get() + 1));
        let pet = Pet::from_new(id, pet);
        pets.insert(id, pet.clone());
        Ok(pet)
    }

    async fn get(&self, id: PetId) -> Result<Option<Pet>, RepositoryError> {
        Ok(self.pets.read().unwrap_or_else(PoisonError::into_inner).get(&id).cloned())
    }

    async fn list(
        &self,
        status: Option<PetStatus>,
        after: Option<PetId>,
        limit: usize,
    ) -> Result<Vec<Pet>, RepositoryError> {
        let pets = self.pets.read().unwrap_or_else(PoisonError::into_inner);
        let from = after.map_or(Bound::Unbounded, Bound::Excluded);
        Ok(pets
            .range((from, Bound::Unbounded))
            .map(|(_, pet)| pet)
            .filter(|pet| status.is_none_or(|s| pet.status == s))
            .take(limit)
            .cloned()
            .collect())
    }
}

/// API keys in a map ordered by creation.
#[derive(Debug, Default)]
pub struct MemoryApiKeyStore {
    keys: RwLock<Vec<ApiKey>>,
}

impl MemoryApiKeyStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn update<T>(&self, id: &KeyId, f: impl FnOnce(&mut ApiKey) -> T) -> Option<T> {
        let mut keys = self.keys.write().unwrap_or_else(PoisonError::into_inner);
        keys.iter_mut().find(|k| &k.id == id).map(f)
    }
}

#[async_trait]
impl ApiKeyStore for MemoryApiKeyStore {
    async fn create(&self, key: &ApiKey) -> Result<(), RepositoryError> {
        let mut keys = self.keys.write().unwrap_or_else(PoisonError::into_inner);
        if keys.iter().any(|k| k.id == key.id || k.digest == key.digest) {
            return Err(RepositoryError::Duplicate);
        }
        keys.push(key.clone());
        Ok(())
    }

    async fn find_by_digest(&self, digest: &KeyDigest) -> Result<Option<ApiKey>, RepositoryError> {
        let keys = self.keys.read().unwrap_or_else(PoisonError::into_inner);
        Ok(keys.iter().find(|k| k.digest.matches(digest)).cloned())
    }

    async fn list(&self) -> Result<Vec<ApiKey>, RepositoryError> {
        Ok(self.keys.read().unwrap_or_else(PoisonError::into_inner).clone())
    }

    async fn revoke(&self, id: &KeyId, at: SystemTime) -> Result<Option<ApiKey>, RepositoryError> {
        Ok(self.update(id, |key| {
            key.revoked_at.get_or_insert(at);
            key.clone()
        }))
    }

    async fn rotate(
        &self,
        successor: &ApiKey,
        old: &KeyId,
        now: SystemTime,
        until: SystemTime,
    ) -> Result<Rotation, RepositoryError> {
        let mut keys = self.keys.write().unwrap_or_else(PoisonError::into_inner);
        if keys.iter().any(|k| k.id == successor.id || k.digest == successor.digest) {
            return Err(RepositoryError::Duplicate);
        }
        let Some(key) = keys.iter_mut().find(|k| k.id == *old) else {
            return Ok(Rotation::NotFound);
        };
        if key.rotated_to.is_some() || !key.is_live(now) {
            return Ok(Rotation::Refused(key.clone()));
        }
        key.rotated_to = Some(successor.id.clone());
        key.expires_at = Some(key.expires_at.map_or(until, |at| at.min(until)));
        let rotated = key.clone();
        keys.push(successor.clone());
        Ok(Rotation::Rotated(rotated))
    }

    async fn touch(&self, id: &KeyId, at: SystemTime) -> Result<(), RepositoryError> {
        self.update(id, |key| key.last_used_at = Some(at));
        Ok(())
    }
}
