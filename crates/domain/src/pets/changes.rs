//! Changing and removing pets, and counting them by status
//! (`docs/api.md#changing-and-removing-an-animal`).
//!
//! A change is decided in the store's transaction, on the pet as it stands there, in this
//! order: the pet must exist; the client's precondition (`If-Match`) must hold for it; and
//! a pet that an open order holds keeps its status and stays in the store. [`PetChange`]
//! says which changes an open order forbids, so that every adapter decides alike.

use std::ops::{Index, IndexMut};

use thiserror::Error;

use crate::ids::OrderId;
use crate::pets::model::{CategoryId, Pet, PetId, PetName, PetStatus};
use crate::repository_error::RepositoryError;

/// The fields a client changes on a pet; the others keep their value. Each field is valid
/// already, as createPet's are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PetPatch {
    /// The new name.
    pub name: Option<PetName>,
    /// The new category.
    pub category_id: Option<CategoryId>,
    /// The new status.
    pub status: Option<PetStatus>,
}

impl PetPatch {
    /// `pet` with this patch applied.
    #[must_use]
    pub fn apply(&self, pet: &Pet) -> Pet {
        Pet {
            id: pet.id,
            name: self.name.clone().unwrap_or_else(|| pet.name.clone()),
            category_id: self.category_id.unwrap_or(pet.category_id),
            status: self.status.unwrap_or(pet.status),
        }
    }
}

/// A change of one pet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PetChange {
    /// Some of its fields change.
    Update(PetPatch),
    /// It leaves the catalogue.
    Remove,
}

impl PetChange {
    /// Whether an open order holding `pet` forbids this change: one that moves its status
    /// (a patch that names the status it has already changes nothing), or its removal.
    pub fn needs_release(&self, pet: &Pet) -> bool {
        match self {
            Self::Update(patch) => patch.status.is_some_and(|status| status != pet.status),
            Self::Remove => true,
        }
    }
}

/// What a change requires of the pet as it stands, checked in the change's transaction:
/// the change is made only if it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Precondition {
    /// The pet is this one: unchanged since it was read (a client's entity tag was checked
    /// on it).
    Is(Pet),
    /// No pet has the id, which an existing pet never meets.
    Absent,
}

impl Precondition {
    /// Whether it holds for `pet`, as stored.
    pub fn holds_for(&self, pet: &Pet) -> bool {
        match self {
            Self::Is(expected) => expected == pet,
            Self::Absent => false,
        }
    }
}

/// Why a pet was not changed. Nothing changed.
#[derive(Debug, Error)]
pub enum ChangePetError {
    /// No pet has the id.
    #[error("no pet has id {0}")]
    NotFound(PetId),
    /// The pet is not as the precondition requires: it changed since the client read it.
    #[error("pet {0} has changed since the entity tag in If-Match was issued")]
    PreconditionFailed(PetId),
    /// An open order holds the pet: its status cannot move, nor can it be removed.
    #[error("pet {pet} is held by order {order}, which is open")]
    Held {
        /// The pet.
        pet: PetId,
        /// The open order that holds it.
        order: OrderId,
    },
    /// The store failed.
    #[error(transparent)]
    Repository(#[from] RepositoryError),
}

/// How many pets have each status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Inventory {
    counts: [u64; 3],
}

impl Inventory {
    /// The counts, one per status.
    pub fn of(counts: impl IntoIterator<Item = (PetStatus, u64)>) -> Self {
        let mut inventory = Self::default();
        for (status, count) in counts {
            inventory[status] += count;
        }
        inventory
    }

    /// Every status and its count, in the order of [`PetStatus::ALL`].
    pub fn counts(&self) -> impl Iterator<Item = (PetStatus, u64)> + '_ {
        PetStatus::ALL.into_iter().map(|status| (status, self[status]))
    }
}

const fn slot(status: PetStatus) -> usize {
    match status {
        PetStatus::Available => 0,
        PetStatus::Pending => 1,
        PetStatus::Sold => 2,
    }
}

impl Index<PetStatus> for Inventory {
    type Output = u64;

    fn index(&self, status: PetStatus) -> &u64 {
        &self.counts[slot(status)]
    }
}

impl IndexMut<PetStatus> for Inventory {
    fn index_mut(&mut self, status: PetStatus) -> &mut u64 {
        &mut self.counts[slot(status)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pet(status: PetStatus) -> Pet {
        Pet {
            id: PetId::new(7),
            name: PetName::new("Rex").unwrap(),
            category_id: CategoryId::new(1).unwrap(),
            status,
        }
    }

    #[test]
    fn a_patch_changes_the_fields_it_names_and_no_other() {
        let rex = pet(PetStatus::Available);
        assert_eq!(PetPatch::default().apply(&rex), rex);
        let patch = PetPatch { name: Some(PetName::new("Max").unwrap()), ..PetPatch::default() };
        let max = patch.apply(&rex);
        assert_eq!(
            (max.name.as_str(), max.category_id, max.status),
            ("Max", rex.category_id, rex.status)
        );
        assert_eq!(max.id, rex.id);
    }

    #[test]
    fn an_open_order_forbids_a_move_of_status_and_a_removal_only() {
        let held = pet(PetStatus::Pending);
        let to =
            |status| PetChange::Update(PetPatch { status: Some(status), ..PetPatch::default() });
        assert!(to(PetStatus::Sold).needs_release(&held));
        assert!(to(PetStatus::Available).needs_release(&held));
        assert!(!to(PetStatus::Pending).needs_release(&held), "the status it has already");
        let renamed = PetPatch { name: Some(PetName::new("Max").unwrap()), ..PetPatch::default() };
        assert!(!PetChange::Update(renamed).needs_release(&held));
        assert!(PetChange::Remove.needs_release(&held));
    }

    #[test]
    fn an_inventory_counts_each_status() {
        let inventory =
            Inventory::of([(PetStatus::Sold, 2), (PetStatus::Available, 5), (PetStatus::Sold, 1)]);
        let counts: Vec<_> = inventory.counts().collect();
        assert_eq!(
            counts,
            [(PetStatus::Available, 5), (PetStatus::Pending, 0), (PetStatus::Sold, 3)]
        );
    }
}
