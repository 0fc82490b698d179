//! Where pets are kept, changed and counted.

use async_trait::async_trait;

use crate::pets::changes::{ChangePetError, Inventory, PetPatch, Precondition};
use crate::pets::model::{NewPet, Pet, PetId, PetStatus};
use crate::repository_error::RepositoryError;

/// Where pets are kept.
#[async_trait]
pub trait PetRepository: Send + Sync + 'static {
    /// Stores a new pet durably and returns it with the id the store assigned. Ids grow: a
    /// pet added later has a greater id.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the pet could not be stored; nothing is stored then.
    async fn create(&self, pet: NewPet) -> Result<Pet, RepositoryError>;

    /// The pet with this id, if there is one.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    async fn get(&self, id: PetId) -> Result<Option<Pet>, RepositoryError>;

    /// Up to `count` pets whose id is greater than `after` (all when `None`) and, when
    /// `status` is given, whose status is `status`, ordered by id ascending.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    async fn list(
        &self,
        status: Option<PetStatus>,
        after: Option<PetId>,
        count: usize,
    ) -> Result<Vec<Pet>, RepositoryError>;

    /// The pets of `ids` (ascending, each once), ordered by id ascending; an id no pet has is
    /// simply absent. One [`PetRepository::get`] after another, unless the store overrides it
    /// to read them at once.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    async fn get_many(&self, ids: &[PetId]) -> Result<Vec<Pet>, RepositoryError> {
        let mut pets = Vec::with_capacity(ids.len());
        for id in ids {
            pets.extend(self.get(*id).await?);
        }
        Ok(pets)
    }
}

/// Where pets are changed, removed and counted, beside the orders that hold them: an open
/// order's pet keeps its status and stays (see [`PetChange::needs_release`]). A port of its
/// own, so that an adapter of [`PetRepository`] written before it still compiles.
///
/// [`PetChange::needs_release`]: crate::pets::changes::PetChange::needs_release
#[async_trait]
pub trait PetChanges: Send + Sync + 'static {
    /// In one transaction: if the pet exists, `expected` holds for it as stored, and no open
    /// order forbids the patch, applies `patch` and returns the pet as it is then.
    ///
    /// # Errors
    ///
    /// [`ChangePetError::NotFound`], [`ChangePetError::PreconditionFailed`] or
    /// [`ChangePetError::Held`], decided in that order, and nothing changes;
    /// [`ChangePetError::Repository`] when the store fails, and nothing changes.
    async fn update(
        &self,
        id: PetId,
        patch: PetPatch,
        expected: Option<Precondition>,
    ) -> Result<Pet, ChangePetError>;

    /// In one transaction: if the pet exists, `expected` holds for it and no open order
    /// holds it, removes it and returns it as it was. Its id is never given to another pet;
    /// the closed orders that name it stay.
    ///
    /// # Errors
    ///
    /// As [`PetChanges::update`].
    async fn remove(
        &self,
        id: PetId,
        expected: Option<Precondition>,
    ) -> Result<Pet, ChangePetError>;

    /// How many pets have each status, exact after every committed write, at a cost that
    /// does not grow with the number of pets.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store cannot be read.
    async fn inventory(&self) -> Result<Inventory, RepositoryError>;
}
