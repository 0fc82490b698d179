//! The bodies of the `events` operations: `Event`, what it reports (`EventData`, whose
//! `object` is a `Pet` or an `Order` exactly as the API returns them), and `EventType`.

use animal_store_domain::{Event, EventObject, EventType};
use poem_openapi::{Enum, Object, Union};

use crate::wire::orders::OrderBody;
use crate::wire::pets::PetBody;
use crate::wire::time::Timestamp;

/// What kind of change an event reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum, serde::Serialize)]
#[oai(rename = "EventType")]
pub enum EventTypeDto {
    /// An animal was added (createPet).
    #[oai(rename = "pet.created")]
    #[serde(rename = "pet.created")]
    PetCreated,
    /// An animal changed: updatePet, or its status moved with an order.
    #[oai(rename = "pet.updated")]
    #[serde(rename = "pet.updated")]
    PetUpdated,
    /// An animal was removed (deletePet); `data.object` is the animal as it was.
    #[oai(rename = "pet.deleted")]
    #[serde(rename = "pet.deleted")]
    PetDeleted,
    /// An order was placed (placeOrder).
    #[oai(rename = "order.placed")]
    #[serde(rename = "order.placed")]
    OrderPlaced,
    /// An order's status moved (updateOrder).
    #[oai(rename = "order.updated")]
    #[serde(rename = "order.updated")]
    OrderUpdated,
}

impl From<EventType> for EventTypeDto {
    fn from(kind: EventType) -> Self {
        match kind {
            EventType::PetCreated => Self::PetCreated,
            EventType::PetUpdated => Self::PetUpdated,
            EventType::PetDeleted => Self::PetDeleted,
            EventType::OrderPlaced => Self::OrderPlaced,
            EventType::OrderUpdated => Self::OrderUpdated,
        }
    }
}

/// The animal or the order an event is about, exactly as the API returns it after the
/// change (before it, for `pet.deleted`).
#[derive(Debug, Clone, PartialEq, Eq, Union, serde::Serialize)]
#[oai(rename = "EventObject", one_of)]
#[serde(untagged)]
pub enum EventObjectBody {
    /// For the `pet.*` types.
    Pet(PetBody),
    /// For the `order.*` types.
    Order(OrderBody),
}

/// What an event reports.
#[derive(Debug, Clone, PartialEq, Eq, Object, serde::Serialize)]
#[oai(rename = "EventData")]
pub struct EventDataBody {
    /// The animal (`pet.*`) or the order (`order.*`) after the change.
    object: EventObjectBody,
}

/// A change to the catalogue or to the caller's orders, recorded in the same transaction as
/// the change. Events are kept 30 days unless the service is configured otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Object, serde::Serialize)]
#[oai(rename = "Event", rename_all = "camelCase")]
#[serde(rename_all = "camelCase")]
pub struct EventBody {
    /// Unique identifier; a later event has a greater id. Pass the last one you saw as
    /// `after` to read on.
    id: i64,
    /// What kind of change it reports.
    #[oai(rename = "type")]
    #[serde(rename = "type")]
    kind: EventTypeDto,
    /// When the change happened (RFC 3339, UTC, to the second).
    created_at: Timestamp,
    /// What changed.
    data: EventDataBody,
}

impl From<Event> for EventBody {
    fn from(event: Event) -> Self {
        let Event { id, kind, created_at, object } = event;
        let object = match object {
            EventObject::Pet(pet) => EventObjectBody::Pet(pet.into()),
            EventObject::Order(order) => EventObjectBody::Order(order.into()),
        };
        Self {
            id: id.get(),
            kind: kind.into(),
            created_at: Timestamp(created_at),
            data: EventDataBody { object },
        }
    }
}

/// The schema of `listEvents`' `after`: an event id, 0 or more.
pub struct EventIdSchema;

impl poem_openapi::types::Type for EventIdSchema {
    const IS_REQUIRED: bool = true;
    type RawValueType = Self;
    type RawElementValueType = Self;

    fn name() -> std::borrow::Cow<'static, str> {
        "integer(int64)".into()
    }

    fn schema_ref() -> poem_openapi::registry::MetaSchemaRef {
        poem_openapi::registry::MetaSchemaRef::Inline(Box::new(
            poem_openapi::registry::MetaSchema {
                format: Some("int64"),
                minimum: Some(0.0),
                ..poem_openapi::registry::MetaSchema::new("integer")
            },
        ))
    }

    raw_value_is_self!();
}
