//! Plans and rate limits over real HTTP, with the server's clock in a file so that no test
//! waits for a window to pass.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::harness::{Client, Db, Server, TestClock, json};
use crate::relay::{Relay, postgres_address};

/// 2026-11-22T00:00:05Z: five seconds into a minute and a UTC day.
const T0: u64 = 1_795_305_605;

fn header(resp: &reqwest::Response, name: &str) -> String {
    resp.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_free_key_gets_exactly_60_a_minute_then_429() {
    let db = Db::sqlite();
    let key = db.key("free");
    let (server, clock) = db.start_at(T0);
    let client = Client::new(&key);
    for remaining in (0..60).rev() {
        let resp = client.get(&server.url("/v1/pets")).await;
        assert_eq!(resp.status(), 200);
        assert_eq!(header(&resp, "x-ratelimit-limit"), "60");
        assert_eq!(header(&resp, "x-ratelimit-remaining"), remaining.to_string());
        assert_eq!(header(&resp, "x-ratelimit-reset"), (T0 + 55).to_string());
    }
    let resp = client.get(&server.url("/v1/pets")).await;
    assert_eq!(resp.status(), 429);
    assert_eq!(header(&resp, "retry-after"), "55");
    assert_eq!(header(&resp, "x-ratelimit-remaining"), "0");
    let body = json(resp).await;
    assert_eq!((body["code"].as_str(), body["status"].as_i64()), (Some("rate_limited"), Some(429)));

    clock.set(T0 + 55);
    let resp = client.get(&server.url("/v1/pets")).await;
    assert_eq!(resp.status(), 200, "a new minute");
    assert_eq!(header(&resp, "x-ratelimit-remaining"), "59");
}

#[tokio::test]
async fn two_hundred_concurrent_requests_on_32_connections_admit_exactly_60() {
    let db = Db::sqlite();
    let key = db.key("free");
    let (server, _clock) = db.start_at(T0);
    let url = server.url("/v1/pets");
    let tasks: Vec<_> = (0..32)
        .map(|connection| {
            let (key, url) = (key.clone(), url.clone());
            tokio::spawn(async move {
                // One client per task: 32 connections.
                let client =
                    reqwest::Client::builder().pool_max_idle_per_host(1).build().expect("a client");
                let requests = if connection < 8 { 7 } else { 6 };
                let mut statuses = Vec::new();
                for _ in 0..requests {
                    let resp = client.get(&url).bearer_auth(&key).send().await.expect("a response");
                    statuses.push(resp.status().as_u16());
                }
                statuses
            })
        })
        .collect();
    let mut statuses = Vec::new();
    for task in tasks {
        statuses.extend(task.await.expect("a task"));
    }
    assert_eq!(statuses.len(), 200);
    assert_eq!(statuses.iter().filter(|&&s| s == 200).count(), 60);
    assert_eq!(statuses.iter().filter(|&&s| s == 429).count(), 140);
}

#[tokio::test]
async fn an_enterprise_key_with_50_a_day_is_refused_at_the_51st() {
    let db = Db::sqlite();
    let out = db.run(&[
        "keys",
        "create",
        "--plan",
        "enterprise",
        "--per-minute",
        "1000",
        "--per-day",
        "50",
    ]);
    assert!(out.status.success());
    let key = String::from_utf8(out.stdout).expect("utf-8").trim().to_owned();
    let (server, clock) = db.start_at(T0);
    let client = Client::new(&key);
    for i in 0..50 {
        // Spread over several minutes: only the day can refuse.
        clock.set(T0 + i * 30);
        assert_eq!(client.get(&server.url("/v1/pets")).await.status(), 200, "request {}", i + 1);
    }
    let now = T0 + 50 * 30;
    clock.set(now);
    let resp = client.get(&server.url("/v1/pets")).await;
    assert_eq!(resp.status(), 429);
    let midnight = T0 - 5 + 86_400;
    assert_eq!(header(&resp, "retry-after"), (midnight - now).to_string(), "until UTC midnight");
    assert_eq!(header(&resp, "x-ratelimit-limit"), "50");
    assert_eq!(header(&resp, "x-ratelimit-reset"), midnight.to_string());
    clock.set(midnight);
    assert_eq!(client.get(&server.url("/v1/pets")).await.status(), 200, "a new UTC day");
}

#[tokio::test]
async fn calling_on_after_429_suspends_the_key_for_15_minutes() {
    let db = Db::sqlite();
    let key = db.key("free");
    let (server, clock) = db.start_at(T0);
    let client = Client::new(&key);
    for _ in 0..60 {
        assert_eq!(client.get(&server.url("/v1/pets")).await.status(), 200);
    }
    for _ in 0..31 {
        let resp = client.get(&server.url("/v1/pets")).await;
        assert_eq!(json(resp).await["code"], "rate_limited");
    }
    let resp = client.get(&server.url("/v1/pets")).await;
    assert_eq!(resp.status(), 429);
    assert_eq!(header(&resp, "retry-after"), "900");
    assert_eq!(header(&resp, "x-ratelimit-remaining"), "0");
    assert_eq!(json(resp).await["code"], "api_key_suspended");

    clock.set(T0 + 899);
    let resp = client.post(&server.url("/v1/pets"), r#"{"name":"Rex","categoryId":1}"#).await;
    assert_eq!(resp.status(), 429, "still suspended a second before the end");
    assert_eq!(header(&resp, "retry-after"), "1");
    clock.set(T0 + 900);
    assert_eq!(client.get(&server.url("/v1/pets")).await.status(), 200, "15 minutes later");
    let all = json(client.get(&server.url("/v1/pets")).await).await;
    assert_eq!(all, serde_json::json!([]), "the refused POST stored nothing");
}

#[tokio::test]
async fn seventy_made_up_keys_from_one_address_end_in_429() {
    let db = Db::sqlite();
    let (server, _clock) = db.start_at(T0);
    let mut statuses = Vec::new();
    for i in 0..70 {
        let client = Client::new(&format!("as_live_{i:012}_{}", "k".repeat(32)));
        let resp = client.get(&server.url("/v1/pets")).await;
        if resp.status() == 401 {
            assert_eq!(header(&resp, "x-ratelimit-limit"), "60", "401s carry the address's limit");
        }
        statuses.push(resp.status().as_u16());
    }
    assert!(statuses[..60].iter().all(|&s| s == 401));
    assert!(statuses[60..].iter().all(|&s| s == 429));
}

/// Sends one GET with `key` on each of as many connections at once, every request written
/// before any answer is read, and returns the statuses; `refused`, if given, is notified at
/// the first 429.
async fn burst(address: &str, keys: &[String], refused: Option<Arc<Notify>>) -> Vec<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let mut connections = Vec::new();
    for _ in keys {
        connections.push(tokio::net::TcpStream::connect(address).await.expect("connect"));
    }
    for (connection, key) in connections.iter_mut().zip(keys) {
        let request = format!(
            "GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\nConnection: close\r\n\r\n"
        );
        connection.write_all(request.as_bytes()).await.expect("send");
    }
    let answers: Vec<_> = connections
        .into_iter()
        .map(|mut connection| {
            let refused = refused.clone();
            tokio::spawn(async move {
                let mut answer = Vec::new();
                connection.read_to_end(&mut answer).await.expect("an answer");
                let status = String::from_utf8_lossy(&answer)
                    .split(' ')
                    .nth(1)
                    .unwrap_or_default()
                    .to_owned();
                if let (Some(refused), "429") = (refused, status.as_str()) {
                    refused.notify_one();
                }
                status
            })
        })
        .collect();
    let mut statuses = Vec::new();
    for answer in answers {
        statuses.push(answer.await.expect("a reader"));
    }
    statuses
}

/// A burst of 150 key guesses from one address, all sent at once to a server whose key
/// lookups take a while (its database answers 50 ms late); at its first 429, while the
/// lookups of its first 60 are still under way, 750 more with the six real keys among them:
/// no more than the address's 60 guesses are looked up, however many arrive together, and
/// every real key gets the same 429 as the wrong guesses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_guesses_cannot_outrun_the_count_of_its_address() {
    let Some(db) = Db::postgres().await else {
        return;
    };
    let real: Vec<String> = (0..6).map(|_| db.key("pro")).collect();
    let relay = Relay::late(postgres_address(&db.url), Duration::from_millis(50)).await;
    let clock = TestClock::at(db.path(), T0);
    let server =
        Server::start(&relay.postgres_url(&db.url), db.path().to_path_buf(), &clock.flag());
    let address = server.base.trim_start_matches("http://").to_owned();
    let guess = |i: usize| format!("as_live_{i:012}_{}", "x".repeat(32));

    let first: Vec<String> = (0..150).map(guess).collect();
    let then: Vec<String> = (150..900)
        .map(|i| if i % 125 == 0 { real[i / 125 - 2].clone() } else { guess(i) })
        .collect();
    let refused = Arc::new(Notify::new());
    let first = tokio::spawn({
        let (address, refused) = (address.clone(), Arc::clone(&refused));
        async move { burst(&address, &first, Some(refused)).await }
    });
    // A 429 says the address's 60 slots are taken; their lookups are still under way.
    tokio::time::timeout(Duration::from_secs(20), refused.notified())
        .await
        .expect("the first burst went past the address's limit");
    let statuses = burst(&address, &then, None).await;
    for (key, status) in then.iter().zip(&statuses) {
        let what = if real.contains(key) { "a real key" } else { "a guess" };
        assert_eq!(status, "429", "{what} past the address's limit gets 429");
    }
    // Of the first 150, the address's 60 were looked up: 401, or 503 for a lookup the slow
    // database did not answer in time; the other 90 never were.
    let statuses = first.await.expect("the first burst");
    let count = |wanted: &[&str]| statuses.iter().filter(|s| wanted.contains(&s.as_str())).count();
    assert_eq!((count(&["401", "503"]), count(&["429"])), (60, 90), "{statuses:?}");
}
