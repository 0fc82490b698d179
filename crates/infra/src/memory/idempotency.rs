//! Idempotency records in memory, beside the memory pets and orders they record. A write
//! holds the records' lock for its whole length: looking for the key, adding the pet or
//! order, and storing the record are one step.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use animal_store_domain::{
    AnswerEncoder, IdempotencyKey, IdempotencyRecord, IdempotencyStore, IdempotentWrite, KeyId,
    KeyUse, NewOrder, NewPet, OrderAnswered, Pet, RepositoryError, StoredAnswer,
};
use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{MemoryOrderRepository, MemoryPetRepository};

/// Idempotency records by owner and key, as a memory store keeps them.
pub type Records = BTreeMap<(KeyId, IdempotencyKey), IdempotencyRecord>;

/// Idempotency records beside a [`MemoryPetRepository`] and a [`MemoryOrderRepository`].
#[derive(Debug)]
pub struct MemoryIdempotencyStore {
    pets: Arc<MemoryPetRepository>,
    orders: Arc<MemoryOrderRepository>,
    records: Mutex<Records>,
}

impl MemoryIdempotencyStore {
    /// No records yet, for the pets of `pets` and the orders of `orders` (kept beside them).
    pub fn new(pets: Arc<MemoryPetRepository>, orders: Arc<MemoryOrderRepository>) -> Self {
        Self { pets, orders, records: Mutex::default() }
    }

    fn records(&self) -> MutexGuard<'_, Records> {
        self.records.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The unexpired record of `write`'s key, taken out of `records` if it had expired.
pub fn existing(records: &mut Records, write: &IdempotentWrite) -> Option<IdempotencyRecord> {
    let id = (write.owner.clone(), write.idempotency_key.clone());
    match records.get(&id) {
        Some(record) if record.is_expired(write.at) => {
            records.remove(&id);
            None
        }
        found => found.cloned(),
    }
}

#[async_trait]
impl IdempotencyStore for MemoryIdempotencyStore {
    async fn create_pet(
        &self,
        write: IdempotentWrite,
        pet: NewPet,
        answers: Arc<dyn AnswerEncoder>,
    ) -> Result<KeyUse<(Pet, StoredAnswer)>, RepositoryError> {
        let mut records = self.records();
        if let Some(record) = existing(&mut records, &write) {
            return Ok(KeyUse::Again(record));
        }
        let pet = self.pets.add(pet);
        let answer = answers.pet_created(&pet);
        let record = IdempotencyRecord::of(write, answer.clone());
        records.insert((record.owner.clone(), record.idempotency_key.clone()), record);
        Ok(KeyUse::First((pet, answer)))
    }

    async fn place_order(
        &self,
        write: IdempotentWrite,
        order: NewOrder,
        answers: Arc<dyn AnswerEncoder>,
    ) -> Result<KeyUse<OrderAnswered>, RepositoryError> {
        let mut records = self.records();
        if let Some(record) = existing(&mut records, &write) {
            return Ok(KeyUse::Again(record));
        }
        let placed = self.orders.add(order);
        let answer = answers.order_placed(&placed);
        if let Some(answer) = &answer {
            let record = IdempotencyRecord::of(write, answer.clone());
            records.insert((record.owner.clone(), record.idempotency_key.clone()), record);
        }
        Ok(KeyUse::First((placed, answer)))
    }

    async fn sweep(&self, before: DateTime<Utc>, batch: usize) -> Result<usize, RepositoryError> {
        Ok(sweep(&mut self.records(), before, batch))
    }
}

/// Removes at most `batch` of `records` created before `before`; how many it removed.
pub fn sweep(records: &mut Records, before: DateTime<Utc>, batch: usize) -> usize {
    let old: Vec<_> = records
        .iter()
        .filter(|(_, record)| record.created_at < before)
        .map(|(id, _)| id.clone())
        .take(batch)
        .collect();
    for id in &old {
        records.remove(id);
    }
    old.len()
}
