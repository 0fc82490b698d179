//! `GET /v1/rate_limit` through the real binary: the caller's plan and windows, the same
//! numbers as the headers, no quota spent, its own limit of 60 a minute, and an answer even
//! while the key is suspended.

use serde_json::Value;

use crate::harness::{Client, Db, json};

/// A UTC minute's first second, so that a test's requests share one minute.
const START: u64 = 1_900_000_020;

fn header(resp: &reqwest::Response, name: &str) -> u64 {
    resp.headers()[name].to_str().expect("text").parse().expect("a number")
}

async fn inquire(client: &Client, url: &str) -> (u64, Value) {
    let resp = client.get(url).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["api-stability"], "beta");
    let remaining = header(&resp, "x-ratelimit-remaining");
    (remaining, json(resp).await)
}

#[tokio::test]
async fn the_rate_limit_shows_both_windows_and_spends_nothing() {
    let db = Db::sqlite();
    let client = Client::new(&db.key("free"));
    let (server, _clock) = db.start_at(START);
    let (pets, inquiry) = (server.url("/v1/pets"), server.url("/v1/rate_limit"));
    for _ in 0..5 {
        assert_eq!(client.get(&pets).await.status(), 200);
    }

    let (remaining, body) = inquire(&client, &inquiry).await;
    assert_eq!(body["plan"], "free");
    assert_eq!(
        (body["minute"]["limit"].as_u64(), body["minute"]["remaining"].as_u64()),
        (Some(60), Some(55))
    );
    assert_eq!(body["minute"]["reset"].as_u64(), Some(START + 60));
    assert_eq!(
        (body["day"]["limit"].as_u64(), body["day"]["remaining"].as_u64()),
        (Some(1000), Some(995))
    );
    assert!(body.get("suspendedUntil").is_none(), "{body}");
    assert_eq!(remaining, 55, "the headers show the same numbers");
    for _ in 0..59 {
        assert_eq!(inquire(&client, &inquiry).await.1, body, "asking spends nothing");
    }

    // Its own limit: 60 a minute; the 61st is refused.
    let refused = client.get(&inquiry).await;
    assert_eq!(refused.status(), 429);
    assert_eq!(json(refused).await["code"], "rate_limited");
    let listed = client.get(&pets).await;
    assert_eq!(listed.status(), 200, "the key's quota is untouched");
    assert_eq!(header(&listed, "x-ratelimit-remaining"), 54);
}

#[tokio::test]
async fn a_suspended_key_can_still_see_when_its_suspension_ends() {
    let db = Db::sqlite();
    let client = Client::new(&db.key("free"));
    let (server, _clock) = db.start_at(START);
    let pets = server.url("/v1/pets");
    for _ in 0..60 {
        assert_eq!(client.get(&pets).await.status(), 200);
    }
    for _ in 0..31 {
        assert_eq!(client.get(&pets).await.status(), 429);
    }
    let suspended = client.get(&pets).await;
    assert_eq!(json(suspended).await["code"], "api_key_suspended");

    let (remaining, body) = inquire(&client, &server.url("/v1/rate_limit")).await;
    assert_eq!(remaining, 0);
    assert_eq!(body["suspendedUntil"].as_u64(), Some(START + 900), "{body}");
    assert_eq!(body["minute"]["remaining"].as_u64(), Some(0));
}
