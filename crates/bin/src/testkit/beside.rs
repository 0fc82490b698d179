//! What the kit puts beside a pet adapter given alone ([`TestKit::with_pets`]): every pet
//! write reaches that adapter, keyed createPet included, its record kept here; orders, which
//! move their pets' statuses through no port of a pet adapter, and the pets' changes and the
//! events, which are other ports, are refused with a message that says what to give instead.
//!
//! [`TestKit::with_pets`]: super::TestKit::with_pets

use std::sync::Arc;

use animal_store_domain::{
    AnswerEncoder, ChangePetError, Event, EventId, EventLog, EventType, IdempotencyRecord,
    IdempotencyStore, IdempotentWrite, Inventory, KeyId, KeyUse, NewOrder, NewPet, Order,
    OrderAnswered, OrderId, OrderRepository, OrderStatus, Pet, PetChanges, PetId, PetPatch,
    PetRepository, PlaceOrderError, Precondition, RepositoryError, StoredAnswer, UpdateOrderError,
};
use animal_store_domain::{
    Attempt, AttemptId, Attempted, Backlog, ClaimLimits, Closed, CreateEndpointError,
    DisabledReason, Due, Endpoint, EndpointId, EndpointPatch, NewEndpoint, Outcome,
    WebhookDeliveries, WebhookEndpoints,
};
use animal_store_infra::memory::idempotency::{Records, existing, sweep};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use thiserror::Error;
use tokio::sync::Mutex;

/// Orders over a pet adapter given alone.
#[derive(Debug, Error)]
#[error(
    "TestKit: orders need `with_orders` and `with_idempotency` beside `with_pets`: an order moves its pet's status, which a pet adapter's port cannot"
)]
pub struct OrdersNeedTheirStores;

fn refused() -> RepositoryError {
    RepositoryError::Backend(Box::new(OrdersNeedTheirStores))
}

/// The events beside a pet adapter given alone.
#[derive(Debug, Error)]
#[error(
    "TestKit: listEvents, getEvent and the webhook operations need `with_events` and `with_webhooks` beside `with_pets`: the events are written by the stores of the changes, and read through the `EventLog` port, which a `PetRepository` alone does not have"
)]
pub struct EventsNeedTheirStore;

/// The events beside a pet adapter given alone: every call refused with
/// [`EventsNeedTheirStore`].
pub struct NoEvents;

fn no_events() -> RepositoryError {
    RepositoryError::Backend(Box::new(EventsNeedTheirStore))
}

#[async_trait]
impl EventLog for NoEvents {
    async fn list(
        &self,
        _reader: &KeyId,
        _kind: Option<EventType>,
        _after: Option<EventId>,
        _count: usize,
    ) -> Result<Vec<Event>, RepositoryError> {
        Err(no_events())
    }

    async fn get(&self, _reader: &KeyId, _id: EventId) -> Result<Option<Event>, RepositoryError> {
        Err(no_events())
    }

    async fn sweep(&self, _before: DateTime<Utc>, _batch: usize) -> Result<usize, RepositoryError> {
        Err(no_events())
    }
}

/// The webhooks beside a pet adapter given alone: every call refused with
/// [`EventsNeedTheirStore`], since deliveries are queued with the events.
pub struct NoWebhooks;

#[async_trait]
impl WebhookEndpoints for NoWebhooks {
    async fn create(&self, _endpoint: NewEndpoint) -> Result<Endpoint, CreateEndpointError> {
        Err(no_events().into())
    }

    async fn list(&self, _owner: &KeyId) -> Result<Vec<Endpoint>, RepositoryError> {
        Err(no_events())
    }

    async fn get(
        &self,
        _owner: &KeyId,
        _id: EndpointId,
    ) -> Result<Option<Endpoint>, RepositoryError> {
        Err(no_events())
    }

    async fn update(
        &self,
        _owner: &KeyId,
        _id: EndpointId,
        _patch: EndpointPatch,
    ) -> Result<Option<Endpoint>, RepositoryError> {
        Err(no_events())
    }

    async fn delete(&self, _owner: &KeyId, _id: EndpointId) -> Result<bool, RepositoryError> {
        Err(no_events())
    }

    async fn survey(
        &self,
        _owner: Option<&KeyId>,
    ) -> Result<Vec<(Endpoint, Option<Outcome>)>, RepositoryError> {
        Err(no_events())
    }

    async fn disable(
        &self,
        _id: EndpointId,
        _reason: DisabledReason,
    ) -> Result<Option<Endpoint>, RepositoryError> {
        Err(no_events())
    }
}

#[async_trait]
impl WebhookDeliveries for NoWebhooks {
    async fn claim(
        &self,
        _now: DateTime<Utc>,
        _until: DateTime<Utc>,
        _limits: &ClaimLimits,
    ) -> Result<Vec<Due>, RepositoryError> {
        Err(no_events())
    }

    async fn fan_out(&self, _batch: usize) -> Result<usize, RepositoryError> {
        Err(no_events())
    }

    async fn owners_due(&self, _now: DateTime<Utc>) -> Result<usize, RepositoryError> {
        Err(no_events())
    }

    async fn close(&self, _now: DateTime<Utc>, _batch: usize) -> Result<Closed, RepositoryError> {
        Err(no_events())
    }

    async fn trim(
        &self,
        _now: DateTime<Utc>,
        _max_waiting: usize,
        _batch: usize,
    ) -> Result<usize, RepositoryError> {
        Err(no_events())
    }

    async fn sweep(&self, _before: DateTime<Utc>, _batch: usize) -> Result<usize, RepositoryError> {
        Err(no_events())
    }

    async fn record(
        &self,
        _attempts: Vec<Attempted>,
        _disable_after: std::time::Duration,
    ) -> Result<(), RepositoryError> {
        Err(no_events())
    }

    async fn attempts(
        &self,
        _owner: &KeyId,
        _endpoint: EndpointId,
        _before: Option<AttemptId>,
        _count: usize,
    ) -> Result<Option<Vec<Attempt>>, RepositoryError> {
        Err(no_events())
    }

    async fn release_leases(&self) -> Result<u64, RepositoryError> {
        Err(no_events())
    }

    async fn backlog(&self) -> Result<Backlog, RepositoryError> {
        Err(no_events())
    }
}

/// The changes beside a pet adapter given alone.
#[derive(Debug, Error)]
#[error(
    "TestKit: updatePet, deletePet and getInventory need `with_changes` beside `with_pets`: they use the `PetChanges` port, which a `PetRepository` alone does not have"
)]
pub struct ChangesNeedTheirStore;

/// The changes beside a pet adapter given alone: every call refused with
/// [`ChangesNeedTheirStore`].
pub struct NoChanges;

fn no_changes() -> RepositoryError {
    RepositoryError::Backend(Box::new(ChangesNeedTheirStore))
}

#[async_trait]
impl PetChanges for NoChanges {
    async fn update(
        &self,
        _id: PetId,
        _patch: PetPatch,
        _expected: Option<Precondition>,
    ) -> Result<Pet, ChangePetError> {
        Err(no_changes().into())
    }

    async fn remove(
        &self,
        _id: PetId,
        _expected: Option<Precondition>,
    ) -> Result<Pet, ChangePetError> {
        Err(no_changes().into())
    }

    async fn inventory(&self) -> Result<Inventory, RepositoryError> {
        Err(no_changes())
    }
}

/// Idempotency records beside any pet adapter. A keyed write holds the records for its
/// whole length, the adapter's `create` included, so that a key is used once.
pub struct RecordsBeside {
    pets: Arc<dyn PetRepository>,
    records: Mutex<Records>,
}

impl RecordsBeside {
    /// No records yet, beside `pets`.
    pub fn new(pets: Arc<dyn PetRepository>) -> Self {
        Self { pets, records: Mutex::default() }
    }
}

#[async_trait]
impl IdempotencyStore for RecordsBeside {
    async fn create_pet(
        &self,
        write: IdempotentWrite,
        pet: NewPet,
        answers: Arc<dyn AnswerEncoder>,
    ) -> Result<KeyUse<(Pet, StoredAnswer)>, RepositoryError> {
        let mut records = self.records.lock().await;
        if let Some(record) = existing(&mut records, &write) {
            return Ok(KeyUse::Again(record));
        }
        // A pet the adapter refuses leaves no record: both are stored, or neither.
        let pet = self.pets.create(pet).await?;
        let answer = answers.pet_created(&pet);
        let record = IdempotencyRecord::of(write, answer.clone());
        records.insert((record.owner.clone(), record.idempotency_key.clone()), record);
        Ok(KeyUse::First((pet, answer)))
    }

    async fn place_order(
        &self,
        _write: IdempotentWrite,
        _order: NewOrder,
        _answers: Arc<dyn AnswerEncoder>,
    ) -> Result<KeyUse<OrderAnswered>, RepositoryError> {
        Err(refused())
    }

    async fn sweep(&self, before: DateTime<Utc>, batch: usize) -> Result<usize, RepositoryError> {
        Ok(sweep(&mut *self.records.lock().await, before, batch))
    }
}

/// The orders beside a pet adapter given alone: every call refused with
/// [`OrdersNeedTheirStores`].
pub struct NoOrders;

#[async_trait]
impl OrderRepository for NoOrders {
    async fn place(&self, _order: NewOrder) -> Result<Order, PlaceOrderError> {
        Err(refused().into())
    }

    async fn get(&self, _owner: &KeyId, _id: OrderId) -> Result<Option<Order>, RepositoryError> {
        Err(refused())
    }

    async fn list(
        &self,
        _owner: &KeyId,
        _status: Option<OrderStatus>,
        _after: Option<OrderId>,
        _count: usize,
    ) -> Result<Vec<Order>, RepositoryError> {
        Err(refused())
    }

    async fn update_status(
        &self,
        _owner: &KeyId,
        _id: OrderId,
        _to: OrderStatus,
        _at: DateTime<Utc>,
    ) -> Result<Order, UpdateOrderError> {
        Err(refused().into())
    }
}
