//! The four things an integration tester does with Animal Store, from outside its workspace.

use std::sync::Arc;
use std::time::Duration;

use animal_store::testkit::TestKit;
use animal_store_domain::{Plan, Quota};
use animal_store_infra::conformance;
use animal_store_infra::faults::{Faults, FaultyPetRepository, Injector};
use outside_tester::VecPetRepository;
use poem::http::StatusCode;

/// The whole API in process; a minute's quota crossed by moving the clock, no sleeping.
#[tokio::test]
async fn in_process_with_a_moved_clock() {
    let app = TestKit::new().build();
    let quota = Quota::new(2, 100).expect("a quota");
    let plan = Plan::new("enterprise", Some(quota.per_minute.get()), Some(quota.per_day.get()))
        .expect("a plan");
    let key = app.issue_key(plan).await;
    let client = app.client();
    let get = || client.get("/v1/pets").header("Authorization", format!("Bearer {key}")).send();
    get().await.assert_status_is_ok();
    get().await.assert_status_is_ok();
    get().await.assert_status(StatusCode::TOO_MANY_REQUESTS);
    app.clock().advance(Duration::from_secs(60));
    get().await.assert_status_is_ok();
}

/// The user's adapter passes the port's conformance suite.
#[tokio::test]
async fn my_adapter_passes_the_conformance_suite() {
    conformance::pet_repository(&VecPetRepository::default()).await;
}

/// The user's adapter, failing, as a client sees it: 503 with `Retry-After`, then 201 again.
#[tokio::test]
async fn my_adapters_failures_as_a_client_sees_them() {
    let injector = Injector::new(Faults { fail_every: Some(2), ..Faults::default() });
    let pets = FaultyPetRepository::new(Arc::new(VecPetRepository::default()), injector);
    let app = TestKit::new().with_pets(Arc::new(pets)).build();
    let key = app.issue_key(Plan::Pro).await;
    let client = app.client();
    let post = || {
        client
            .post("/v1/pets")
            .header("Authorization", format!("Bearer {key}"))
            .content_type("application/json")
            .body(r#"{"name":"Rex","categoryId":1}"#)
            .send()
    };
    post().await.assert_status(StatusCode::CREATED);
    let failed = post().await;
    failed.assert_status(StatusCode::SERVICE_UNAVAILABLE);
    failed.assert_header("retry-after", "1");
    post().await.assert_status(StatusCode::CREATED);
}

/// The binary, driven through its ready file and fixtures as from any language: the one
/// `ANIMAL_STORE_BIN` names (`cargo xtask ci` names the workspace's). Without it the test
/// fails: a suite that cannot reach its binary has tested nothing.
#[tokio::test]
async fn the_binary_through_the_ready_file_and_fixtures() {
    let bin = std::env::var("ANIMAL_STORE_BIN")
        .expect("ANIMAL_STORE_BIN must name an animal-store binary (cargo build -p animal-store)");
    let dir = tempfile::tempdir().expect("a directory");
    let fixtures = dir.path().join("fixtures.json");
    std::fs::write(
        &fixtures,
        r#"{"keys":[{"name":"me","plan":"free"}],"pets":[{"name":"Rex","categoryId":1}]}"#,
    )
    .expect("write the fixtures");
    let ready = dir.path().join("ready.json");
    let mut server = std::process::Command::new(bin)
        .args(["serve", "--bind", "127.0.0.1:0", "--fixtures"])
        .arg(&fixtures)
        .arg("--ready-file")
        .arg(&ready)
        .env("DATABASE_URL", "memory://")
        .env("RUST_LOG", "warn")
        .spawn()
        .expect("the server starts");
    let mut text = None;
    for _ in 0..300 {
        if let Ok(found) = std::fs::read_to_string(&ready) {
            text = Some(found);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let ready: serde_json::Value =
        serde_json::from_str(&text.expect("ready within 30 s")).expect("JSON");
    let address = ready["address"].as_str().expect("an address");
    let key = ready["keys"]["me"].as_str().expect("the fixtures' key");
    let answer =
        reqwest::Client::new().get(format!("{address}/v1/pets")).bearer_auth(key).send().await;
    server.kill().expect("stop the server");
    let _ = server.wait();
    let pets: serde_json::Value = answer.expect("an answer").json().await.expect("a JSON body");
    assert_eq!(pets[0]["name"], "Rex", "the fixtures' pet is there");
}
