//! A user's own pet store adapter: pets in a `Vec` behind a lock. It stands for the adapter
//! an integration tester writes (over their own database, say) and proves against Animal
//! Store's conformance suites.

use std::sync::Mutex;

use animal_store_domain::{NewPet, Pet, PetId, PetRepository, PetStatus, RepositoryError};
use async_trait::async_trait;

/// Pets in a vector, in the order they were added.
#[derive(Default)]
pub struct VecPetRepository {
    pets: Mutex<Vec<Pet>>,
}

#[async_trait]
impl PetRepository for VecPetRepository {
    async fn create(&self, pet: NewPet) -> Result<Pet, RepositoryError> {
        let mut pets = self.pets.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let id = PetId::new(i64::try_from(pets.len()).unwrap_or(i64::MAX) + 1);
        let pet = Pet::from_new(id, pet);
        pets.push(pet.clone());
        Ok(pet)
    }

    async fn get(&self, id: PetId) -> Result<Option<Pet>, RepositoryError> {
        let pets = self.pets.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        Ok(pets.iter().find(|p| p.id == id).cloned())
    }

    async fn list(
        &self,
        status: Option<PetStatus>,
        after: Option<PetId>,
        limit: usize,
    ) -> Result<Vec<Pet>, RepositoryError> {
        let pets = self.pets.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        Ok(pets
            .iter()
            .filter(|p| after.is_none_or(|after| p.id > after))
            .filter(|p| status.is_none_or(|s| p.status == s))
            .take(limit)
            .cloned()
            .collect())
    }
}
