//! The test kit, used as an integration tester would: in process with a moved clock, over a
//! real socket, and with a store that fails on purpose.

use std::sync::Arc;
use std::time::Duration;

use animal_store::testkit::TestKit;
use animal_store_domain::{PetRepository, Plan, Quota};
use animal_store_infra::faults::{
    Faults, FaultyIdempotencyStore, FaultyOrderRepository, FaultyPetRepository, Injector,
};
use animal_store_infra::{MemoryIdempotencyStore, MemoryOrderRepository, MemoryPetRepository};
use poem::http::StatusCode;

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

/// A pet adapter given alone gets every pet write, keyed createPet included, whose retry is
/// replayed; orders, which it cannot hold, are refused with a 500 rather than kept beside
/// pets the test never sees.
#[tokio::test]
async fn a_pet_adapter_given_alone_gets_every_pet_write() {
    let pets = Arc::new(MemoryPetRepository::new());
    let app = TestKit::new().with_pets(pets.clone()).build();
    let key = app.issue_key(Plan::Pro).await;
    let client = app.client();
    keyed_pet(&client, &key, "kit-1").await.assert_status(StatusCode::CREATED);
    let again = keyed_pet(&client, &key, "kit-1").await;
    again.assert_status(StatusCode::CREATED);
    again.assert_header("idempotent-replayed", "true");
    let stored = pets.list(None, None, 10).await.expect("list");
    assert_eq!(stored.len(), 1, "the adapter holds the keyed pet, once: {stored:?}");

    let order = client
        .post("/v1/store/orders")
        .header("Authorization", format!("Bearer {key}"))
        .content_type("application/json")
        .body(r#"{"petId":1}"#)
        .send()
        .await;
    order.assert_status(StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(pets.list(None, None, 10).await.expect("list")[0].status.as_str(), "available");
}

/// Every port has its failing wrapper: keyed createPet and orders fail as a client would see
/// a lost database, 503 with `Retry-After`.
#[tokio::test]
async fn keyed_writes_and_orders_fail_through_their_wrappers() {
    let injector = Injector::new(Faults { fail_every: Some(1), ..Faults::default() });
    let pets = Arc::new(MemoryPetRepository::new());
    let orders = Arc::new(MemoryOrderRepository::new(pets.clone()));
    let records = Arc::new(MemoryIdempotencyStore::new(pets.clone(), orders.clone()));
    let app = TestKit::new()
        .with_pets(pets)
        .with_orders(Arc::new(FaultyOrderRepository::new(orders, injector.clone())))
        .with_idempotency(Arc::new(FaultyIdempotencyStore::new(records, injector)))
        .build();
    let key = app.issue_key(Plan::Pro).await;
    let client = app.client();
    let keyed = keyed_pet(&client, &key, "kit-2").await;
    keyed.assert_status(StatusCode::SERVICE_UNAVAILABLE);
    keyed.assert_header("retry-after", "1");
    let orders = client.get("/v1/store/orders").header("Authorization", format!("Bearer {key}"));
    orders.send().await.assert_status(StatusCode::SERVICE_UNAVAILABLE);
}

/// A keyed createPet of Rex.
async fn keyed_pet<E: poem::Endpoint>(
    client: &poem::test::TestClient<E>,
    key: &str,
    idempotency_key: &str,
) -> poem::test::TestResponse {
    client
        .post("/v1/pets")
        .header("Authorization", format!("Bearer {key}"))
        .header("Idempotency-Key", idempotency_key)
        .content_type("application/json")
        .body(r#"{"name":"Rex","categoryId":1}"#)
        .send()
        .await
}
