//! The clock file is the one clock a harness moves: `Date`, the rate-limit fields, events and
//! the webhook retries follow it; `webhook-timestamp` alone is the wall clock's at signing,
//! since receivers check it against theirs.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::json;

use crate::harness::{Client, Server, TestClock, json};
use crate::webhooks::{Receiver, TEST_FLAGS, add_pet, attempts, register};

/// 2030-03-17T17:46:40Z.
const START: u64 = 1_900_000_000;

#[tokio::test]
async fn everything_the_service_shows_follows_the_clock_file_but_the_signature_time() {
    let dir = tempfile::tempdir().expect("a directory");
    let clock = TestClock::at(dir.path(), START);
    let mut flags = TEST_FLAGS.to_vec();
    flags.extend(clock.flag());
    let server = Server::start("memory://", dir.path().to_path_buf(), &flags);
    let client = Client::new(server.ready["keys"]["demo"].as_str().expect("a key"));

    let resp = client.get(&server.url("/v1/pets")).await;
    assert_eq!(resp.headers()["date"], "Sun, 17 Mar 2030 17:46:40 GMT");
    let unknown = reqwest::get(server.url("/v1/nowhere")).await.expect("an answer");
    assert_eq!(unknown.headers()["date"], "Sun, 17 Mar 2030 17:46:40 GMT", "on every answer");

    let receiver = Receiver::start(vec![500]).await;
    let body = json!({"url": receiver.url, "events": ["pet.created"]});
    let endpoint = json(register(&client, &server, &body).await).await;
    add_pet(&client, &server, "Rex").await;
    let first = receiver.wait_for(1).await;
    let wall = SystemTime::now().duration_since(UNIX_EPOCH).expect("after 1970").as_secs();
    let signed: u64 = first[0].timestamp.parse().expect("Unix seconds");
    assert!(signed.abs_diff(wall) < 60, "signed at the wall clock's {wall}, not {signed}");
    let events = json(client.get(&server.url("/v1/events")).await).await;
    assert_eq!(events[0]["createdAt"], "2030-03-17T17:46:40Z", "events follow the file");

    // The retry comes due by the file's time: not while it stands still.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(receiver.received().len(), 1, "no retry while the clock stands still");
    let listed = attempts(&client, &server, &endpoint, 1).await;
    assert_eq!(listed[0]["outcome"], "http_error");
    clock.set(START + 10);
    receiver.wait_for(2).await;
    let listed = attempts(&client, &server, &endpoint, 2).await;
    assert_eq!(listed[0]["outcome"], "delivered", "{listed:?}");
    assert_eq!(listed[0]["attemptedAt"], "2030-03-17T17:46:50Z", "{listed:?}");
}
