//! The API through poem's test client, over the in-memory adapters: one test (or more) per
//! decision A1–A9, each asserting what a client sees — status, headers, body — and what the
//! store holds afterwards.

use std::sync::Arc;
use std::time::Duration;

use animal_store_api::{ApiConfig, AppState, app};
use animal_store_domain::{
    ApiKeyStore, Clock, Environment, KeyService, LimitPolicy, NewPet, Pet, PetId, PetRepository,
    PetService, PetStatus, Plan, RepositoryError,
};
use animal_store_infra::{ManualClock, MemoryApiKeyStore, MemoryPetRepository, MemoryRateLimiter};
use async_trait::async_trait;
use poem::http::{Method, StatusCode};
use poem::test::TestClient;
use poem::{Endpoint, Response};
use serde_json::{Value, json};

/// 2026-11-22T00:00:00Z: before the sunset of getPet.
const NOW: u64 = 1_795_305_600;

struct Harness {
    client: TestClient<poem::endpoint::BoxEndpoint<'static, Response>>,
    pets: Arc<dyn PetRepository>,
    keys: KeyService,
    clock: ManualClock,
    key: String,
}

struct Reply {
    status: StatusCode,
    headers: poem::http::HeaderMap,
    body: Value,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Asserts the contract's Error body with this status and code.
    fn assert_error(&self, status: u16, code: &str) {
        assert_eq!(self.status.as_u16(), status, "{:?}", self.body);
        assert_eq!(self.body["code"], code, "{:?}", self.body);
        assert_eq!(self.body["status"], status);
        assert!(self.body["message"].as_str().is_some_and(|m| !m.is_empty()));
        assert!(self.header("content-type").is_some_and(|c| c.starts_with("application/json")));
    }
}

impl Harness {
    async fn new() -> Self {
        Self::with_pets(Arc::new(MemoryPetRepository::new())).await
    }

    async fn with_pets(pets: Arc<dyn PetRepository>) -> Self {
        let clock = ManualClock::at_unix(NOW);
        let keys = KeyService::new(
            Arc::new(MemoryApiKeyStore::new()),
            Arc::new(clock.clone()),
            Environment::Production,
        );
        // Business: room for every test's requests within one minute of the manual clock.
        let key = keys.issue(None, Plan::Business).await.expect("issue").secret.expose().to_owned();
        let state = AppState {
            pets: PetService::new(pets.clone()),
            keys: keys.clone(),
            clock: Arc::new(clock.clone()),
            limiter: Arc::new(MemoryRateLimiter::new(
                LimitPolicy::default(),
                10_000,
                Arc::new(clock.clone()),
            )),
            limits: LimitPolicy::default(),
            config: Arc::new(ApiConfig::default()),
        };
        Self { client: TestClient::new(app(state)), pets, keys, clock, key }
    }

    async fn send(
        &self,
        method: Method,
        uri: &str,
        auth: Option<&str>,
        body: Option<(&str, Vec<u8>)>,
    ) -> Reply {
        let mut req = self.client.request(method, uri);
        if let Some(auth) = auth {
            req = req.header("Authorization", auth);
        }
        if let Some((content_type, bytes)) = body {
            req = req.content_type(content_type).body(bytes);
        }
        let resp = req.send().await.0;
        let (status, headers) = (resp.status(), resp.headers().clone());
        let text = resp.into_body().into_string().await.expect("a body");
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        Reply { status, headers, body }
    }

    fn bearer(&self) -> String {
        format!("Bearer {}", self.key)
    }

    async fn get(&self, uri: &str) -> Reply {
        self.send(Method::GET, uri, Some(&self.bearer()), None).await
    }

    async fn post_json(&self, body: &str) -> Reply {
        self.send(
            Method::POST,
            "/v1/pets",
            Some(&self.bearer()),
            Some(("application/json", body.as_bytes().to_vec())),
        )
        .await
    }

    async fn stored(&self) -> Vec<Pet> {
        self.pets.list(None, None, 1000).await.expect("list")
    }
}

// A1: the document and the docs page, without auth.
#[tokio::test]
async fn a1_the_document_describes_the_three_operations() {
    let h = Harness::new().await;
    let reply = h.send(Method::GET, "/v1/openapi.json", None, None).await;
    assert_eq!(reply.status, StatusCode::OK);
    let doc = reply.body;
    assert_eq!(doc["info"]["version"], "1.0.0");
    assert_eq!(doc["servers"].as_array().map(Vec::len), Some(2));
    assert_eq!(doc["servers"][0]["url"], ApiConfig::default().production_url);
    assert_eq!(doc["paths"]["/pets"]["get"]["operationId"], "listPets");
    assert_eq!(doc["paths"]["/pets"]["post"]["operationId"], "createPet");
    let get_pet = &doc["paths"]["/pets/{petId}"]["get"];
    assert_eq!(get_pet["operationId"], "getPet");
    assert_eq!(get_pet["deprecated"], true);
    assert!(get_pet["responses"]["200"]["headers"]["Sunset"].is_object());
    for op in [&doc["paths"]["/pets"]["get"], &doc["paths"]["/pets"]["post"], get_pet] {
        assert_eq!(op["tags"], json!(["animals"]));
        assert!(op["security"].is_array(), "every operation requires the bearer key");
        assert!(op["responses"]["401"].is_object());
    }
    assert_eq!(doc["components"]["securitySchemes"]["BearerKey"]["scheme"], "bearer");
    assert_eq!(
        doc["paths"]["/pets"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/Pets"
    );
    assert_eq!(doc["components"]["schemas"]["Pets"]["items"]["$ref"], "#/components/schemas/Pet");
    assert_eq!(
        doc["components"]["schemas"]["NewPet"]["properties"]["status"]["default"],
        "available"
    );
    assert_eq!(
        doc["paths"]["/pets"]["get"]["responses"]["400"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/Error"
    );

    let docs = h.send(Method::GET, "/v1/docs", None, None).await;
    assert_eq!(docs.status, StatusCode::OK);
    let html = docs.body.as_str().expect("html");
    assert!(
        html.contains("SwaggerUIBundle") && html.contains("x-stability"),
        "the page shows the completed document"
    );
}

// A2: every non-2xx the service sends is the Error body.
#[tokio::test]
async fn a2_routing_errors_use_the_error_body() {
    let h = Harness::new().await;
    h.get("/v1/nothing-here").await.assert_error(404, "not_found");
    h.get("/").await.assert_error(404, "not_found");
    let reply = h.send(Method::DELETE, "/v1/pets", Some(&h.bearer()), None).await;
    reply.assert_error(405, "method_not_allowed");
    assert_eq!(reply.header("allow"), Some("GET, POST, HEAD"));
    let reply = h.send(Method::PUT, "/v1/pets/1", Some(&h.bearer()), None).await;
    reply.assert_error(405, "method_not_allowed");
    assert_eq!(reply.header("allow"), Some("GET, HEAD"));
}

#[tokio::test]
async fn a2_bad_bodies_use_the_error_body_and_store_nothing() {
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
async fn a2_a_chunked_body_over_16_kib_is_refused_without_content_length() {
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

#[derive(Debug, thiserror::Error)]
#[error("disk on fire")]
struct DiskOnFire;

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
async fn a2_failures_and_panics_are_500_or_503_without_their_cause() {
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

// A3: the codes are a closed set, documented in the schema.
#[tokio::test]
async fn a3_the_error_codes_are_the_documented_closed_set() {
    let h = Harness::new().await;
    let doc = h.send(Method::GET, "/v1/openapi.json", None, None).await.body;
    let code = &doc["components"]["schemas"]["Error"]["properties"]["code"];
    assert_eq!(code["type"], "string");
    assert_eq!(&code["enum"], &doc["components"]["schemas"]["ErrorCode"]["enum"]);
    let codes = &doc["components"]["schemas"]["ErrorCode"]["enum"];
    assert_eq!(
        codes,
        &json!([
            "invalid_request",
            "validation_failed",
            "unauthorized",
            "not_found",
            "method_not_allowed",
            "gone",
            "payload_too_large",
            "unsupported_media_type",
            "rate_limited",
            "api_key_suspended",
            "internal_error",
            "service_unavailable"
        ])
    );
}

// A4: the rules of NewPet.
#[tokio::test]
async fn a4_valid_pets_are_created_with_status_defaulting_to_available() {
    let h = Harness::new().await;
    let reply = h.post_json(r#"{"name":"Rex","categoryId":3,"id":999,"color":"brown"}"#).await;
    assert_eq!(reply.status, StatusCode::CREATED);
    assert_eq!(reply.body, json!({"id": 1, "name": "Rex", "categoryId": 3, "status": "available"}));
    let reply = h
        .post_json(&format!(
            r#"{{"name":"{}","categoryId":9223372036854775807,"status":"sold"}}"#,
            "é".repeat(100)
        ))
        .await;
    assert_eq!(reply.status, StatusCode::CREATED);
    assert_eq!(reply.body["status"], "sold");
    assert_eq!(h.stored().await.len(), 2);
}

#[tokio::test]
async fn a4_invalid_fields_are_400_naming_the_field_and_store_nothing() {
    let h = Harness::new().await;
    let cases = [
        (r#"{"categoryId":1}"#, "name"),
        (r#"{"name":"Rex"}"#, "categoryId"),
        (r#"{"name":"","categoryId":1}"#, "name"),
        (r#"{"name":"   ","categoryId":1}"#, "name"),
        (&*format!(r#"{{"name":"{}","categoryId":1}}"#, "x".repeat(101)), "name"),
        (r#"{"name":"Re\nx","categoryId":1}"#, "name"),
        (r#"{"name":"Rex","categoryId":0}"#, "categoryId"),
        (r#"{"name":"Rex","categoryId":-3}"#, "categoryId"),
        (r#"{"name":"Rex","categoryId":1.5}"#, "categoryId"),
        (r#"{"name":"Rex","categoryId":"1"}"#, "categoryId"),
        (r#"{"name":"Rex","categoryId":99999999999999999999}"#, "categoryId"),
        (r#"{"name":"Rex","categoryId":1,"status":"lost"}"#, "status"),
        (r#"{"name":"Rex","categoryId":1,"status":"Available"}"#, "status"),
        (r#"{"name":null,"categoryId":1}"#, "name"),
        (r#"{"name":"Rex","categoryId":null}"#, "categoryId"),
        (r#"{"name":"Rex","categoryId":1,"status":null}"#, "status"),
    ];
    for (body, field) in cases {
        let reply = h.post_json(body).await;
        reply.assert_error(400, "validation_failed");
        assert!(
            reply.body["message"].as_str().unwrap_or_default().contains(field),
            "{body}: {:?}",
            reply.body
        );
    }
    assert!(h.stored().await.is_empty(), "no invalid pet was stored");
}

// A5: listing, filtering, pagination.
async fn seed(h: &Harness, n: usize) {
    for i in 0..n {
        let status = ["available", "pending", "sold"][i % 3];
        let reply = h
            .post_json(&format!(r#"{{"name":"Pet {i}","categoryId":1,"status":"{status}"}}"#))
            .await;
        assert_eq!(reply.status, StatusCode::CREATED);
    }
}

fn ids(reply: &Reply) -> Vec<i64> {
    reply
        .body
        .as_array()
        .expect("an array")
        .iter()
        .map(|p| p["id"].as_i64().expect("an id"))
        .collect()
}

fn next_link(reply: &Reply) -> Option<String> {
    let link = reply.header("link")?;
    let target = link.strip_prefix('<')?.split_once(">; rel=\"next\"")?.0;
    Some(target.to_owned())
}

#[tokio::test]
async fn a5_limit_defaults_to_20_and_is_bounded() {
    let h = Harness::new().await;
    seed(&h, 25).await;
    let reply = h.get("/v1/pets").await;
    assert_eq!(ids(&reply), (1..=20).collect::<Vec<_>>());
    assert_eq!(h.get("/v1/pets?limit=100").await.body.as_array().map(Vec::len), Some(25));
    assert_eq!(h.get("/v1/pets?limit=1").await.body.as_array().map(Vec::len), Some(1));
    for bad in ["0", "101", "-1", "1000000000000", "99999999999999999999", "-99999999999999999999"]
    {
        h.get(&format!("/v1/pets?limit={bad}")).await.assert_error(400, "validation_failed");
    }
    for bad in ["abc", "1.5", ""] {
        h.get(&format!("/v1/pets?limit={bad}")).await.assert_error(400, "invalid_request");
    }
    h.get("/v1/pets?status=lost").await.assert_error(400, "validation_failed");
    h.get("/v1/pets?cursor=bm9wZQ").await.assert_error(400, "invalid_request");
}

#[tokio::test]
async fn a5_pages_follow_the_link_with_the_same_limit_and_status() {
    let h = Harness::new().await;
    seed(&h, 30).await;
    let mut seen = Vec::new();
    let mut uri = "/v1/pets?limit=4&status=pending".to_owned();
    for _ in 0..10 {
        let reply = h.get(&uri).await;
        assert_eq!(reply.status, StatusCode::OK);
        for pet in reply.body.as_array().expect("an array") {
            assert_eq!(pet["status"], "pending");
        }
        seen.extend(ids(&reply));
        match next_link(&reply) {
            Some(next) => {
                assert!(next.starts_with("/v1/pets?limit=4&status=pending&cursor="), "{next}");
                uri = next;
            }
            None => break,
        }
    }
    let expected: Vec<i64> = (1..=30).filter(|id| id % 3 == 2).collect();
    assert_eq!(seen, expected, "every pending pet once, by id ascending");
    let last = h.get("/v1/pets?limit=100").await;
    assert!(last.header("link").is_none(), "no Link on the last page");
}

// A6: 201 and Location.
#[tokio::test]
async fn a6_created_pets_have_a_location_that_finds_them() {
    let h = Harness::new().await;
    let reply = h.post_json(r#"{"name":"Rex","categoryId":1,"status":"pending"}"#).await;
    assert_eq!(reply.status, StatusCode::CREATED);
    let location = reply.header("location").expect("a Location").to_owned();
    assert_eq!(location, format!("/v1/pets/{}", reply.body["id"]));
    assert_eq!(h.get(&location).await.body, reply.body);
}

// A7: deprecation headers, 404, 400, 410 after the sunset.
#[tokio::test]
async fn a7_get_pet_is_deprecated_on_every_response_and_gone_after_the_sunset() {
    let h = Harness::new().await;
    seed(&h, 1).await;
    let deprecated = |reply: &Reply| {
        assert_eq!(reply.header("deprecation"), Some("@1767225600"));
        assert_eq!(reply.header("sunset"), Some("Thu, 05 Dec 2030 00:00:00 GMT"));
        assert_eq!(reply.header("link"), Some("</v1/pets>; rel=\"successor-version\""));
    };
    let found = h.get("/v1/pets/1").await;
    assert_eq!(found.status, StatusCode::OK);
    deprecated(&found);
    let missing = h.get("/v1/pets/2").await;
    missing.assert_error(404, "not_found");
    deprecated(&missing);
    let bad = h.get("/v1/pets/one").await;
    bad.assert_error(400, "invalid_request");
    assert!(bad.body["message"].as_str().unwrap_or_default().contains("petId"));
    deprecated(&bad);
    let anonymous = h.send(Method::GET, "/v1/pets/1", None, None).await;
    anonymous.assert_error(401, "unauthorized");
    deprecated(&anonymous);

    h.clock.set(std::time::UNIX_EPOCH + Duration::from_secs(1_922_659_199));
    assert_eq!(h.get("/v1/pets/1").await.status, StatusCode::OK, "still there a second before");
    h.clock.advance(Duration::from_secs(1));
    let gone = h.get("/v1/pets/1").await;
    gone.assert_error(410, "gone");
    deprecated(&gone);
    assert_eq!(h.get("/v1/pets").await.status, StatusCode::OK, "listPets lives on");
}

// A8: one 401 for every kind of bad key; the scheme in any case.
#[tokio::test]
async fn a8_every_bad_key_gets_the_same_401() {
    let h = Harness::new().await;
    let staging = KeyService::new(
        Arc::new(MemoryApiKeyStore::new()),
        Arc::new(h.clock.clone()),
        Environment::Staging,
    );
    let staging_key =
        staging.issue(None, Plan::Free).await.expect("issue").secret.expose().to_owned();
    let revoked = h.keys.issue(None, Plan::Pro).await.expect("issue");
    h.keys.revoke(&revoked.key.id).await.expect("revoke");
    // The last character changed to another one.
    let last = if h.key.ends_with('x') { 'y' } else { 'x' };
    let tampered = format!("{}{last}", &h.key[..h.key.len() - 1]);
    let cases = [
        None,
        Some("Basic dXNlcjpwYXNz".to_owned()),
        Some("Bearer".to_owned()),
        Some("Bearer not-a-key".to_owned()),
        Some(format!("Bearer {tampered}")),
        Some(format!("Bearer {}", revoked.secret.expose())),
        Some(format!("Bearer {staging_key}")),
        Some(format!("Bearer {}", h.key.replace("as_live_", "as_test_"))),
    ];
    let mut bodies = Vec::new();
    for auth in &cases {
        for (method, uri) in
            [(Method::GET, "/v1/pets"), (Method::POST, "/v1/pets"), (Method::GET, "/v1/pets/1")]
        {
            let reply = h.send(method, uri, auth.as_deref(), None).await;
            reply.assert_error(401, "unauthorized");
            assert_eq!(reply.header("www-authenticate"), Some("Bearer"));
            bodies.push(reply.body);
        }
    }
    bodies.dedup();
    assert_eq!(bodies.len(), 1, "the 401s cannot be told apart");

    for scheme in ["Bearer", "bearer", "BEARER"] {
        let reply =
            h.send(Method::GET, "/v1/pets", Some(&format!("{scheme} {}", h.key)), None).await;
        assert_eq!(reply.status, StatusCode::OK, "{scheme}");
    }
}

// A9: revocation applies to the next request; last use is recorded.
#[tokio::test]
async fn a9_a_revoked_key_stops_working_and_last_use_is_recorded() {
    let h = Harness::new().await;
    assert_eq!(h.get("/v1/pets").await.status, StatusCode::OK);
    let key = h.keys.list().await.expect("list").remove(0);
    assert_eq!(key.last_used_at, Some(h.clock.now()), "the first use is recorded");
    assert!(!format!("{key:?}").contains(&h.key[21..]), "the store holds no secret");
    h.keys.revoke(&key.id).await.expect("revoke");
    h.get("/v1/pets").await.assert_error(401, "unauthorized");
}

/// A store whose key lookups fail: authentication is then a 503, not a 401 or a 500.
struct UnreachableKeys;

#[async_trait]
impl ApiKeyStore for UnreachableKeys {
    async fn create(&self, _: &animal_store_domain::ApiKey) -> Result<(), RepositoryError> {
        Err(RepositoryError::Unavailable(Box::new(DiskOnFire)))
    }
    async fn find_by_digest(
        &self,
        _: &animal_store_domain::KeyDigest,
    ) -> Result<Option<animal_store_domain::ApiKey>, RepositoryError> {
        Err(RepositoryError::Unavailable(Box::new(DiskOnFire)))
    }
    async fn list(&self) -> Result<Vec<animal_store_domain::ApiKey>, RepositoryError> {
        Ok(Vec::new())
    }
    async fn revoke(
        &self,
        _: &animal_store_domain::KeyId,
        _: std::time::SystemTime,
    ) -> Result<Option<animal_store_domain::ApiKey>, RepositoryError> {
        Ok(None)
    }
    async fn touch(
        &self,
        _: &animal_store_domain::KeyId,
        _: std::time::SystemTime,
    ) -> Result<(), RepositoryError> {
        Ok(())
    }
}

#[tokio::test]
async fn an_unreachable_key_store_is_503() {
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::at_unix(NOW));
    let keys = KeyService::new(Arc::new(UnreachableKeys), clock.clone(), Environment::Production);
    let (_, secret) = animal_store_domain::ApiKeySecret::generate(Environment::Production);
    let state = AppState {
        pets: PetService::new(Arc::new(MemoryPetRepository::new())),
        keys,
        limiter: Arc::new(MemoryRateLimiter::new(LimitPolicy::default(), 10_000, clock.clone())),
        limits: LimitPolicy::default(),
        clock,
        config: Arc::new(ApiConfig::default()),
    };
    let resp = app(state)
        .call(
            poem::Request::builder()
                .uri_str("/v1/pets")
                .header("Authorization", format!("Bearer {}", secret.expose()))
                .finish(),
        )
        .await
        .expect("a response");
    assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
}

// R3–R6: rate limits, their headers on every response, 429s and suspensions.

async fn free_key(h: &Harness) -> String {
    let issued = h.keys.issue(None, Plan::Free).await.expect("issue");
    format!("Bearer {}", issued.secret.expose())
}

fn minute_end(now: u64) -> u64 {
    now - now % 60 + 60
}

#[tokio::test]
async fn r3_every_response_carries_the_rate_limit_headers() {
    let h = Harness::new().await;
    h.clock.advance(Duration::from_secs(15));
    let now = NOW + 15;
    let key = free_key(&h).await;
    let replies = [
        h.send(Method::GET, "/v1/pets", Some(&key), None).await,
        h.send(
            Method::POST,
            "/v1/pets",
            Some(&key),
            Some(("application/json", br#"{"name":"Rex","categoryId":1}"#.to_vec())),
        )
        .await,
        h.send(Method::POST, "/v1/pets", Some(&key), Some(("application/json", b"{}".to_vec())))
            .await,
        h.send(Method::GET, "/v1/pets/99", Some(&key), None).await,
        h.send(Method::DELETE, "/v1/pets", Some(&key), None).await,
        h.send(Method::GET, "/v1/nowhere", Some(&key), None).await,
    ];
    for (i, reply) in replies.iter().enumerate() {
        let remaining = 59 - i;
        assert_eq!(reply.header("x-ratelimit-limit"), Some("60"), "{i}");
        assert_eq!(
            reply.header("x-ratelimit-remaining"),
            Some(remaining.to_string().as_str()),
            "{i}"
        );
        assert_eq!(reply.header("x-ratelimit-reset"), Some(minute_end(now).to_string().as_str()));
        assert_eq!(
            reply.header("ratelimit-policy"),
            Some("\"minute\";q=60;w=60, \"day\";q=1000;w=86400")
        );
        let day_left = 86_400 - now % 86_400;
        assert_eq!(
            reply.header("ratelimit"),
            Some(
                format!("\"minute\";r={remaining};t=45, \"day\";r={};t={day_left}", 999 - i)
                    .as_str()
            )
        );
    }
    // Requests without a valid key count against the client address, and say so.
    for (i, reply) in [
        h.send(Method::GET, "/v1/pets", None, None).await,
        h.send(Method::GET, "/v1/pets", Some("Bearer as_live_nope"), None).await,
        h.send(Method::GET, "/v1/openapi.json", None, None).await,
    ]
    .iter()
    .enumerate()
    {
        assert_eq!(reply.header("x-ratelimit-limit"), Some("60"));
        assert_eq!(reply.header("x-ratelimit-remaining"), Some((59 - i).to_string().as_str()));
    }
}

#[tokio::test]
async fn r4_over_the_limit_is_429_with_retry_after_until_the_window_resets() {
    let h = Harness::new().await;
    h.clock.advance(Duration::from_secs(20));
    let key = free_key(&h).await;
    for _ in 0..60 {
        assert_eq!(h.send(Method::GET, "/v1/pets", Some(&key), None).await.status, StatusCode::OK);
    }
    let reply = h.send(Method::GET, "/v1/pets", Some(&key), None).await;
    reply.assert_error(429, "rate_limited");
    assert_eq!(reply.header("retry-after"), Some("40"));
    assert_eq!(reply.header("x-ratelimit-remaining"), Some("0"));
    // A refused request did not count: the day still has 940 left.
    assert!(
        reply.header("ratelimit").is_some_and(|v| v.contains("\"day\";r=940;")),
        "{:?}",
        reply.header("ratelimit")
    );
    // getPet's 429 still carries its deprecation headers.
    let reply = h.send(Method::GET, "/v1/pets/1", Some(&key), None).await;
    reply.assert_error(429, "rate_limited");
    assert!(reply.header("sunset").is_some());
    h.clock.advance(Duration::from_secs(40));
    assert_eq!(h.send(Method::GET, "/v1/pets", Some(&key), None).await.status, StatusCode::OK);
}

#[tokio::test]
async fn r5_calling_on_while_limited_suspends_the_key_for_15_minutes() {
    let h = Harness::new().await;
    let key = free_key(&h).await;
    for _ in 0..60 {
        assert_eq!(h.send(Method::GET, "/v1/pets", Some(&key), None).await.status, StatusCode::OK);
    }
    for _ in 0..31 {
        h.send(Method::GET, "/v1/pets", Some(&key), None).await.assert_error(429, "rate_limited");
    }
    let reply = h.send(Method::GET, "/v1/pets", Some(&key), None).await;
    reply.assert_error(429, "api_key_suspended");
    assert_eq!(reply.header("retry-after"), Some("900"));
    assert_eq!(reply.header("x-ratelimit-remaining"), Some("0"));
    assert_eq!(reply.header("x-ratelimit-reset"), Some((NOW + 900).to_string().as_str()));
    h.clock.advance(Duration::from_secs(120));
    let reply = h.send(Method::GET, "/v1/pets", Some(&key), None).await;
    reply.assert_error(429, "api_key_suspended");
    assert_eq!(reply.header("retry-after"), Some("780"), "a new minute does not lift a suspension");
    assert_eq!(h.get("/v1/pets").await.status, StatusCode::OK, "other keys are not affected");
    h.clock.advance(Duration::from_secs(780));
    assert_eq!(h.send(Method::GET, "/v1/pets", Some(&key), None).await.status, StatusCode::OK);
}

#[tokio::test]
async fn r6_guessing_keys_from_one_address_ends_in_429() {
    let h = Harness::new().await;
    for i in 0..70 {
        let guess = format!("Bearer as_live_{i:012}_{}", "x".repeat(32));
        let reply = h.send(Method::GET, "/v1/pets", Some(&guess), None).await;
        if i < 60 {
            reply.assert_error(401, "unauthorized");
            assert_eq!(reply.header("x-ratelimit-remaining"), Some((59 - i).to_string().as_str()));
        } else {
            reply.assert_error(429, "rate_limited");
        }
    }
    // Not even a right guess gets through now: the address learns nothing until its
    // window resets, and then the valid key works again.
    let reply = h.get("/v1/pets").await;
    reply.assert_error(429, "rate_limited");
    assert_eq!(reply.header("x-ratelimit-limit"), Some("60"), "the address's limit");
    h.clock.advance(Duration::from_secs(60));
    assert_eq!(h.get("/v1/pets").await.status, StatusCode::OK);
}

#[tokio::test]
async fn the_document_declares_429_and_the_rate_limit_headers_everywhere() {
    let h = Harness::new().await;
    let doc = h.send(Method::GET, "/v1/openapi.json", None, None).await.body;
    for (path, method) in [("/pets", "get"), ("/pets", "post"), ("/pets/{petId}", "get")] {
        let responses = doc["paths"][path][method]["responses"].as_object().expect("responses");
        assert!(responses["429"]["headers"]["Retry-After"].is_object(), "{method} {path}");
        for (status, response) in responses {
            for header in [
                "X-RateLimit-Limit",
                "X-RateLimit-Remaining",
                "X-RateLimit-Reset",
                "RateLimit-Policy",
                "RateLimit",
            ] {
                assert!(
                    response["headers"][header].is_object(),
                    "{method} {path} {status} {header}"
                );
            }
        }
    }
}
