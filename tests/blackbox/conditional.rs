//! Conditional requests through the real binary: the reads carry an `ETag` of their exact
//! body, a request that names it gets `304 Not Modified` without a body and with the
//! rate-limit headers, and a 304 spends nothing of the key's day (it counts in its minute).

use crate::harness::{Client, Server, json};

const FIXTURES: &str = r#"{
  "keys": [{"name": "shop", "plan": "enterprise", "perMinute": 100, "perDay": 50}],
  "pets": [{"name": "Rex", "categoryId": 1}, {"name": "Mia", "categoryId": 2}],
  "orders": [{"key": "shop", "petId": 2, "status": "approved"}]
}"#;

/// The `RateLimit` header's remaining requests of `window` (`minute` or `day`).
pub fn remaining(resp: &reqwest::Response, window: &str) -> u64 {
    let value = resp.headers()["ratelimit"].to_str().expect("text").to_owned();
    value
        .split(", ")
        .find(|w| w.starts_with(&format!("\"{window}\"")))
        .and_then(|w| w.split(';').find_map(|p| p.strip_prefix("r=")))
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("no {window} in {value}"))
}

async fn get(client: &Client, url: &str, if_none_match: Option<&str>) -> reqwest::Response {
    let mut request = client.raw().get(url).bearer_auth(client.key());
    if let Some(tag) = if_none_match {
        request = request.header("if-none-match", tag);
    }
    request.send().await.expect("a response")
}

#[tokio::test]
async fn a_read_the_client_has_is_304_and_spends_nothing_of_the_day() {
    let dir = tempfile::tempdir().expect("a directory");
    let fixtures = dir.path().join("fixtures.json");
    std::fs::write(&fixtures, FIXTURES).expect("write the fixtures");
    let server = Server::start(
        "memory://",
        dir.path().to_path_buf(),
        &["--fixtures", fixtures.to_str().expect("UTF-8")],
    );
    let shop = Client::new(server.ready["keys"]["shop"].as_str().expect("a key"));
    for path in ["/v1/pets/1", "/v1/pets", "/v1/store/orders", "/v1/store/orders/1"] {
        let url = server.url(path);
        let first = get(&shop, &url, None).await;
        assert_eq!(first.status(), 200, "{path}");
        let tag = first.headers()["etag"].to_str().expect("text").to_owned();
        assert!(tag.starts_with('"') && tag.ends_with('"'), "{path}: a strong tag, {tag}");
        let (minute, day) = (remaining(&first, "minute"), remaining(&first, "day"));
        let body = first.bytes().await.expect("a body");

        let again = get(&shop, &url, Some(&tag)).await;
        assert_eq!(again.status(), 304, "{path}");
        assert_eq!(again.headers()["etag"], tag.as_str(), "{path}");
        assert!(again.headers().contains_key("x-ratelimit-limit"), "{path}: the limit headers");
        assert!(!again.headers().contains_key("content-type"), "{path}");
        assert_eq!((remaining(&again, "minute"), remaining(&again, "day")), (minute - 1, day));
        assert!(again.bytes().await.expect("a body").is_empty(), "{path}: no body");

        let weak = get(&shop, &url, Some(&format!("\"other\", W/{tag}"))).await;
        assert_eq!(weak.status(), 304, "{path}: a list, and the weak comparison");
        let other = get(&shop, &url, Some("\"other\"")).await;
        assert_eq!(other.status(), 200, "{path}");
        assert_eq!(other.bytes().await.expect("a body"), body, "{path}: the same body");
    }
    // The day's quota, as the key's own inquiry shows it: 4 paths, each read twice with a
    // 200 (the first and the one naming another tag), the 304s not counted.
    let limit = json(get(&shop, &server.url("/v1/rate_limit"), None).await).await;
    assert_eq!(limit["day"]["remaining"], 50 - 8, "{limit}");
}

#[tokio::test]
async fn a_changed_answer_has_a_new_tag() {
    let dir = tempfile::tempdir().expect("a directory");
    let server = Server::start("memory://", dir.path().to_path_buf(), &[]);
    let client = Client::new(server.ready["keys"]["demo"].as_str().expect("a key"));
    let url = server.url("/v1/pets");
    let empty = get(&client, &url, None).await;
    let tag = empty.headers()["etag"].to_str().expect("text").to_owned();
    let created = client.post(&url, r#"{"name":"Tom","categoryId":3}"#).await;
    assert_eq!(created.status(), 201);
    let animal_tag = created.headers()["etag"].to_str().expect("text").to_owned();
    assert_ne!(animal_tag, tag, "createPet's answer carries its animal's tag, not the page's");
    let changed = get(&client, &url, Some(&tag)).await;
    assert_eq!(changed.status(), 200);
    assert_ne!(changed.headers()["etag"], tag.as_str());
    let pets = json(changed).await;
    assert_eq!(pets[0]["name"], "Tom");
    let inquiry = get(&client, &server.url("/v1/rate_limit"), None).await;
    assert!(!inquiry.headers().contains_key("etag"), "the rate limit is never cached");
}
