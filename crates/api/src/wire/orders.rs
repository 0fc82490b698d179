//! The bodies of the `store` operations: `Order` and `OrderStatus` in responses, `NewOrder`
//! and `OrderUpdate` in requests. Request bodies are parsed as `createPet`'s are (see
//! [`pets`](super::pets)): every problem named with its field, unknown fields ignored, an
//! explicit `null` refused.

use animal_store_domain::{Order, OrderStatus, PetId};
use poem_openapi::registry::{MetaSchema, MetaSchemaRef, Registry};
use poem_openapi::types::{ParseFromJSON, ParseResult, Type};
use poem_openapi::{Enum, Object};
use serde_json::Value;

use crate::error::ApiError;
use crate::wire::field::{BodyValue, Field, ParseContext, kind, object_body};
use crate::wire::params::Documented;
use crate::wire::time::Timestamp;

/// Where an order stands: `placed` reserves the animal, `approved` keeps it reserved,
/// `delivered` sells it, `cancelled` makes it available again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum, serde::Serialize)]
#[oai(rename = "OrderStatus", rename_all = "lowercase")]
#[serde(rename_all = "lowercase")]
pub enum OrderStatusDto {
    /// Placed: the animal is reserved (`pending`).
    Placed,
    /// Approved by the store: the animal stays reserved.
    Approved,
    /// Delivered: the animal is `sold`. Final.
    Delivered,
    /// Cancelled: the animal is `available` again. Final.
    Cancelled,
}

impl From<OrderStatus> for OrderStatusDto {
    fn from(status: OrderStatus) -> Self {
        match status {
            OrderStatus::Placed => Self::Placed,
            OrderStatus::Approved => Self::Approved,
            OrderStatus::Delivered => Self::Delivered,
            OrderStatus::Cancelled => Self::Cancelled,
        }
    }
}

/// An order: an animal reserved by the API key that placed it. Only that key (or the keys
/// that replaced it by rotation) sees it.
#[derive(Debug, Clone, PartialEq, Eq, Object, serde::Serialize)]
#[oai(rename = "Order", rename_all = "camelCase")]
#[serde(rename_all = "camelCase")]
pub struct OrderBody {
    /// Unique identifier assigned by the service when the order is placed.
    id: i64,
    /// The id of the animal the order reserves.
    pet_id: i64,
    /// Where the order stands.
    status: OrderStatusDto,
    /// When the order was placed (RFC 3339, UTC, to the second).
    created_at: Timestamp,
    /// When its status last changed (RFC 3339, UTC, to the second).
    updated_at: Timestamp,
}

impl From<Order> for OrderBody {
    fn from(order: Order) -> Self {
        // Every field named: a field added to `Order` does not compile until it is decided
        // whether it is sent (the owner is not: it is the caller).
        let Order { id, pet_id, owner: _, status, created_at, updated_at } = order;
        Self {
            id: id.get(),
            pet_id: pet_id.get(),
            status: status.into(),
            created_at: Timestamp(created_at),
            updated_at: Timestamp(updated_at),
        }
    }
}

/// An order to place: the animal to reserve, which must be `available`.
#[derive(Debug, Object)]
#[oai(rename = "NewOrder", rename_all = "camelCase")]
pub struct NewOrderSchema {
    pet_id: Field<PetId>,
}

impl NewOrderSchema {
    /// The animal to reserve, or the problem with the body.
    pub fn into_pet_id(self, context: &ParseContext) -> Result<PetId, ApiError> {
        self.pet_id.parse("petId", context).map_err(ApiError::validation_failed)
    }
}

/// A `placeOrder` body, documented as `NewOrder`.
pub type NewOrderBody = Documented<NewOrderSchema, Result<NewOrderSchema, ApiError>>;

impl ParseFromJSON for NewOrderBody {
    fn parse_from_json(value: Option<Value>) -> ParseResult<Self> {
        Ok(Self::new(object_body(value)))
    }
}

/// A change to an order: the status to move it to. Allowed moves: `placed` → `approved` →
/// `delivered`, and `placed` or `approved` → `cancelled`. The animal of an order cannot be
/// changed: cancel the order and place another.
#[derive(Debug, Object)]
#[oai(rename = "OrderUpdate", rename_all = "camelCase")]
pub struct OrderUpdateSchema {
    status: Field<OrderStatus>,
}

impl OrderUpdateSchema {
    /// The status to move to, or the problem with the body.
    pub fn into_status(self, context: &ParseContext) -> Result<OrderStatus, ApiError> {
        self.status.parse("status", context).map_err(ApiError::validation_failed)
    }
}

/// An `updateOrder` body, documented as `OrderUpdate`. A body that names `petId` is refused:
/// an order keeps its animal.
pub type OrderUpdateBody = Documented<OrderUpdateSchema, Result<OrderUpdateSchema, ApiError>>;

impl ParseFromJSON for OrderUpdateBody {
    fn parse_from_json(value: Option<Value>) -> ParseResult<Self> {
        if value.as_ref().and_then(|body| body.get("petId")).is_some() {
            return Ok(Self::new(Err(ApiError::validation_failed(
                "petId cannot be changed: cancel the order and place another",
            ))));
        }
        Ok(Self::new(object_body(value)))
    }
}

impl BodyValue for PetId {
    const REQUIRED: bool = true;

    fn schema() -> MetaSchemaRef {
        MetaSchemaRef::Inline(Box::new(MetaSchema {
            format: Some("int64"),
            description: Some("The id of the animal to reserve."),
            ..MetaSchema::new("integer")
        }))
    }

    fn from_json(name: &str, json: &Value, _: &ParseContext) -> Result<Self, String> {
        match json {
            Value::Number(n) => n
                .as_i64()
                .map(PetId::new)
                .ok_or_else(|| format!("{name} must be an int64 integer, got {n}")),
            other => Err(format!("{name} must be an integer, got {}", kind(other))),
        }
    }
}

impl BodyValue for OrderStatus {
    const REQUIRED: bool = true;

    fn schema() -> MetaSchemaRef {
        OrderStatusDto::schema_ref()
    }

    fn register(registry: &mut Registry) {
        OrderStatusDto::register(registry);
    }

    fn from_json(name: &str, json: &Value, _: &ParseContext) -> Result<Self, String> {
        let spellings = || OrderStatus::ALL.map(OrderStatus::as_str).join(", ");
        match json {
            Value::String(text) => text.parse::<OrderStatus>().map_err(|e| e.to_string()),
            other => Err(format!("{name} must be one of {}; got {}", spellings(), kind(other))),
        }
    }
}
