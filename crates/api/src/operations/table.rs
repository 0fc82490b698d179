//! What each operation asks of the layers, in one table keyed by operation: its address, how
//! stable it is, its deprecation, the scope a key needs, whether it takes an
//! `Idempotency-Key`, and whether its answers are revalidated.
//!
//! The layers read an operation's entry once per request (`routes.rs`); the document is
//! completed from it (`x-stability`, `x-scope`, the headers the layers add). A test holds
//! the table against the operations poem-openapi generates, so the two cannot drift.

use animal_store_domain::Scope;
use poem::http::{Method, StatusCode};

use crate::wire::deprecation::{Deprecation, GET_PET};
use crate::wire::stability::Stability;

/// How the answers of a route may be kept (RFC 9111; `docs/api.md#caching-and-compression`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caching {
    /// A read whose answers carry an `ETag`, answer `If-None-Match` with 304, and may be
    /// kept by the client's own cache, which must ask again before each use
    /// (`private, no-cache`); no shared cache keeps them.
    Revalidated,
    /// The document and the docs page, the same for everyone: any cache may keep them 5
    /// minutes, except that the answer to a request with a key carries that key's
    /// rate-limit headers, so only that client's cache may keep it.
    Published,
    /// Never kept (`no-store`): writes, the rate limit, which must be current, reads with no
    /// `ETag`, the probes and the metrics.
    NoStore,
}

impl Caching {
    /// How an answer with `status` may be kept: only a 200 or a 304 as its route says.
    pub fn answered(self, status: StatusCode) -> Self {
        if matches!(status, StatusCode::OK | StatusCode::NOT_MODIFIED) {
            self
        } else {
            Self::NoStore
        }
    }

    /// `Cache-Control`, and `Vary` where a cache may keep the answer, for a request with
    /// (`authorized`) or without an `Authorization` header.
    pub fn headers(self, authorized: bool) -> (&'static str, Option<&'static str>) {
        let vary = Some("Authorization, Accept-Encoding");
        match (self, authorized) {
            (Self::Revalidated, _) => ("private, no-cache", vary),
            (Self::Published, false) => ("public, max-age=300", vary),
            (Self::Published, true) => ("private, max-age=300", vary),
            (Self::NoStore, _) => ("no-store", None),
        }
    }
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
        self.id == crate::operations::rate_limit::GET_RATE_LIMIT
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
        id: crate::operations::rate_limit::GET_RATE_LIMIT,
        path: "/v1/rate_limit",
        stability: Stability::Beta,
        ..Operation::READ
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_revalidated_reads_and_the_documents_may_be_kept() {
        assert_eq!(Caching::NoStore.headers(true), ("no-store", None));
        assert_eq!(Caching::NoStore.headers(false), ("no-store", None));
        assert_eq!(Caching::Revalidated.headers(true).0, "private, no-cache");
        assert_eq!(Caching::Published.headers(false).0, "public, max-age=300");
        assert_eq!(Caching::Published.headers(true).0, "private, max-age=300");
    }

    #[test]
    fn an_answer_is_kept_only_when_it_is_a_200_or_a_304() {
        assert_eq!(Caching::Revalidated.answered(StatusCode::NOT_MODIFIED), Caching::Revalidated);
        assert_eq!(Caching::Published.answered(StatusCode::OK), Caching::Published);
        assert_eq!(Caching::Revalidated.answered(StatusCode::NOT_FOUND), Caching::NoStore);
    }
}
