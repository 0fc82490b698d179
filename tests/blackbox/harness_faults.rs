//! The faults a harness provokes on `memory://`: failures, latency, dropped answers and a
//! key still running, each as a client sees it.

use std::time::{Duration, Instant};

use crate::harness::{Client, Server, json};
use crate::harness_contract::{FIXTURES, fixtures_file};

/// `memory://?fail-every=2&latency-ms=20`: every second request that touches the animals
/// gets the 503 a lost database gives, and every one takes at least the latency. Fixtures
/// are loaded past the faults and do not count.
#[tokio::test]
async fn memory_fault_options_fail_like_the_real_thing() {
    let dir = tempfile::tempdir().expect("a directory");
    let fixtures = fixtures_file(&dir, FIXTURES);
    let server = Server::start(
        "memory://?fail-every=2&latency-ms=20",
        dir.path().to_path_buf(),
        &["--fixtures", &fixtures],
    );
    let client = Client::new(server.ready["keys"]["demo"].as_str().expect("a key"));
    let mut statuses = Vec::new();
    for _ in 0..4 {
        let began = Instant::now();
        let resp = client.get(&server.url("/v1/pets")).await;
        assert!(began.elapsed() >= Duration::from_millis(20), "the latency is added");
        let status = resp.status().as_u16();
        if status == 200 {
            assert_eq!(json(resp).await.as_array().map(Vec::len), Some(2), "the fixtures' pets");
        } else if status == 503 {
            assert_eq!(resp.headers()["retry-after"], "1");
            assert_eq!(json(resp).await["code"], "service_unavailable");
        }
        statuses.push(status);
    }
    assert_eq!(statuses, [200, 503, 200, 503]);
}

/// `fail-every=1`: every request that reads or writes the animals, the orders or the
/// idempotency records fails, keyed writes and orders included; the failed writes store
/// nothing.
#[tokio::test]
async fn memory_faults_reach_keyed_writes_and_orders() {
    let dir = tempfile::tempdir().expect("a directory");
    let fixtures = fixtures_file(&dir, FIXTURES);
    let server = Server::start(
        "memory://?fail-every=1",
        dir.path().to_path_buf(),
        &["--fixtures", &fixtures],
    );
    let client = Client::new(server.ready["keys"]["tester"].as_str().expect("a key"));
    let created =
        client.post_keyed(&server.url("/v1/pets"), r#"{"name":"Tom","categoryId":3}"#, "k-1").await;
    let placed = client.post_keyed(&server.url("/v1/store/orders"), r#"{"petId":2}"#, "k-2").await;
    let unkeyed = client.post(&server.url("/v1/store/orders"), r#"{"petId":2}"#).await;
    for (what, resp) in
        [("keyed createPet", created), ("keyed placeOrder", placed), ("placeOrder", unkeyed)]
    {
        assert_eq!(resp.status(), 503, "{what}");
        assert_eq!(resp.headers()["retry-after"], "1", "{what}");
        assert_eq!(json(resp).await["code"], "service_unavailable", "{what}");
    }
    // The tester key has spent its 3 a minute: another key lists.
    let reader = Client::new(server.ready["keys"]["reader"].as_str().expect("a key"));
    let orders = reader.get(&server.url("/v1/store/orders")).await;
    assert_eq!(orders.status(), 503, "listOrders");
}

/// `latency-ms=300` delays a keyed createPet too: the wait is inside the operation, once its
/// key is held.
#[tokio::test]
async fn memory_latency_reaches_keyed_writes() {
    let dir = tempfile::tempdir().expect("a directory");
    let server = Server::start("memory://?latency-ms=300", dir.path().to_path_buf(), &[]);
    let client = Client::new(server.ready["keys"]["demo"].as_str().expect("a key"));
    let began = Instant::now();
    let body = r#"{"name":"Tom","categoryId":3}"#;
    let created = client.post_keyed(&server.url("/v1/pets"), body, "slow-1").await;
    assert_eq!(created.status(), 201);
    assert!(began.elapsed() >= Duration::from_millis(300), "{:?}", began.elapsed());
}

/// `drop-answer-every=1`: a keyed createPet is stored and its connection closed without an
/// answer; the client's retry with the same key gets the stored answer, marked as a replay,
/// and the listing holds the pet once.
#[tokio::test]
async fn a_dropped_answer_is_replayed_to_the_retry() {
    let dir = tempfile::tempdir().expect("a directory");
    let server = Server::start("memory://?drop-answer-every=1", dir.path().to_path_buf(), &[]);
    let client = Client::new(server.ready["keys"]["demo"].as_str().expect("a key"));
    let url = server.url("/v1/pets");
    let body = r#"{"name":"Tom","categoryId":3}"#;
    let lost = client
        .raw()
        .post(&url)
        .bearer_auth(client.key())
        .header("content-type", "application/json")
        .header("idempotency-key", "lost-1")
        .body(body)
        .send()
        .await;
    assert!(lost.is_err(), "no answer: {lost:?}");
    let retry = client.post_keyed(&url, body, "lost-1").await;
    assert_eq!(retry.status(), 201);
    assert_eq!(retry.headers()["idempotent-replayed"], "true");
    let pet = json(retry).await;
    assert_eq!(pet["name"], "Tom");
    let pets = json(client.get(&url).await).await;
    let toms: Vec<_> =
        pets.as_array().expect("pets").iter().filter(|p| p["name"] == "Tom").collect();
    assert_eq!(toms, [&pet], "stored once, the pet the replay names");
}

/// With `latency-ms`, a second request with the key of one still running gets
/// `409 idempotency_in_progress`: the documented way to provoke it.
#[tokio::test]
async fn a_key_still_running_is_409_on_purpose() {
    let dir = tempfile::tempdir().expect("a directory");
    let server = Server::start("memory://?latency-ms=500", dir.path().to_path_buf(), &[]);
    let client = Client::new(server.ready["keys"]["demo"].as_str().expect("a key"));
    let url = server.url("/v1/pets");
    let body = r#"{"name":"Tom","categoryId":3}"#;
    let first = client.post_keyed(&url, body, "busy-1");
    let second = async {
        tokio::time::sleep(Duration::from_millis(150)).await;
        client.post_keyed(&url, body, "busy-1").await
    };
    let (first, second) = tokio::join!(first, second);
    assert_eq!(first.status(), 201);
    assert_eq!(second.status(), 409);
    assert_eq!(json(second).await["code"], "idempotency_in_progress");
}
