//! Every non-2xx answer is the Error body, with a code from a closed, documented set.

use std::sync::Arc;

use animal_store_domain::{NewPet, Pet, PetId, PetRepository, PetStatus, RepositoryError};
use async_trait::async_trait;
use poem::http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;

/// Every operation of the document, asked without a key, answers 401 in the Error shape:
/// each one's endpoint turns the errors raised before its handler into the Error body.
#[tokio::test]
async fn every_operation_refuses_a_missing_key_in_the_error_body() {
    let h = Harness::new().await;
    let document = h.send(Method::GET, "/v1/openapi.json", None, None).await.body;
    let paths = document["paths"].as_object().expect("paths");
    let mut asked = 0;
    for (path, item) in paths {
        let uri = path
            .split('/')
            .map(|segment| if segment.starts_with('{') { "1" } else { segment })
            .collect::<Vec<_>>()
            .join("/");
        for method in item.as_object().expect("a path item").keys() {
            let method = Method::from_bytes(method.to_ascii_uppercase().as_bytes()).expect("m");
            let body = (method != Method::GET && method != Method::DELETE)
                .then(|| ("application/json", b"{}".to_vec()));
            let reply = h.send(method.clone(), &format!("/v1{uri}"), None, body).await;
            assert_eq!(reply.status.as_u16(), 401, "{method} {uri}: {:?}", reply.body);
            reply.assert_error(401, "unauthorized");
            asked += 1;
        }
    }
    assert_eq!(asked, 19, "every operation was asked");
}

#[tokio::test]
async fn routing_errors_use_the_error_body() {
    let h = Harness::new().await;
    h.get("/v1/nothing-here").await.assert_error(404, "not_found");
    h.get("/").await.assert_error(404, "not_found");
    let reply = h.send(Method::DELETE, "/v1/pets", Some(&h.bearer()), None).await;
    reply.assert_error(405, "method_not_allowed");
    assert_eq!(reply.header("allow"), Some("GET, POST, HEAD"));
    let reply = h.send(Method::PUT, "/v1/pets/1", Some(&h.bearer()), None).await;
    reply.assert_error(405, "method_not_allowed");
    assert_eq!(reply.header("allow"), Some("GET, PATCH, DELETE, HEAD"));
}

#[tokio::test]
async fn a_path_that_does_not_decode_is_refused_in_the_error_body() {
    let h = Harness::new().await;
    for path in ["/v1/pets/%FF", "/v1/pets/1%C3", "/v1/store/orders/%FF"] {
        let reply = h.get(path).await;
        reply.assert_error(400, "invalid_request");
        assert_eq!(
            reply.body["message"], "the path is not valid UTF-8 once percent-decoded",
            "{path}"
        );
    }
    let reply = h.get("/v1/pets/abc").await;
    reply.assert_error(400, "invalid_request");
    assert_eq!(reply.body["message"], "petId must be an int64 integer, got \"abc\"");
}

#[tokio::test]
async fn bad_bodies_use_the_error_body_and_store_nothing() {
    let h = Harness::new().await;
    h.post_json("{\"name\":").await.assert_error(400, "invalid_request");
    h.post_json("[1,2]").await.assert_error(400, "invalid_request");
    h.post_json("").await.assert_error(400, "invalid_request");
    h.post_json("{\"name\": 7, \"categoryId\": 1}").await.assert_error(400, "validation_failed");
    let reply = h
        .send(Method::POST, "/v1/pets", Some(&h.bearer()), Some(("text/plain", b"{}".to_vec())))
        .await;
    reply.assert_error(415, "unsupported_media_type");
    let big =
        format!("{{\"name\":\"Rex\",\"categoryId\":1,\"pad\":\"{}\"}}", "x".repeat(17 * 1024));
    h.post_json(&big).await.assert_error(413, "payload_too_large");
    assert!(h.stored().await.is_empty());
}

#[tokio::test]
async fn a_chunked_body_over_16_kib_is_refused_without_content_length() {
    let h = Harness::new().await;
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        (0..20).map(|_| Ok(vec![b' '; 1024])).collect();
    let body = poem::Body::from_bytes_stream(futures_util::stream::iter(chunks));
    let resp = h
        .client
        .post("/v1/pets")
        .header("Authorization", h.bearer())
        .content_type("application/json")
        .body(body)
        .send()
        .await;
    resp.assert_status(StatusCode::PAYLOAD_TOO_LARGE);
    let body: Value =
        serde_json::from_str(&resp.0.into_body().into_string().await.expect("body")).expect("json");
    assert_eq!(body["code"], "payload_too_large");
}

/// A store that fails the way a broken disk or a dropped connection would.
struct BrokenStore {
    panic: bool,
}

#[async_trait]
impl PetRepository for BrokenStore {
    async fn create(&self, _: NewPet) -> Result<Pet, RepositoryError> {
        Err(RepositoryError::Unavailable(Box::new(DiskOnFire)))
    }
    async fn get(&self, _: PetId) -> Result<Option<Pet>, RepositoryError> {
        Err(RepositoryError::Backend(Box::new(DiskOnFire)))
    }
    async fn list(
        &self,
        _: Option<PetStatus>,
        _: Option<PetId>,
        _: usize,
    ) -> Result<Vec<Pet>, RepositoryError> {
        assert!(!self.panic, "a bug in an adapter");
        Err(RepositoryError::Backend(Box::new(DiskOnFire)))
    }
}

#[tokio::test]
async fn failures_and_panics_are_500_or_503_without_their_cause() {
    let h = Harness::with_pets(Arc::new(BrokenStore { panic: false })).await;
    let reply = h.get("/v1/pets/1").await;
    reply.assert_error(500, "internal_error");
    assert!(
        !reply.body["message"].as_str().unwrap_or_default().contains("fire"),
        "the cause is not sent"
    );
    let reply = h.post_json("{\"name\":\"Rex\",\"categoryId\":1}").await;
    reply.assert_error(503, "service_unavailable");
    assert_eq!(reply.header("retry-after"), Some("1"));

    let h = Harness::with_pets(Arc::new(BrokenStore { panic: true })).await;
    let reply = h.get("/v1/pets").await;
    reply.assert_error(500, "internal_error");
    assert!(reply.header("x-request-id").is_some());
}

/// The request timeout counts from the request's arrival: the key's lookup, its last-use
/// record and the operation share it. Each takes 250 ms here, well within 600 ms alone, but
/// not all three together.
#[tokio::test]
async fn the_request_timeout_covers_the_key_check_and_the_operation_together() {
    let timeout = std::time::Duration::from_millis(600);
    let h = Harness::slow(std::time::Duration::from_millis(250), timeout).await;
    let began = std::time::Instant::now();
    let reply = h.get("/v1/pets").await;
    let waited = began.elapsed();
    reply.assert_error(503, "service_unavailable");
    assert_eq!(reply.header("retry-after"), Some("1"));
    assert!(reply.header("x-ratelimit-limit").is_some(), "the limit headers stay");
    assert!(waited >= timeout && waited < timeout * 2, "answered at the timeout: {waited:?}");
}

#[tokio::test]
async fn the_error_codes_are_the_documented_closed_set() {
    let h = Harness::new().await;
    let doc = h.send(Method::GET, "/v1/openapi.json", None, None).await.body;
    let code = &doc["components"]["schemas"]["Error"]["properties"]["code"];
    assert_eq!(code["allOf"][0]["$ref"], "#/components/schemas/ErrorCode", "{code}");
    assert_eq!(doc["components"]["schemas"]["ErrorCode"]["type"], "string");
    let codes = &doc["components"]["schemas"]["ErrorCode"]["enum"];
    assert_eq!(
        codes,
        &json!([
            "invalid_request",
            "validation_failed",
            "unauthorized",
            "forbidden",
            "not_found",
            "method_not_allowed",
            "conflict",
            "idempotency_in_progress",
            "gone",
            "precondition_failed",
            "payload_too_large",
            "unsupported_media_type",
            "idempotency_key_reused",
            "rate_limited",
            "api_key_suspended",
            "internal_error",
            "service_unavailable"
        ])
    );
}
