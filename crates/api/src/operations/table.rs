//! What each operation asks of the layers, in one table keyed by operation: its address, how
//! stable it is, its deprecation, the scope a key needs, whether it takes an
//! `Idempotency-Key`, and whether its answers are revalidated.
//!
//! The layers read an operation's entry once per request (`routes.rs`); the document is
//! completed from it (`x-stability`, `x-scope`, the headers the layers add). A test holds
//! the table against the operations poem-openapi generates, so the two cannot drift.

use animal_store_domain::Scope;
use poem::http::Method;

use crate::deprecation::{Deprecation, GET_PET};
use crate::stability::Stability;

/// How the answers of an operation may be kept (`docs/api.md#caching-and-compression`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caching {
    /// A read whose answers carry an `ETag`, answer `If-None-Match` with 304, and may be
    /// kept by the client only to be revalidated (`private, no-cache`).
    Revalidated,
    /// Never kept (`no-store`): writes, and reads with no `ETag`.
    NoStore,
}

/// One operation of the API.
#[derive(Debug)]
pub struct Operation {
    /// Its id in the document.
    pub id: &'static str,
    /// The method that reaches it.
    pub method: Method,
    /// Its path template, `/v1` included.
    pub path: &'static str,
    /// How far it may still change.
    pub stability: Stability,
    /// Its deprecation, when it is deprecated.
    pub deprecation: Option<&'static Deprecation>,
    /// The scope a key needs to call it.
    pub scope: Scope,
    /// Whether it takes an `Idempotency-Key`.
    pub idempotent: bool,
    /// How its answers may be kept.
    pub caching: Caching,
    /// The media types of its body, comma-separated, for a `PATCH`'s `Accept-Patch`.
    pub patch_types: Option<&'static str>,
}

impl Operation {
    /// A stable read that changes nothing and has no `ETag`.
    const READ: Self = Self {
        id: "",
        method: Method::GET,
        path: "",
        stability: Stability::Stable,
        deprecation: None,
        scope: Scope::Read,
        idempotent: false,
        caching: Caching::NoStore,
        patch_types: None,
    };

    /// A stable write.
    const WRITE: Self = Self { scope: Scope::Write, method: Method::POST, ..Self::READ };

    /// Whether it reads the caller's rate limit without spending it.
    pub fn is_inquiry(&self) -> bool {
        self.id == crate::rate_limit::GET_RATE_LIMIT
    }

    /// The entry of the operation `id`.
    pub fn of(id: &str) -> Option<&'static Self> {
        OPERATIONS.iter().find(|operation| operation.id == id)
    }
}

const EXPERIMENTAL: Stability = Stability::Experimental;
const GET: Method = Method::GET;
const PATCH: Method = Method::PATCH;
const DELETE: Method = Method::DELETE;
const REVALIDATED: Caching = Caching::Revalidated;
const JSON: Option<&str> = Some("application/json");

/// Every operation of the API.
pub static OPERATIONS: [Operation; 19] = [
    Operation { id: "listPets", path: "/v1/pets", caching: REVALIDATED, ..Operation::READ },
    Operation { id: "createPet", path: "/v1/pets", idempotent: true, ..Operation::WRITE },
    Operation {
        id: "getPet",
        path: "/v1/pets/{petId}",
        deprecation: Some(&GET_PET),
        caching: REVALIDATED,
        ..Operation::READ
    },
    Operation {
        id: "updatePet",
        method: PATCH,
        path: "/v1/pets/{petId}",
        stability: EXPERIMENTAL,
        patch_types: Some("application/merge-patch+json, application/json"),
        ..Operation::WRITE
    },
    Operation {
        id: "deletePet",
        method: DELETE,
        path: "/v1/pets/{petId}",
        stability: EXPERIMENTAL,
        ..Operation::WRITE
    },
    Operation {
        id: "placeOrder",
        path: "/v1/store/orders",
        stability: EXPERIMENTAL,
        idempotent: true,
        ..Operation::WRITE
    },
    Operation {
        id: "listOrders",
        path: "/v1/store/orders",
        stability: EXPERIMENTAL,
        caching: REVALIDATED,
        ..Operation::READ
    },
    Operation {
        id: "getOrder",
        path: "/v1/store/orders/{orderId}",
        stability: EXPERIMENTAL,
        caching: REVALIDATED,
        ..Operation::READ
    },
    Operation {
        id: "updateOrder",
        method: PATCH,
        path: "/v1/store/orders/{orderId}",
        stability: Stability::Beta,
        patch_types: JSON,
        ..Operation::WRITE
    },
    Operation {
        id: "getInventory",
        path: "/v1/store/inventory",
        stability: EXPERIMENTAL,
        ..Operation::READ
    },
    Operation {
        id: "listEvents",
        path: "/v1/events",
        stability: EXPERIMENTAL,
        caching: REVALIDATED,
        ..Operation::READ
    },
    Operation {
        id: "getEvent",
        path: "/v1/events/{eventId}",
        stability: EXPERIMENTAL,
        caching: REVALIDATED,
        ..Operation::READ
    },
    Operation {
        id: "createWebhookEndpoint",
        path: "/v1/webhook_endpoints",
        stability: EXPERIMENTAL,
        ..Operation::WRITE
    },
    Operation {
        id: "listWebhookEndpoints",
        path: "/v1/webhook_endpoints",
        stability: EXPERIMENTAL,
        ..Operation::READ
    },
    Operation {
        id: "getWebhookEndpoint",
        path: "/v1/webhook_endpoints/{endpointId}",
        stability: EXPERIMENTAL,
        ..Operation::READ
    },
    Operation {
        id: "updateWebhookEndpoint",
        method: PATCH,
        path: "/v1/webhook_endpoints/{endpointId}",
        stability: EXPERIMENTAL,
        patch_types: JSON,
        ..Operation::WRITE
    },
    Operation {
        id: "deleteWebhookEndpoint",
        method: DELETE,
        path: "/v1/webhook_endpoints/{endpointId}",
        stability: EXPERIMENTAL,
        ..Operation::WRITE
    },
    Operation {
        id: "listWebhookDeliveries",
        method: GET,
        path: "/v1/webhook_endpoints/{endpointId}/deliveries",
        stability: EXPERIMENTAL,
        ..Operation::READ
    },
    Operation {
        id: crate::rate_limit::GET_RATE_LIMIT,
        path: "/v1/rate_limit",
        stability: Stability::Beta,
        ..Operation::READ
    },
];

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::Value;

    use super::*;
    use crate::state::ApiConfig;

    /// The document's operations, each with its method and path.
    fn documented() -> Vec<(String, Method, String, Value)> {
        let service = crate::openapi::service(&ApiConfig::default());
        let document = crate::openapi::document(&service, true);
        let mut found = Vec::new();
        for (path, item) in document["paths"].as_object().expect("paths") {
            for (method, operation) in item.as_object().expect("a path item") {
                let method = Method::from_bytes(method.to_ascii_uppercase().as_bytes()).expect("m");
                let id = operation["operationId"].as_str().expect("an id").to_owned();
                found.push((id, method, format!("/v1{path}"), operation.clone()));
            }
        }
        found
    }

    fn declares(operation: &Value, header: &str) -> bool {
        operation["parameters"].as_array().into_iter().flatten().any(|p| {
            p["in"] == "header"
                && p["name"].as_str().is_some_and(|n| n.eq_ignore_ascii_case(header))
        })
    }

    #[test]
    fn the_table_says_what_the_generated_operations_declare() {
        let documented = documented();
        let ids = |ids: Vec<&str>| ids.into_iter().map(str::to_owned).collect::<BTreeSet<_>>();
        assert_eq!(
            ids(documented.iter().map(|(id, ..)| id.as_str()).collect()),
            ids(OPERATIONS.iter().map(|op| op.id).collect()),
            "one entry for each operation"
        );
        for (id, method, path, operation) in &documented {
            let entry = Operation::of(id).expect("an entry");
            assert_eq!((&entry.method, entry.path), (method, path.as_str()), "{id}");
            let summary = operation["summary"].as_str().expect("a summary");
            assert_eq!(Stability::of_summary(summary).0, entry.stability, "{id}: {summary}");
            assert_eq!(operation["deprecated"] == true, entry.deprecation.is_some(), "{id}");
            let changes_nothing = *method == Method::GET;
            assert_eq!(entry.scope, if changes_nothing { Scope::Read } else { Scope::Write });
            assert_eq!(declares(operation, "Idempotency-Key"), entry.idempotent, "{id}");
            let revalidated = changes_nothing && declares(operation, "If-None-Match");
            assert_eq!(revalidated, entry.caching == Caching::Revalidated, "{id}");
            let types = operation["requestBody"]["content"]
                .as_object()
                .map(|content| content.keys().map(String::as_str).collect::<Vec<_>>().join(", "));
            let patch_types = (*method == Method::PATCH).then_some(types).flatten();
            assert_eq!(patch_types.as_deref(), entry.patch_types, "{id}");
        }
    }
}
