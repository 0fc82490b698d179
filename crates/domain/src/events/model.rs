//! Events: what changed in the catalogue and the orders, one event per change, written in
//! the change's own transaction (`docs/webhooks.md`). An event carries the pet or the order
//! as it was right after the change (as it was before, for a removal).

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use thiserror::Error;

use crate::keys::model::KeyId;
use crate::orders::model::{Order, OrderStatus};
use crate::pets::model::Pet;

/// The identifier the store assigns to an event. Ids grow in the order events commit: a
/// client that reads the events after the last id it saw misses none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventId(i64);

impl EventId {
    /// Wraps an id as stored or as sent by a client; ids never assigned find nothing.
    pub const fn new(id: i64) -> Self {
        Self(id)
    }

    /// The id as an integer.
    pub const fn get(self) -> i64 {
        self.0
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// What kind of change an event reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventType {
    /// A pet was added (createPet).
    PetCreated,
    /// A pet changed: its status moved with an order, or updatePet changed it.
    PetUpdated,
    /// A pet was removed (deletePet); the event carries it as it was.
    PetDeleted,
    /// An order was placed.
    OrderPlaced,
    /// An order's status moved (updateOrder).
    OrderUpdated,
}

/// A string that names no event type, with the [`excerpt`](crate::excerpt()) of it that is
/// repeated.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "type must be one of pet.created, pet.updated, pet.deleted, order.placed, order.updated, \
     got {0:?}"
)]
pub struct EventTypeError(pub String);

impl EventType {
    /// Every type.
    pub const ALL: [Self; 5] = [
        Self::PetCreated,
        Self::PetUpdated,
        Self::PetDeleted,
        Self::OrderPlaced,
        Self::OrderUpdated,
    ];

    /// The type as the API and the store write it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::PetCreated => "pet.created",
            Self::PetUpdated => "pet.updated",
            Self::PetDeleted => "pet.deleted",
            Self::OrderPlaced => "order.placed",
            Self::OrderUpdated => "order.updated",
        }
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for EventType {
    type Err = EventTypeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.as_str() == s)
            .ok_or_else(|| EventTypeError(crate::excerpt(s)))
    }
}

/// What an event is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventObject {
    /// A pet.
    Pet(Pet),
    /// An order.
    Order(Order),
}

impl EventObject {
    /// Whose it is: an order's owner; `None`, everybody's, for a pet.
    pub const fn owner(&self) -> Option<&KeyId> {
        match self {
            Self::Pet(_) => None,
            Self::Order(order) => Some(&order.owner),
        }
    }
}

/// A change to record as an event, before the store gives it its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEvent {
    /// What kind of change it is.
    pub kind: EventType,
    /// When it happened, to the second.
    pub at: DateTime<Utc>,
    /// The pet or order after the change.
    pub object: EventObject,
}

impl NewEvent {
    /// `pet` was added at `at`.
    pub const fn pet_created(pet: Pet, at: DateTime<Utc>) -> Self {
        Self { kind: EventType::PetCreated, at, object: EventObject::Pet(pet) }
    }

    /// `pet` is what a change made of it at `at`.
    pub const fn pet_updated(pet: Pet, at: DateTime<Utc>) -> Self {
        Self { kind: EventType::PetUpdated, at, object: EventObject::Pet(pet) }
    }

    /// `pet`, as it was, was removed at `at`.
    pub const fn pet_deleted(pet: Pet, at: DateTime<Utc>) -> Self {
        Self { kind: EventType::PetDeleted, at, object: EventObject::Pet(pet) }
    }

    /// The events of an order placed or moved, at the order's `updated_at`: the order's
    /// own, then its pet's, `pet`, as the move left it, when the move changed its status
    /// (`None` otherwise).
    pub fn of_order(order: Order, pet: Option<Pet>) -> Vec<Self> {
        let at = order.updated_at;
        let kind = if order.status == OrderStatus::Placed {
            EventType::OrderPlaced
        } else {
            EventType::OrderUpdated
        };
        let mut events = vec![Self { kind, at, object: EventObject::Order(order) }];
        events.extend(pet.map(|pet| Self::pet_updated(pet, at)));
        events
    }

    /// The event this becomes once the store gives it `id`.
    pub fn with_id(self, id: EventId) -> Event {
        let Self { kind, at, object } = self;
        Event { id, kind, created_at: at, object }
    }
}

/// A recorded event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Its id.
    pub id: EventId,
    /// What kind of change it reports.
    pub kind: EventType,
    /// When the change happened, to the second.
    pub created_at: DateTime<Utc>,
    /// The pet or order after the change (before, for a removal).
    pub object: EventObject,
}

impl Event {
    /// Whose event it is: an order's owner; `None`, everybody's, for a pet's.
    pub const fn owner(&self) -> Option<&KeyId> {
        self.object.owner()
    }

    /// Whether the keys of `owner` see it: every pet's event, their own orders' events.
    pub fn is_seen_by(&self, owner: &KeyId) -> bool {
        self.owner().is_none_or(|its| its == owner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_read_back_as_written() {
        for kind in EventType::ALL {
            assert_eq!(kind.as_str().parse::<EventType>(), Ok(kind));
        }
        assert_eq!(
            "pet.removed".parse::<EventType>(),
            Err(EventTypeError("pet.removed".to_owned()))
        );
    }

    #[test]
    fn a_long_type_is_repeated_as_its_excerpt() {
        let long = "x".repeat(60_000);
        let err = long.parse::<EventType>().expect_err("no such type");
        assert_eq!(err.0, format!("{}... (60000 characters)", "x".repeat(32)));
        assert!(err.to_string().len() < 200, "{err}");
    }
}
