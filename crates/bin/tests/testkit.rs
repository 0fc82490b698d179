//! The test kit, used as an integration tester would: in process with a moved clock, over a
//! real socket, and with a store that fails on purpose.

use std::sync::Arc;
use std::time::Duration;

use animal_store::testkit::TestKit;
use animal_store_domain::{Plan, Quota};
use animal_store_infra::MemoryPetRepository;
use animal_store_infra::faults::{Faults, FaultyPetRepository, Injector};

#[tokio::test]
async fn a_days_quota_is_crossed_by_moving_the_clock() {
    let app = TestKit::new().build();
    let quota = Quota::new(100, 3).expect("a quota");
    let plan = Plan::new("enterprise", Some(quota.per_minute.get()), Some(quota.per_day.get()))
        .expect("a plan");
    let key = app.issue_key(plan).await;
    let client = app.client();
    let get = || client.get("/v1/pets").header("Authorization", format!("Bearer {key}")).send();
    for _ in 0..3 {
        get().await.assert_status_is_ok();
    }
    get().await.assert_status(poem::http::StatusCode::TOO_MANY_REQUESTS);
    app.clock().advance(Duration::from_secs(86_400));
    get().await.assert_status_is_ok();
}

#[tokio::test]
async fn the_app_serves_on_loopback_and_stops() {
    let app = TestKit::new().build();
    let key = app.issue_key(Plan::Free).await;
    let server = app.listen().await;
    let resp = reqwest::Client::new()
        .post(format!("{}/v1/pets", server.base))
        .bearer_auth(&key)
        .header("content-type", "application/json")
        .body(r#"{"name":"Rex","categoryId":1}"#)
        .send()
        .await
        .expect("an answer");
    assert_eq!(resp.status(), 201);
    let stored = app.state().pets.get(animal_store_domain::PetId::new(1)).await.expect("get");
    assert_eq!(stored.name.as_str(), "Rex", "the pet is in the kit's store");
    let base = server.base.clone();
    server.stop().await;
    assert!(reqwest::get(format!("{base}/v1/pets")).await.is_err(), "a stopped app refuses");
}

#[tokio::test]
async fn a_failing_store_is_answered_503_with_retry_after() {
    let injector = Injector::new(Faults { fail_every: Some(1), ..Faults::default() });
    let pets = FaultyPetRepository::new(Arc::new(MemoryPetRepository::new()), injector);
    let app = TestKit::new().with_pets(Arc::new(pets)).build();
    let key = app.issue_key(Plan::Free).await;
    let resp =
        app.client().get("/v1/pets").header("Authorization", format!("Bearer {key}")).send().await;
    resp.assert_status(poem::http::StatusCode::SERVICE_UNAVAILABLE);
    resp.assert_header("retry-after", "1");
    resp.assert_json(serde_json::json!({
        "code": "service_unavailable",
        "message": "the store is temporarily unavailable; retry later",
        "status": 503
    }))
    .await;
}
