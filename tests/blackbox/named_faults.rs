//! The faults a harness provokes by name on `memory://` beyond failures and latency: a 500, a
//! key that cannot be checked, a write stored and then answered 503 or answered late, and a
//! webhook receiver that does not answer in time; each as a client sees it.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::conditional::remaining;
use crate::harness::{Client, Server, TestClock, json};
use crate::harness_contract::fixtures_file;
use crate::webhooks::{add_pet, first_attempt, register};

/// A memory server with `options`, and a client of its `demo` key.
fn memory(options: &str, dir: &tempfile::TempDir, extra: &[&str]) -> (Server, Client) {
    let server = Server::start(&format!("memory://?{options}"), dir.path().to_path_buf(), extra);
    let client = Client::new(server.ready["keys"]["demo"].as_str().expect("a key"));
    (server, client)
}

#[tokio::test]
async fn internal_error_every_answers_a_500_with_its_request_id() {
    let dir = tempfile::tempdir().expect("a directory");
    let (server, client) = memory("internal-error-every=2", &dir, &[]);
    let mut statuses = Vec::new();
    for _ in 0..4 {
        let resp = client.get(&server.url("/v1/pets")).await;
        statuses.push(resp.status().as_u16());
        if resp.status() == 500 {
            assert!(!resp.headers()["x-request-id"].is_empty());
            let body = json(resp).await;
            assert_eq!(
                (body["code"].as_str(), body["status"].as_u64()),
                (Some("internal_error"), Some(500))
            );
        }
    }
    assert_eq!(statuses, [200, 500, 200, 500]);
    let resp = client.post(&server.url("/v1/pets"), r#"{"name":"Tom","categoryId":3}"#).await;
    assert_eq!(resp.status(), 201, "the 5th counts and passes");
    let resp = client.post(&server.url("/v1/pets"), r#"{"name":"Kit","categoryId":3}"#).await;
    assert_eq!(resp.status(), 500, "the 6th fails, and stores nothing");
    let names: Vec<_> = json(client.get(&server.url("/v1/pets")).await)
        .await
        .as_array()
        .expect("pets")
        .iter()
        .map(|pet| pet["name"].clone())
        .collect();
    assert_eq!(names, [json!("Tom")]);
}

#[tokio::test]
async fn key_store_unavailable_every_is_a_503_that_spends_nothing() {
    let dir = tempfile::tempdir().expect("a directory");
    let (server, client) = memory("key-store-unavailable-every=2", &dir, &[]);
    let first = client.get(&server.url("/v1/rate_limit")).await;
    assert_eq!(first.status(), 200);
    let unchecked = client.get(&server.url("/v1/pets")).await;
    assert_eq!(unchecked.status(), 503);
    assert_eq!(unchecked.headers()["retry-after"], "1");
    assert_eq!(json(unchecked).await["code"], "service_unavailable");
    let third = client.get(&server.url("/v1/webhook_endpoints")).await;
    assert_eq!(third.status(), 200);
    assert_eq!(remaining(&third, "day"), remaining(&first, "day") - 1, "the 503 spent nothing");
    assert_eq!(client.get(&server.url("/v1/store/orders")).await.status(), 503);
    let anonymous = reqwest::get(server.url("/v1/pets")).await.expect("an answer");
    assert_eq!(anonymous.status(), 401, "a request without a key is not counted");
    assert_eq!(client.get(&server.url("/v1/events")).await.status(), 200);
}

#[tokio::test]
async fn stored_then_unavailable_stores_the_write_and_answers_503() {
    let dir = tempfile::tempdir().expect("a directory");
    let (server, client) = memory("stored-then-unavailable-every=1", &dir, &[]);
    let url = server.url("/v1/pets");
    let body = r#"{"name":"Tom","categoryId":3}"#;
    let lost = client.post_keyed(&url, body, "ack-1").await;
    assert_eq!(lost.status(), 503);
    assert_eq!(lost.headers()["retry-after"], "1");
    assert!(lost.headers().get("location").is_none());
    assert_eq!(json(lost).await["code"], "service_unavailable");
    let retry = client.post_keyed(&url, body, "ack-1").await;
    assert_eq!(retry.status(), 201, "the retry replays the stored answer");
    assert_eq!(retry.headers()["idempotent-replayed"], "true");
    let pet = json(retry).await;
    assert_eq!(json(client.get(&url).await).await, json!([pet]), "stored once");

    let patch = client.raw().patch(server.url(&format!("/v1/pets/{}", pet["id"])));
    let patch = patch.bearer_auth(client.key()).header("content-type", "application/json");
    let changed = patch.body(r#"{"name":"Tim"}"#).send().await.expect("an answer");
    assert_eq!(changed.status(), 503, "updatePet counts too");
    assert_eq!(json(client.get(&url).await).await[0]["name"], "Tim", "and was stored");
}

#[tokio::test]
async fn latency_after_store_stores_a_write_its_client_gave_up_on() {
    let dir = tempfile::tempdir().expect("a directory");
    let (server, client) = memory("latency-after-store-ms=600", &dir, &[]);
    let url = server.url("/v1/pets");
    let body = r#"{"name":"Tom","categoryId":3}"#;
    let request = client.raw().post(&url).bearer_auth(client.key());
    let request =
        request.header("content-type", "application/json").header("idempotency-key", "slow-1");
    let began = Instant::now();
    let gave_up = request.body(body).timeout(Duration::from_millis(200)).send().await;
    assert!(gave_up.is_err_and(|err| err.is_timeout()), "the answer comes after 600 ms");
    assert!(began.elapsed() < Duration::from_millis(600));
    let pets = json(client.get(&url).await).await;
    assert_eq!(pets.as_array().map(Vec::len), Some(1), "stored before the wait: {pets}");
    let began = Instant::now();
    let retry = client.post_keyed(&url, body, "slow-1").await;
    assert_eq!(retry.status(), 201);
    assert_eq!(retry.headers()["idempotent-replayed"], "true", "a replay is not a write");
    assert!(began.elapsed() < Duration::from_millis(600), "and is not held back");
    assert_eq!(json(retry).await, pets[0]);
}

#[tokio::test]
async fn a_receiver_that_does_not_answer_times_out_at_the_webhook_timeout() {
    let dir = tempfile::tempdir().expect("a directory");
    // Accepts connections and never answers.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a listener");
    let address = silent.local_addr().expect("an address");
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            open.push(socket);
        }
    });
    let flags = ["--webhooks-allow-private", "--webhook-timeout", "300ms"];
    let (server, client) = memory("", &dir, &flags);
    let endpoint = json!({"url": format!("http://{address}/hook"), "events": ["pet.created"]});
    let endpoint = json(register(&client, &server, &endpoint).await).await;
    let began = Instant::now();
    add_pet(&client, &server, "Rex").await;
    let attempt = first_attempt(&client, &server, &endpoint).await;
    assert_eq!(attempt["outcome"], "timeout", "{attempt}");
    assert!(began.elapsed() < Duration::from_secs(5), "not the 10 s default");
    held.abort();
}

#[tokio::test]
async fn fixture_keys_expire_and_are_revoked_on_the_clock_files_time() {
    let dir = tempfile::tempdir().expect("a directory");
    let start = 1_900_000_000_u64;
    let clock = TestClock::at(dir.path(), start);
    let fixtures = fixtures_file(
        &dir,
        &json!({"keys": [
            {"name": "leaving", "plan": "free", "expiresAt": start + 60},
            {"name": "fired", "plan": "pro", "revokedAt": start + 30},
            {"name": "gone", "plan": "pro", "revokedAt": start - 1},
        ]})
        .to_string(),
    );
    let mut flags = vec!["--fixtures", fixtures.as_str()];
    flags.extend(clock.flag());
    let server = Server::start("memory://", dir.path().to_path_buf(), &flags);
    let key = |name: &str| Client::new(server.ready["keys"][name].as_str().expect("a key"));
    let (leaving, fired, gone) = (key("leaving"), key("fired"), key("gone"));
    let url = server.url("/v1/pets");
    let status = async |client: &Client| client.get(&url).await.status().as_u16();
    assert_eq!(
        (status(&leaving).await, status(&fired).await, status(&gone).await),
        (200, 200, 401)
    );
    clock.set(start + 30);
    assert_eq!((status(&leaving).await, status(&fired).await), (200, 401), "revoked at +30 s");
    clock.set(start + 60);
    assert_eq!(status(&leaving).await, 401, "expired at +60 s");
}

#[tokio::test]
async fn events_past_their_retention_go_within_a_second_on_memory() {
    let dir = tempfile::tempdir().expect("a directory");
    let start = 1_900_000_000_u64;
    let clock = TestClock::at(dir.path(), start);
    let mut flags = vec!["--event-retention", "1h"];
    flags.extend(clock.flag());
    let (server, client) = memory("", &dir, &flags);
    add_pet(&client, &server, "Rex").await;
    let events = json(client.get(&server.url("/v1/events")).await).await;
    let id = events[0]["id"].clone();
    assert_eq!(events.as_array().map(Vec::len), Some(1), "{events}");
    clock.set(start + 3_601);
    let mut left = events;
    for _ in 0..60 {
        left = json(client.get(&server.url("/v1/events")).await).await;
        if left.as_array().is_some_and(Vec::is_empty) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(left, json!([]), "removed by the retention");
    let gone = client.get(&server.url(&format!("/v1/events/{id}"))).await;
    assert_eq!(gone.status(), 404);
}
