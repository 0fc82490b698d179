//! Examples in the document: one on every schema, and on every request and response body of
//! every operation. Responses are built with the service's own types, from a sample animal
//! and order, so an example cannot show a field the service does not send.

use animal_store_domain::{
    CategoryId, KeyId, Order, OrderId, OrderStatus, Pet, PetId, PetName, PetStatus,
};
use chrono::DateTime;
use poem_openapi::types::ToJSON;
use serde_json::{Map, Value, json};

use crate::error::{ApiError, ErrorCode};
use crate::wire::orders::OrderBody;
use crate::wire::pets::PetBody;

/// The example of each named schema.
fn schema_examples() -> Map<String, Value> {
    let pet = Pet {
        id: PetId::new(1),
        name: PetName::new("Rex").unwrap_or_else(|_| unreachable!("a valid name")),
        category_id: CategoryId::new(1).unwrap_or_else(|_| unreachable!("a valid category")),
        status: PetStatus::Available,
    };
    let placed = DateTime::from_timestamp(1_795_455_366, 0).unwrap_or_default();
    let order = Order {
        id: OrderId::new(1),
        pet_id: PetId::new(1),
        owner: KeyId::new("k3y1d0000000").unwrap_or_else(|_| unreachable!("a valid key id")),
        status: OrderStatus::Placed,
        created_at: placed,
        updated_at: placed,
    };
    let pet = PetBody::from(pet).to_json().unwrap_or_default();
    let order = OrderBody::from(order).to_json().unwrap_or_default();
    let error = error_body(ErrorCode::NotFound, "no animal has id 99", 404);
    let window = json!({"limit": 60, "remaining": 55, "reset": 1_795_455_420});
    [
        ("Pet", pet.clone()),
        ("Pets", json!([pet])),
        ("NewPet", json!({"name": "Rex", "categoryId": 1, "status": "available"})),
        ("PetPatch", json!({"name": "Rex II", "categoryId": 2, "status": "sold"})),
        ("Inventory", json!({"available": 120, "pending": 4, "sold": 37})),
        ("PetStatus", json!("available")),
        ("Order", order.clone()),
        ("Orders", json!([order])),
        ("NewOrder", json!({"petId": 1})),
        ("OrderUpdate", json!({"status": "approved"})),
        ("OrderStatus", json!("placed")),
        (
            "Event",
            json!({"id": 42, "type": "order.placed", "createdAt": "2026-11-23T17:36:06Z", "data": {"object": order.clone()}}),
        ),
        ("EventData", json!({"object": pet.clone()})),
        ("EventObject", pet.clone()),
        ("Events", json!([{"id": 41, "type": "pet.created", "createdAt": "2026-11-23T17:35:58Z", "data": {"object": pet.clone()}}])),
        ("EventType", json!("pet.created")),
        (
            "NewWebhookEndpoint",
            json!({"url": "https://hooks.example.com/animal-store", "events": ["pet.created", "order.placed"]}),
        ),
        (
            "NewWebhookEndpointCreated",
            json!({"id": 3, "url": "https://hooks.example.com/animal-store", "events": ["pet.created", "order.placed"], "status": "enabled", "createdAt": "2026-11-23T17:36:06Z", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}),
        ),
        (
            "WebhookEndpoint",
            json!({"id": 3, "url": "https://hooks.example.com/animal-store", "events": ["pet.created", "order.placed"], "status": "enabled", "createdAt": "2026-11-23T17:36:06Z"}),
        ),
        (
            "WebhookEndpointUpdate",
            json!({"url": "https://hooks.example.com/v2", "events": ["*"], "status": "disabled"}),
        ),
        ("WebhookEndpointStatus", json!("enabled")),
        (
            "WebhookDelivery",
            json!({"id": 17, "eventId": 42, "attempt": 2, "attemptedAt": "2026-11-23T17:36:11Z", "outcome": "http_error", "statusCode": 503, "nextAttemptAt": "2026-11-23T17:41:11Z"}),
        ),
        ("WebhookDeliveryOutcome", json!("delivered")),
        ("Error", error),
        ("ErrorCode", json!("not_found")),
        ("PlanName", json!("free")),
        ("RateLimitWindow", window.clone()),
        (
            "RateLimit",
            json!({"plan": "free", "minute": window, "day": {"limit": 1000, "remaining": 995, "reset": 1_795_478_400}}),
        ),
    ]
    .into_iter()
    .map(|(name, example)| (name.to_owned(), example))
    .collect()
}

fn error_body(code: ErrorCode, message: &str, status: u16) -> Value {
    let status = poem::http::StatusCode::from_u16(status).unwrap_or(code.status());
    ApiError::new(code, message).with_status(status).body().to_json().unwrap_or_default()
}

/// The Error body a response of `operation` with `status` shows as its example.
fn error_example(operation: &str, status: u16) -> Value {
    let (code, message) = match (status, operation) {
        (400, "listPets" | "listOrders") => {
            (ErrorCode::ValidationFailed, "limit must be between 1 and 100, got 0")
        }
        (400, "createPet" | "updatePet") => (ErrorCode::ValidationFailed, "name must not be blank"),
        (400, "deletePet") => {
            (ErrorCode::InvalidRequest, "petId must be an int64 integer, got \"abc\"")
        }
        (400, "placeOrder") => (ErrorCode::ValidationFailed, "petId is required"),
        (400, "updateOrder") => (ErrorCode::ValidationFailed, "status is required"),
        (400, "listEvents") => {
            (ErrorCode::InvalidRequest, "after must be an int64 integer, got \"abc\"")
        }
        (400, "getEvent") => {
            (ErrorCode::InvalidRequest, "eventId must be an int64 integer, got \"abc\"")
        }
        (404, "getEvent") => (ErrorCode::NotFound, "no event has id 99"),
        (400, "createWebhookEndpoint" | "updateWebhookEndpoint") => (
            ErrorCode::ValidationFailed,
            "events: \"pet.born\" is not an event type: use pet.created, pet.updated, \
             pet.deleted, order.placed, order.updated or \"*\"",
        ),
        (400, "getWebhookEndpoint" | "deleteWebhookEndpoint" | "listWebhookDeliveries") => {
            (ErrorCode::InvalidRequest, "endpointId must be an int64 integer, got \"abc\"")
        }
        (
            404,
            "getWebhookEndpoint"
            | "updateWebhookEndpoint"
            | "deleteWebhookEndpoint"
            | "listWebhookDeliveries",
        ) => (ErrorCode::NotFound, "no webhook endpoint has id 99"),
        (422, "createWebhookEndpoint" | "updateWebhookEndpoint") => (
            ErrorCode::ValidationFailed,
            "url: the host must resolve only to public addresses, which the service may call \
             (docs/webhooks.md, addresses the service refuses)",
        ),
        (400, "getOrder") => {
            (ErrorCode::InvalidRequest, "orderId must be an int64 integer, got \"abc\"")
        }
        (400, _) => (ErrorCode::InvalidRequest, "petId must be an int64 integer, got \"abc\""),
        (401, _) => (ErrorCode::Unauthorized, crate::error::UNAUTHORIZED_MESSAGE),
        (403, _) => (
            ErrorCode::Forbidden,
            "this key's scope is read: it may call only the operations that change nothing, \
             and this one needs a key with the write scope",
        ),
        (404, "getOrder" | "updateOrder") => (ErrorCode::NotFound, "no order has id 99"),
        (404, _) => (ErrorCode::NotFound, "no animal has id 99"),
        (409, "placeOrder") => (ErrorCode::Conflict, "animal 1 is pending, not available"),
        (409, "updatePet" | "deletePet") => {
            (ErrorCode::Conflict, "animal 1 is held by order 7, which is open")
        }
        (409, "createPet") => (
            ErrorCode::IdempotencyInProgress,
            "a request with this Idempotency-Key is still being processed; retry later",
        ),
        (409, "updateWebhookEndpoint") => (
            ErrorCode::Conflict,
            "webhook endpoint 1 was disabled by the service's operator and cannot be enabled \
             again; register a new endpoint",
        ),
        (409, _) => (ErrorCode::Conflict, "an order cannot move from placed to delivered"),
        (410, _) => (
            ErrorCode::Gone,
            "getPet was removed on 5 December 2030; use GET /v1/pets?id=1 instead",
        ),
        (412, _) => (
            ErrorCode::PreconditionFailed,
            "animal 1 has changed since the entity tag in If-Match was issued: get it again",
        ),
        (413, _) => {
            (ErrorCode::PayloadTooLarge, "the body must not be larger than 16 KiB (16384 bytes)")
        }
        (415, _) => (
            ErrorCode::UnsupportedMediaType,
            "the body must be application/json; send a Content-Type header",
        ),
        (422, "createPet") => (
            ErrorCode::IdempotencyKeyReused,
            "this Idempotency-Key was used with another request: use a new key for a new request",
        ),
        (422, _) => (ErrorCode::ValidationFailed, "petId: no animal has id 99"),
        (429, _) => (
            ErrorCode::RateLimited,
            "rate limit exceeded: 60 requests per minute; retry in 41 s, backing off exponentially; \
             calling on while limited suspends the key",
        ),
        (503, _) => {
            (ErrorCode::ServiceUnavailable, "the store is temporarily unavailable; retry later")
        }
        _ => (
            ErrorCode::InternalError,
            "the server failed to handle the request; it has been logged",
        ),
    };
    error_body(code, message, status)
}

/// The example of a body whose schema is `schema`: the named schema's, or an array of the
/// items' example.
fn body_example(schema: &Value, examples: &Map<String, Value>) -> Option<Value> {
    let named = |schema: &Value| {
        schema["$ref"]
            .as_str()?
            .strip_prefix("#/components/schemas/")
            .and_then(|n| examples.get(n))
            .cloned()
    };
    named(schema).or_else(|| {
        (schema["type"] == "array").then(|| named(&schema["items"]).map(|item| json!([item])))?
    })
}

/// Adds the examples to `document`.
pub(super) fn add(document: &mut Value) {
    let examples = schema_examples();
    if let Some(schemas) = document["components"]["schemas"].as_object_mut() {
        for (name, schema) in schemas.iter_mut() {
            if let Some(example) = examples.get(name) {
                schema["example"] = example.clone();
            }
        }
    }
    for operation in super::operations(document) {
        let id = operation["operationId"].as_str().unwrap_or_default().to_owned();
        let request = operation.get_mut("requestBody").and_then(|body| body.get_mut("content"));
        for media in request.and_then(Value::as_object_mut).into_iter().flat_map(|m| m.values_mut())
        {
            if let Some(example) = body_example(&media["schema"], &examples) {
                media["example"] = example;
            }
        }
        let responses =
            operation["responses"].as_object_mut().into_iter().flat_map(|r| r.iter_mut());
        for (status, response) in responses {
            let status: u16 = status.parse().unwrap_or(500);
            let contents = response.get_mut("content").and_then(Value::as_object_mut);
            for media in contents.into_iter().flat_map(|m| m.values_mut()) {
                let example = if media["schema"]["$ref"] == "#/components/schemas/Error" {
                    Some(error_example(&id, status))
                } else {
                    body_example(&media["schema"], &examples)
                };
                if let Some(example) = example {
                    media["example"] = example;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_and_every_body_has_an_example() {
        let document = crate::document::document(
            &crate::document::service(&crate::operations::state::ApiConfig::default()),
            true,
        );
        for (name, schema) in document["components"]["schemas"].as_object().expect("schemas") {
            assert!(schema.get("example").is_some(), "the schema {name} has no example");
        }
        let mut document = document;
        for operation in crate::document::operations(&mut document) {
            let id = operation["operationId"].as_str().unwrap_or_default().to_owned();
            let request =
                operation["requestBody"]["content"].as_object().cloned().unwrap_or_default();
            let responses = operation["responses"].as_object().cloned().unwrap_or_default();
            let bodies =
                request.values().cloned().chain(responses.values().flat_map(|r| {
                    r["content"].as_object().cloned().unwrap_or_default().into_values()
                }));
            for media in bodies {
                assert!(media.get("example").is_some(), "{id}: a body without an example: {media}");
            }
        }
    }

    /// Properties a schema's example leaves out on purpose: `suspendedUntil` is shown only
    /// for a suspended key.
    const NOT_IN_THE_EXAMPLE: [(&str, &str); 1] = [("RateLimit", "suspendedUntil")];

    #[test]
    fn every_example_shows_every_property_of_its_schema_and_no_other() {
        let document = crate::document::document(
            &crate::document::service(&crate::operations::state::ApiConfig::default()),
            true,
        );
        for (name, schema) in document["components"]["schemas"].as_object().expect("schemas") {
            let Some(properties) = schema["properties"].as_object() else { continue };
            let mut expected: Vec<&str> = properties
                .keys()
                .map(String::as_str)
                .filter(|property| !NOT_IN_THE_EXAMPLE.contains(&(name.as_str(), *property)))
                .collect();
            let example = schema["example"].as_object().expect("an object example");
            let mut shown: Vec<&str> = example.keys().map(String::as_str).collect();
            expected.sort_unstable();
            shown.sort_unstable();
            assert_eq!(shown, expected, "the example of {name} shows other fields than it has");
        }
    }

    #[test]
    fn request_examples_are_bodies_the_service_accepts() {
        let examples = schema_examples();
        let now = std::time::SystemTime::now();
        assert!(crate::wire::pets::parse_new_pet(examples["NewPet"].clone(), now).is_ok());
        assert_eq!(
            examples["Error"],
            json!({"code": "not_found", "message": "no animal has id 99", "status": 404})
        );
        assert_eq!(examples["Order"]["createdAt"], "2026-11-23T17:36:06Z");
    }
}

/// The reference in docs/api.md against the document: its resources' tables list exactly the
/// properties of their schemas, and the document uses only formats clients know.
#[cfg(test)]
mod reference {
    use serde_json::Value;

    /// The fields each `### Name` table of docs/api.md's "Resources" lists, by name.
    fn documented_fields() -> Vec<(String, Vec<String>)> {
        let api = include_str!("../../../../docs/api.md");
        let resources = api.split("\n## Resources\n").nth(1).expect("a Resources section");
        let resources = resources.split("\n## ").next().unwrap_or_default();
        resources
            .split("\n### ")
            .skip(1)
            .map(|section| {
                let name = section.lines().next().unwrap_or_default().trim().to_owned();
                let fields = section
                    .lines()
                    .filter_map(|line| line.strip_prefix("| `"))
                    .filter_map(|rest| rest.split_once('`').map(|(field, _)| field.to_owned()))
                    .collect();
                (name, fields)
            })
            .collect()
    }

    fn document() -> Value {
        crate::document::document(
            &crate::document::service(&crate::operations::state::ApiConfig::default()),
            true,
        )
    }

    #[test]
    fn each_resource_of_the_reference_lists_exactly_its_properties() {
        let document = document();
        let schemas = document["components"]["schemas"].as_object().expect("schemas");
        let mut checked = 0;
        for (name, mut fields) in documented_fields() {
            let Some(properties) = schemas.get(&name).and_then(|s| s["properties"].as_object())
            else {
                continue;
            };
            let mut properties: Vec<String> = properties.keys().cloned().collect();
            properties.sort_unstable();
            fields.sort_unstable();
            assert_eq!(fields, properties, "docs/api.md's table of {name} against its schema");
            checked += 1;
        }
        assert!(checked >= 3, "the reference's resource tables were read: {checked}");
    }

    #[test]
    fn the_document_uses_only_formats_clients_know() {
        fn formats<'a>(value: &'a Value, found: &mut Vec<&'a str>) {
            match value {
                Value::Object(map) => {
                    if let Some(Value::String(format)) = map.get("format") {
                        found.push(format);
                    }
                    map.values().for_each(|v| formats(v, found));
                }
                Value::Array(items) => items.iter().for_each(|v| formats(v, found)),
                _ => {}
            }
        }
        let document = document();
        let mut found = Vec::new();
        formats(&document, &mut found);
        let known = ["int32", "int64", "uint32", "uint64", "date", "date-time", "float", "double"];
        for format in found {
            assert!(known.contains(&format), "format {format:?} is not one OpenAPI names");
        }
    }
}
