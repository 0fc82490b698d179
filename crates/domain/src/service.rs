//! The use cases: what a client of the API or an operator at the command line can do.
//!
//! Services hold their ports as `Arc<dyn Port>` and nothing else they do not need; they are
//! cheap to clone and shared by every request.

use std::sync::Arc;

use thiserror::Error;

use crate::pet::{NewPet, PageSize, Pet, PetId, PetStatus};
use crate::ports::PetRepository;
use crate::repository_error::RepositoryError;

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
