//! Pets in memory: a map ordered by id, the count of each status, and which open order
//! holds which pet, all behind one lock, so that a change and what it is checked against
//! are one step.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::{PoisonError, RwLock, RwLockWriteGuard};

use animal_store_domain::{
    ChangePetError, Inventory, NewPet, OrderId, Pet, PetChange, PetChanges, PetId, PetPatch,
    PetRepository, PetStatus, Precondition, RepositoryError,
};
use async_trait::async_trait;

/// Pets in a map ordered by id.
#[derive(Debug, Default)]
pub struct MemoryPetRepository {
    shelf: RwLock<Shelf>,
}

/// What the pets' lock guards.
#[derive(Debug, Default)]
pub(super) struct Shelf {
    pets: BTreeMap<PetId, Pet>,
    /// The greatest id ever given: a removed pet's id is never given again.
    last_id: i64,
    inventory: Inventory,
    /// The open order that holds each held pet, kept by the orders beside these pets.
    holds: HashMap<PetId, OrderId>,
}

impl Shelf {
    pub(super) fn get(&self, id: PetId) -> Option<&Pet> {
        self.pets.get(&id)
    }

    fn add(&mut self, pet: NewPet) -> Pet {
        self.last_id += 1;
        let pet = Pet::from_new(PetId::new(self.last_id), pet);
        self.inventory[pet.status] += 1;
        self.pets.insert(pet.id, pet.clone());
        pet
    }

    /// Moves the pet `id`, if there is one, to `status`.
    pub(super) fn set_status(&mut self, id: PetId, status: PetStatus) {
        if let Some(pet) = self.pets.get_mut(&id) {
            self.inventory[pet.status] -= 1;
            self.inventory[status] += 1;
            pet.status = status;
        }
    }

    /// Records that the open order `order` holds the pet `id`.
    pub(super) fn hold(&mut self, id: PetId, order: OrderId) {
        self.holds.insert(id, order);
    }

    /// Records that no open order holds the pet `id` any more.
    pub(super) fn release(&mut self, id: PetId) {
        self.holds.remove(&id);
    }

    /// Makes `change` to the pet `id` if the rules of [`PetChanges`] allow it.
    fn change(
        &mut self,
        id: PetId,
        change: &PetChange,
        expected: Option<Precondition>,
    ) -> Result<Pet, ChangePetError> {
        let pet = self.pets.get(&id).ok_or(ChangePetError::NotFound(id))?;
        if expected.is_some_and(|expected| !expected(pet)) {
            return Err(ChangePetError::PreconditionFailed(id));
        }
        if let Some(&order) = self.holds.get(&id).filter(|_| change.needs_release(pet)) {
            return Err(ChangePetError::Held { pet: id, order });
        }
        match change {
            PetChange::Update(patch) => {
                let changed = patch.apply(pet);
                self.set_status(id, changed.status);
                self.pets.insert(id, changed.clone());
                Ok(changed)
            }
            PetChange::Remove => {
                let removed = self.pets.remove(&id).ok_or(ChangePetError::NotFound(id))?;
                self.inventory[removed.status] -= 1;
                Ok(removed)
            }
        }
    }
}

impl MemoryPetRepository {
    /// An empty catalogue.
    pub fn new() -> Self {
        Self::default()
    }

    /// The pets, locked for a change.
    pub(super) fn shelf(&self) -> RwLockWriteGuard<'_, Shelf> {
        self.shelf.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds `pet` at once.
    pub(super) fn add(&self, pet: NewPet) -> Pet {
        self.shelf().add(pet)
    }

    fn read<T>(&self, f: impl FnOnce(&Shelf) -> T) -> T {
        f(&self.shelf.read().unwrap_or_else(PoisonError::into_inner))
    }
}

#[async_trait]
impl PetRepository for MemoryPetRepository {
    async fn create(&self, pet: NewPet) -> Result<Pet, RepositoryError> {
        Ok(self.add(pet))
    }

    async fn get(&self, id: PetId) -> Result<Option<Pet>, RepositoryError> {
        Ok(self.read(|shelf| shelf.get(id).cloned()))
    }

    async fn list(
        &self,
        status: Option<PetStatus>,
        after: Option<PetId>,
        count: usize,
    ) -> Result<Vec<Pet>, RepositoryError> {
        let from = after.map_or(Bound::Unbounded, Bound::Excluded);
        Ok(self.read(|shelf| {
            shelf
                .pets
                .range((from, Bound::Unbounded))
                .map(|(_, pet)| pet)
                .filter(|pet| status.is_none_or(|s| pet.status == s))
                .take(count)
                .cloned()
                .collect()
        }))
    }
}

#[async_trait]
impl PetChanges for MemoryPetRepository {
    async fn update(
        &self,
        id: PetId,
        patch: PetPatch,
        expected: Option<Precondition>,
    ) -> Result<Pet, ChangePetError> {
        self.shelf().change(id, &PetChange::Update(patch), expected)
    }

    async fn remove(
        &self,
        id: PetId,
        expected: Option<Precondition>,
    ) -> Result<Pet, ChangePetError> {
        self.shelf().change(id, &PetChange::Remove, expected)
    }

    async fn inventory(&self) -> Result<Inventory, RepositoryError> {
        Ok(self.read(|shelf| shelf.inventory))
    }
}
