//! Conditional requests through the real binary: the reads carry an `ETag` of their exact
//! body, a request that names it gets `304 Not Modified` without a body and with the
//! rate-limit headers, and a 304 spends nothing of the key's day (it counts in its minute);
//! on a write, `If-None-Match` is a precondition, 412 for an animal that exists.

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

/// `If-None-Match` on a write is a precondition (RFC 9110 §13.1.2): `*`, or the animal's
/// own tag, is 412 whenever it exists and changes nothing; another tag lets the write go.
/// A body of any `+json` type but a merge patch and `application/json` (a JSON Patch, say)
/// is 415 with `Accept-Patch`.
#[tokio::test]
async fn if_none_match_on_a_write_of_an_existing_animal_is_412() {
    let dir = tempfile::tempdir().expect("a directory");
    let server = Server::start("memory://", dir.path().to_path_buf(), &[]);
    let client = Client::new(server.ready["keys"]["demo"].as_str().expect("a key"));
    let created = client.post(&server.url("/v1/pets"), r#"{"name":"Tom","categoryId":3}"#).await;
    let tag = created.headers()["etag"].to_str().expect("text").to_owned();
    let url = server.url(&format!("/v1/pets/{}", json(created).await["id"]));
    let write = |method: reqwest::Method, condition: &str, content_type: &str| {
        client
            .raw()
            .request(method, &url)
            .bearer_auth(client.key())
            .header("if-none-match", condition)
            .header("content-type", content_type)
            .body(r#"{"name":"Tim"}"#)
            .send()
    };
    for condition in ["*", tag.as_str(), &format!("W/{tag}")] {
        for method in [reqwest::Method::PATCH, reqwest::Method::DELETE] {
            let refused = write(method.clone(), condition, "application/merge-patch+json");
            let refused = refused.await.expect("a response");
            assert_eq!(refused.status(), 412, "{method} If-None-Match: {condition}");
            let body = json(refused).await;
            assert_eq!(body["code"], "precondition_failed", "{body}");
        }
    }
    assert_eq!(json(get(&client, &url, None).await).await["name"], "Tom", "nothing changed");
    let other = write(reqwest::Method::PATCH, "\"other\"", "application/json").await;
    assert_eq!(json(other.expect("a response")).await["name"], "Tim");

    for content_type in ["application/json-patch+json", "application/problem+json", "text/plain"] {
        let refused = write(reqwest::Method::PATCH, "\"other\"", content_type).await;
        let refused = refused.expect("a response");
        assert_eq!(refused.status(), 415, "{content_type}");
        let accepted = refused.headers()["accept-patch"].to_str().expect("text").to_owned();
        assert!(accepted.contains("application/merge-patch+json"), "{accepted}");
        assert_eq!(json(refused).await["code"], "unsupported_media_type");
    }
    let gone = write(reqwest::Method::DELETE, "*", "application/json").await;
    assert_eq!(gone.expect("a response").status(), 412);
}
