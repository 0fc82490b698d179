//! Pets in memory: a map ordered by id, the count of each status, which open order holds
//! which pet, and the events of every change, all behind one lock, so that a change, what
//! it is checked against and its event are one step.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::{Arc, PoisonError, RwLock, RwLockWriteGuard};

use animal_store_domain::{
    ChangePetError, Clock, Event, EventId, EventLog, EventType, Inventory, KeyId, NewEvent, NewPet,
    OrderId, Pet, PetChange, PetChanges, PetId, PetPatch, PetRepository, PetStatus, Precondition,
    RepositoryError, to_the_second,
};
use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::webhooks::Webhooks;

/// Pets in a map ordered by id, and the events of their changes, timed by a clock.
pub struct MemoryPetRepository {
    shelf: RwLock<Shelf>,
    clock: Arc<dyn Clock>,
    /// The keys whose lines own the webhook endpoints: an endpoint whose line has no live
    /// key is disabled (see `WebhookDeliveries::close`).
    pub(super) keys: Arc<super::MemoryApiKeyStore>,
}

impl std::fmt::Debug for MemoryPetRepository {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryPetRepository").field("shelf", &self.shelf).finish_non_exhaustive()
    }
}

impl Default for MemoryPetRepository {
    fn default() -> Self {
        Self::with_clock(Arc::new(crate::clock::SystemClock))
    }
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
    /// The events of every change, by id.
    events: BTreeMap<EventId, Event>,
    /// The greatest event id ever given: a swept event's id is never given again.
    last_event: i64,
    /// The webhook endpoints, and the events queued for them.
    webhooks: Webhooks,
}

impl Shelf {
    pub(super) fn get(&self, id: PetId) -> Option<&Pet> {
        self.pets.get(&id)
    }

    fn add(&mut self, pet: NewPet, now: DateTime<Utc>) -> Pet {
        self.last_id += 1;
        let pet = Pet::from_new(PetId::new(self.last_id), pet);
        self.inventory[pet.status] += 1;
        self.pets.insert(pet.id, pet.clone());
        self.record([NewEvent::pet_created(pet.clone(), now)]);
        pet
    }

    /// Moves the pet `id`, if there is one, to `status`; returns it when its status changed.
    pub(super) fn set_status(&mut self, id: PetId, status: PetStatus) -> Option<Pet> {
        let pet = self.pets.get_mut(&id).filter(|pet| pet.status != status)?;
        self.inventory[pet.status] -= 1;
        self.inventory[status] += 1;
        pet.status = status;
        Some(pet.clone())
    }

    /// Records `events`, giving each the next id, and queues them for their endpoints.
    pub(super) fn record(&mut self, events: impl IntoIterator<Item = NewEvent>) {
        for event in events {
            self.last_event += 1;
            let id = EventId::new(self.last_event);
            let event = event.with_id(id);
            self.webhooks.queue(&event);
            self.events.insert(id, event);
        }
    }

    /// The webhook endpoints and their deliveries.
    pub(super) fn webhooks(&mut self) -> &mut Webhooks {
        &mut self.webhooks
    }

    /// The events, and the webhook endpoints and their deliveries.
    pub(super) fn events_and_webhooks(&mut self) -> (&BTreeMap<EventId, Event>, &mut Webhooks) {
        (&self.events, &mut self.webhooks)
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
        now: DateTime<Utc>,
    ) -> Result<Pet, ChangePetError> {
        let pet = self.pets.get(&id).ok_or(ChangePetError::NotFound(id))?;
        if expected.is_some_and(|expected| !expected.holds_for(pet)) {
            return Err(ChangePetError::PreconditionFailed(id));
        }
        if let Some(&order) = self.holds.get(&id).filter(|_| change.needs_release(pet)) {
            return Err(ChangePetError::Held { pet: id, order });
        }
        match change {
            PetChange::Update(patch) => {
                let changed = patch.apply(pet);
                if changed != *pet {
                    self.set_status(id, changed.status);
                    self.pets.insert(id, changed.clone());
                    self.record([NewEvent::pet_updated(changed.clone(), now)]);
                }
                Ok(changed)
            }
            PetChange::Remove => {
                let removed = self.pets.remove(&id).ok_or(ChangePetError::NotFound(id))?;
                self.inventory[removed.status] -= 1;
                self.record([NewEvent::pet_deleted(removed.clone(), now)]);
                Ok(removed)
            }
        }
    }
}

impl MemoryPetRepository {
    /// An empty catalogue, whose events take their time from the system clock.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty catalogue, whose events take their time from `clock`.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        Self { shelf: RwLock::default(), clock, keys: Arc::default() }
    }

    /// This catalogue, its webhook endpoints owned by the lines of `keys`.
    #[must_use]
    pub fn with_keys(self, keys: Arc<super::MemoryApiKeyStore>) -> Self {
        Self { keys, ..self }
    }

    /// The time now, to the second, as events record it.
    fn now(&self) -> DateTime<Utc> {
        to_the_second(self.clock.now())
    }

    /// The pets, locked for a change.
    pub(super) fn shelf(&self) -> RwLockWriteGuard<'_, Shelf> {
        self.shelf.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds `pet` at once.
    pub(super) fn add(&self, pet: NewPet) -> Pet {
        let now = self.now();
        self.shelf().add(pet, now)
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

    async fn get_many(&self, ids: &[PetId]) -> Result<Vec<Pet>, RepositoryError> {
        Ok(self.read(|shelf| ids.iter().filter_map(|id| shelf.get(*id).cloned()).collect()))
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
        let now = self.now();
        self.shelf().change(id, &PetChange::Update(patch), expected, now)
    }

    async fn remove(
        &self,
        id: PetId,
        expected: Option<Precondition>,
    ) -> Result<Pet, ChangePetError> {
        let now = self.now();
        self.shelf().change(id, &PetChange::Remove, expected, now)
    }

    async fn inventory(&self) -> Result<Inventory, RepositoryError> {
        Ok(self.read(|shelf| shelf.inventory))
    }
}

/// The events of every change made through these pets and the orders and records beside
/// them. Each change takes the one lock, so events are listed the moment they exist.
#[async_trait]
impl EventLog for MemoryPetRepository {
    async fn list(
        &self,
        reader: &KeyId,
        kind: Option<EventType>,
        after: Option<EventId>,
        count: usize,
    ) -> Result<Vec<Event>, RepositoryError> {
        let from = after.map_or(Bound::Unbounded, Bound::Excluded);
        Ok(self.read(|shelf| {
            shelf
                .events
                .range((from, Bound::Unbounded))
                .map(|(_, event)| event)
                .filter(|event| event.is_seen_by(reader) && kind.is_none_or(|k| event.kind == k))
                .take(count)
                .cloned()
                .collect()
        }))
    }

    async fn get(&self, reader: &KeyId, id: EventId) -> Result<Option<Event>, RepositoryError> {
        Ok(self
            .read(|shelf| shelf.events.get(&id).filter(|event| event.is_seen_by(reader)).cloned()))
    }

    async fn sweep(&self, before: DateTime<Utc>, batch: usize) -> Result<usize, RepositoryError> {
        let mut locked = self.shelf();
        // As the SQL stores do: the `batch` oldest, those of them that expired.
        let old: Vec<EventId> = locked
            .events
            .values()
            .take(batch)
            .filter(|event| event.created_at < before)
            .map(|event| event.id)
            .collect();
        for id in &old {
            locked.events.remove(id);
        }
        locked.webhooks.forget(&old);
        Ok(old.len())
    }
}
