//! The use cases: what a client of the API or an operator at the command line can do.
//!
//! Services hold their ports as `Arc<dyn Port>` and nothing else they do not need; they are
//! cheap to clone and shared by every request.

use std::sync::Arc;

use thiserror::Error;

use crate::listing::{Listing, Page};
use crate::pets::changes::{ChangePetError, Inventory, PetPatch, Precondition};
use crate::pets::model::{NewPet, Pet, PetId, PetIds, PetStatus};
use crate::pets::ports::{PetChanges, PetRepository};
use crate::repository_error::RepositoryError;

/// What a listing of pets asks for: a status, a page size, the pet a cursor names.
pub type PetListing = Listing<PetStatus, PetId>;

/// One page of pets.
pub type PetPage = Page<Pet, PetId>;

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
    changes: Arc<dyn PetChanges>,
}

impl PetService {
    /// A catalogue kept in `pets`, changed and counted through `changes`.
    pub fn new(pets: Arc<dyn PetRepository>, changes: Arc<dyn PetChanges>) -> Self {
        Self { pets, changes }
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

    /// One page of pets.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    pub async fn list(&self, listing: PetListing) -> Result<PetPage, RepositoryError> {
        let fetched = self.pets.list(listing.filter, listing.after, listing.fetch()).await?;
        Ok(listing.page(fetched, |pet| pet.id))
    }

    /// One page of the pets of `ids`, the listing's status and position applied as to any
    /// page; an id no pet has is simply absent.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    pub async fn list_by_ids(
        &self,
        ids: &PetIds,
        listing: PetListing,
    ) -> Result<PetPage, RepositoryError> {
        let wanted = ids.after(listing.after);
        let found = if wanted.is_empty() { Vec::new() } else { self.pets.get_many(wanted).await? };
        let fetched = found
            .into_iter()
            .filter(|pet| listing.filter.is_none_or(|status| pet.status == status))
            .take(listing.fetch())
            .collect();
        Ok(listing.page(fetched, |pet| pet.id))
    }

    /// Changes the fields `patch` names, if `expected` holds for the pet as stored.
    ///
    /// # Errors
    ///
    /// [`ChangePetError`]: no such pet, the precondition failed, an open order holds its
    /// status, or the store failed; nothing changed.
    pub async fn update(
        &self,
        id: PetId,
        patch: PetPatch,
        expected: Option<Precondition>,
    ) -> Result<Pet, ChangePetError> {
        self.changes.update(id, patch, expected).await
    }

    /// Removes the pet, if `expected` holds for it as stored; returns it as it was.
    ///
    /// # Errors
    ///
    /// [`ChangePetError`]: no such pet, the precondition failed, an open order holds it, or
    /// the store failed; nothing changed.
    pub async fn remove(
        &self,
        id: PetId,
        expected: Option<Precondition>,
    ) -> Result<Pet, ChangePetError> {
        self.changes.remove(id, expected).await
    }

    /// How many pets have each status.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    pub async fn inventory(&self) -> Result<Inventory, RepositoryError> {
        self.changes.inventory().await
    }
}
