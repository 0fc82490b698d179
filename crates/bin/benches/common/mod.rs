//! The requests the in-process benchmarks send.

use animal_store::testkit::TestKit;
use animal_store_domain::{Plan, Quota};
use poem::endpoint::BoxEndpoint;
use poem::http::Method;
use poem::{Endpoint, Request, Response};

/// `GET path` with `key`.
pub fn get(path: &str, key: &str) -> Request {
    Request::builder()
        .method(Method::GET)
        .uri(path.parse().expect("a path"))
        .header("Authorization", format!("Bearer {key}"))
        .finish()
}

/// `createPet` of one pet with `key`, under `idempotency_key` if given.
pub fn post(key: &str, idempotency_key: Option<String>) -> Request {
    let mut request = Request::builder()
        .method(Method::POST)
        .uri("/v1/pets".parse().expect("a path"))
        .header("Authorization", format!("Bearer {key}"))
        .content_type("application/json");
    if let Some(idempotency_key) = idempotency_key {
        request = request.header("Idempotency-Key", idempotency_key);
    }
    request.body(r#"{"name":"Rex","categoryId":1}"#)
}

/// The app on `kit`, with 2,000 pets, and an enterprise key whose quota never binds.
pub async fn seeded(kit: TestKit) -> (BoxEndpoint<'static, Response>, String) {
    let app = kit.build();
    let quota = Quota::new(u32::MAX, u32::MAX).expect("a quota");
    let plan = Plan::new("enterprise", Some(quota.per_minute.get()), Some(quota.per_day.get()))
        .expect("a plan");
    let key = app.issue_key(plan).await;
    let endpoint = animal_store_api::app(app.state().clone());
    for n in 0..2_000 {
        let created = endpoint.get_response(post(&key, None)).await;
        assert_eq!(created.status(), 201, "seed pet {n}");
    }
    (endpoint, key)
}
