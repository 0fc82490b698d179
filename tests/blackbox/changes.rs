//! Changing and removing animals through the real binary: updatePet's merge patch and its
//! bad input, `If-Match` (a stale tag is 412 and changes nothing; two racing patches with
//! one tag give one 200 and one 412, on SQLite and across two instances on PostgreSQL),
//! the animals open orders hold, deletePet, and an inventory exact after every write.

use serde_json::{Value, json};

use crate::harness::{Client, Db, Server, json, list_all};

const MERGE_PATCH: &str = "application/merge-patch+json";

async fn patch(
    client: &Client,
    url: &str,
    content_type: &str,
    if_match: Option<&str>,
    body: &str,
) -> reqwest::Response {
    let mut request = client
        .raw()
        .patch(url)
        .bearer_auth(client.key())
        .header("content-type", content_type)
        .body(body.to_owned());
    if let Some(tag) = if_match {
        request = request.header("if-match", tag);
    }
    request.send().await.expect("a response")
}

async fn delete(client: &Client, url: &str, if_match: Option<&str>) -> reqwest::Response {
    let mut request = client.raw().delete(url).bearer_auth(client.key());
    if let Some(tag) = if_match {
        request = request.header("if-match", tag);
    }
    request.send().await.expect("a response")
}

fn etag(resp: &reqwest::Response) -> String {
    resp.headers()["etag"].to_str().expect("text").to_owned()
}

/// Adds an animal; returns its address and the `ETag` its 201 carried.
async fn add(client: &Client, server: &Server, name: &str) -> (String, String, Value) {
    let resp = client
        .post(&server.url("/v1/pets"), &json!({"name": name, "categoryId": 1}).to_string())
        .await;
    assert_eq!(resp.status(), 201);
    let tag = etag(&resp);
    let pet = json(resp).await;
    (server.url(&format!("/v1/pets/{}", pet["id"])), tag, pet)
}

/// An Error body with this code and status, and the rate-limit headers every answer has.
async fn error(resp: reqwest::Response, status: u16, code: &str) -> Value {
    assert_eq!(resp.status(), status);
    assert!(resp.headers().contains_key("x-ratelimit-remaining"), "{:?}", resp.headers());
    let body = json(resp).await;
    assert_eq!(
        (body["code"].as_str(), body["status"].as_u64()),
        (Some(code), Some(u64::from(status))),
        "{body}"
    );
    body
}

async fn inventory(client: &Client, server: &Server) -> Value {
    let resp = client.get(&server.url("/v1/store/inventory")).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["api-stability"], "experimental");
    json(resp).await
}

#[tokio::test]
async fn a_patch_changes_what_it_names_while_if_match_holds() {
    let db = Db::sqlite();
    let client = Client::new(&db.key("business"));
    let server = db.start();
    let (url, created_tag, created) = add(&client, &server, "Rex").await;
    let read = client.get(&url).await;
    assert_eq!(etag(&read), created_tag, "createPet's ETag is getPet's");

    let changed =
        patch(&client, &url, MERGE_PATCH, Some(&created_tag), r#"{"name":"Max","id":99}"#).await;
    assert_eq!(changed.status(), 200);
    assert_eq!(changed.headers()["api-stability"], "experimental");
    assert_eq!(changed.headers()["cache-control"], "no-store");
    let changed_tag = etag(&changed);
    let max = json(changed).await;
    assert_eq!(
        max,
        json!({"id": created["id"], "name": "Max", "categoryId": 1, "status": "available"})
    );
    let read = client.get(&url).await;
    assert_eq!(etag(&read), changed_tag, "updatePet's ETag is getPet's");
    assert_eq!(json(read).await, max);
    assert_ne!(changed_tag, created_tag);

    // A stale tag changes nothing; the current one, or `*`, does.
    let stale = patch(&client, &url, MERGE_PATCH, Some(&created_tag), r#"{"status":"sold"}"#);
    let body = error(stale.await, 412, "precondition_failed").await;
    assert!(body["message"].as_str().expect("text").contains("If-Match"), "{body}");
    assert_eq!(json(client.get(&url).await).await, max, "nothing changed");
    let list = format!("\"other\", W/{changed_tag}, {changed_tag}");
    let sold = patch(&client, &url, "application/json", Some(&list), r#"{"status":"sold"}"#).await;
    assert_eq!(sold.status(), 200, "the current tag in a list, sent as application/json");
    let weak = format!("W/{}", etag(&sold));
    let body = json(sold).await;
    assert_eq!(body["status"], "sold");
    let weak_only = patch(&client, &url, MERGE_PATCH, Some(&weak), r#"{"categoryId":4}"#).await;
    error(weak_only, 412, "precondition_failed").await;
    let any = patch(&client, &url, MERGE_PATCH, Some("*"), r#"{"categoryId":4}"#).await;
    assert_eq!(json(any).await["categoryId"], 4);
    let unchanged = patch(&client, &url, MERGE_PATCH, None, "{}").await;
    assert_eq!(unchanged.status(), 200);
    assert_eq!(
        json(unchanged).await,
        json!({"id": created["id"], "name": "Max", "categoryId": 4, "status": "sold"})
    );
}

#[tokio::test]
async fn bad_patches_get_the_error_body_and_change_nothing() {
    let db = Db::sqlite();
    let client = Client::new(&db.key("business"));
    let server = db.start();
    let (url, _, pet) = add(&client, &server, "Rex").await;
    let before = inventory(&client, &server).await;
    let cases: [(&str, &str, Option<&str>, u16, &str); 12] = [
        (MERGE_PATCH, "[1]", None, 400, "invalid_request"),
        (MERGE_PATCH, "\"Max\"", None, 400, "invalid_request"),
        (MERGE_PATCH, "{\"name\":", None, 400, "invalid_request"),
        (MERGE_PATCH, r#"{"name":null}"#, None, 400, "validation_failed"),
        (
            MERGE_PATCH,
            r#"{"name":7,"categoryId":"1","status":"lost"}"#,
            None,
            400,
            "validation_failed",
        ),
        (MERGE_PATCH, r#"{"name":" "}"#, None, 400, "validation_failed"),
        (
            MERGE_PATCH,
            &format!(r#"{{"name":"{}"}}"#, "x".repeat(101)),
            None,
            400,
            "validation_failed",
        ),
        (MERGE_PATCH, r#"{"categoryId":0}"#, None, 400, "validation_failed"),
        (MERGE_PATCH, r#"{"name":"Max"}"#, Some("Max"), 400, "invalid_request"),
        (MERGE_PATCH, r#"{"name":"Max"}"#, Some("*, \"a\""), 400, "invalid_request"),
        ("text/plain", r#"{"name":"Max"}"#, None, 415, "unsupported_media_type"),
        (
            MERGE_PATCH,
            &format!(r#"{{"name":"Max","pad":"{}"}}"#, "x".repeat(17 * 1024)),
            None,
            413,
            "payload_too_large",
        ),
    ];
    for (content_type, body, if_match, status, code) in cases {
        let resp = patch(&client, &url, content_type, if_match, body).await;
        let error = error(resp, status, code).await;
        assert!(!error["message"].as_str().unwrap_or_default().is_empty(), "{body}");
    }
    let plain = patch(&client, &url, "text/plain", None, "{}").await;
    assert_eq!(
        plain.headers()["accept-patch"],
        "application/merge-patch+json, application/json",
        "a 415 to a PATCH names the patch formats it takes (RFC 5789)"
    );
    error(plain, 415, "unsupported_media_type").await;
    let every =
        patch(&client, &url, MERGE_PATCH, None, r#"{"name":7,"categoryId":"1","status":"lost"}"#);
    let message = error(every.await, 400, "validation_failed").await["message"].clone();
    for field in ["name", "categoryId", "status"] {
        assert!(message.as_str().expect("text").contains(field), "{message}");
    }
    let abc = server.url("/v1/pets/abc");
    error(patch(&client, &abc, MERGE_PATCH, None, "{}").await, 400, "invalid_request").await;
    error(delete(&client, &abc, None).await, 400, "invalid_request").await;
    error(delete(&client, &url, Some("nope")).await, 400, "invalid_request").await;
    let missing = server.url("/v1/pets/999999");
    error(patch(&client, &missing, MERGE_PATCH, None, "{}").await, 404, "not_found").await;
    error(patch(&client, &missing, MERGE_PATCH, Some("*"), "{}").await, 404, "not_found").await;
    error(delete(&client, &missing, None).await, 404, "not_found").await;
    let anonymous = Client::new("as_live_not-a-key");
    error(patch(&anonymous, &url, MERGE_PATCH, None, "{}").await, 401, "unauthorized").await;
    error(delete(&anonymous, &url, None).await, 401, "unauthorized").await;
    assert_eq!(json(client.get(&url).await).await, pet, "the animal did not change");
    assert_eq!(inventory(&client, &server).await, before, "nor did the counts");
}

#[tokio::test]
async fn an_open_order_holds_its_animal_and_a_removed_one_is_gone_for_good() {
    let db = Db::sqlite();
    let client = Client::new(&db.key("business"));
    let server = db.start();
    let (url, _, rex) = add(&client, &server, "Rex").await;
    let placed = client
        .post(&server.url("/v1/store/orders"), &json!({"petId": rex["id"]}).to_string())
        .await;
    let order = json(placed).await;
    let order_url = server.url(&format!("/v1/store/orders/{}", order["id"]));

    for status in ["available", "sold"] {
        let body = json!({"status": status}).to_string();
        let held =
            error(patch(&client, &url, MERGE_PATCH, None, &body).await, 409, "conflict").await;
        let message = held["message"].as_str().expect("text");
        assert!(message.contains(&format!("order {}", order["id"])), "{message}");
    }
    let held = error(delete(&client, &url, None).await, 409, "conflict").await;
    assert!(held["message"].as_str().expect("text").contains("open"), "{held}");
    let renamed = patch(&client, &url, MERGE_PATCH, None, r#"{"name":"Held","status":"pending"}"#);
    let renamed = json(renamed.await).await;
    assert_eq!(
        (renamed["name"].as_str(), renamed["status"].as_str()),
        (Some("Held"), Some("pending"))
    );

    let cancelled =
        patch(&client, &order_url, "application/json", None, r#"{"status":"cancelled"}"#);
    assert_eq!(cancelled.await.status(), 200);
    let read = client.get(&url).await;
    let tag = etag(&read);
    error(delete(&client, &url, Some("\"stale\"")).await, 412, "precondition_failed").await;
    let removed = delete(&client, &url, Some(&tag)).await;
    assert_eq!(removed.status(), 204);
    assert!(removed.headers().contains_key("x-ratelimit-remaining"));
    assert_eq!(removed.bytes().await.expect("a body").len(), 0, "204 has no body");

    error(client.get(&url).await, 404, "not_found").await;
    error(patch(&client, &url, MERGE_PATCH, None, "{}").await, 404, "not_found").await;
    error(delete(&client, &url, None).await, 404, "not_found").await;
    let listed = list_all(&client, &server).await;
    assert!(!listed.contains_key(&rex["id"].as_i64().expect("an id")), "not listed");
    let kept = client.get(&order_url).await;
    assert_eq!(kept.status(), 200, "its closed order stays readable");
    assert_eq!(json(kept).await["status"], "cancelled");
    let again = client
        .post(&server.url("/v1/store/orders"), &json!({"petId": rex["id"]}).to_string())
        .await;
    error(again, 422, "validation_failed").await;
    let (_, _, next) = add(&client, &server, "Next").await;
    assert!(next["id"].as_i64() > rex["id"].as_i64(), "its id is never given again: {next}");
}

#[tokio::test]
async fn the_inventory_is_exact_after_every_write() {
    let db = Db::sqlite();
    let client = Client::new(&db.key("business"));
    let server = db.start();
    let counts = |available: u64, pending: u64, sold: u64| json!({"available": available, "pending": pending, "sold": sold});
    assert_eq!(inventory(&client, &server).await, counts(0, 0, 0));
    let mut urls = Vec::new();
    for name in ["A", "B", "C"] {
        urls.push(add(&client, &server, name).await);
    }
    let sold = client
        .post(
            &server.url("/v1/pets"),
            &json!({"name": "S", "categoryId": 1, "status": "sold"}).to_string(),
        )
        .await;
    assert_eq!(sold.status(), 201);
    assert_eq!(inventory(&client, &server).await, counts(3, 0, 1));
    let order = client
        .post(&server.url("/v1/store/orders"), &json!({"petId": urls[0].2["id"]}).to_string())
        .await;
    let order_url = server.url(&format!("/v1/store/orders/{}", json(order).await["id"]));
    assert_eq!(inventory(&client, &server).await, counts(2, 1, 1), "an order reserves");
    for status in ["approved", "delivered"] {
        let body = json!({"status": status}).to_string();
        assert_eq!(patch(&client, &order_url, "application/json", None, &body).await.status(), 200);
    }
    assert_eq!(inventory(&client, &server).await, counts(2, 0, 2), "a delivery sells");
    let moved = patch(&client, &urls[1].0, MERGE_PATCH, None, r#"{"status":"pending"}"#).await;
    assert_eq!(moved.status(), 200);
    assert_eq!(inventory(&client, &server).await, counts(1, 1, 2), "a patch moves a count");
    assert_eq!(delete(&client, &urls[2].0, None).await.status(), 204);
    assert_eq!(inventory(&client, &server).await, counts(0, 1, 2), "a removal uncounts");
    let keyed = client
        .post_keyed(
            &server.url("/v1/pets"),
            &json!({"name": "K", "categoryId": 1}).to_string(),
            "k-1",
        )
        .await;
    let first_tag = etag(&keyed);
    let replayed = client
        .post_keyed(
            &server.url("/v1/pets"),
            &json!({"name": "K", "categoryId": 1}).to_string(),
            "k-1",
        )
        .await;
    assert_eq!(replayed.headers()["idempotent-replayed"], "true");
    assert_eq!(etag(&replayed), first_tag, "a replay carries the animal's ETag too");
    assert_eq!(inventory(&client, &server).await, counts(1, 1, 2), "a replay adds nothing");
}

/// Two clients patch one animal at once with the tag they both read, many times over,
/// through `servers` (one, or two instances on one database): one 200 and one 412 each
/// time, and the animal is as the winner left it.
async fn racing_patches(db: &Db, servers: &[Server]) {
    let (first, second) = (Client::new(&db.unlimited_key()), Client::new(&db.unlimited_key()));
    for round in 0..20 {
        let (url, tag, pet) = add(&first, &servers[0], &format!("Raced {round}")).await;
        let other = url.replace(&servers[0].base, &servers[servers.len() - 1].base);
        let (a, b) = tokio::join!(
            patch(&first, &url, MERGE_PATCH, Some(&tag), r#"{"name":"First"}"#),
            patch(&second, &other, MERGE_PATCH, Some(&tag), r#"{"name":"Second"}"#),
        );
        let mut statuses = [a.status().as_u16(), b.status().as_u16()];
        statuses.sort_unstable();
        assert_eq!(statuses, [200, 412], "round {round}");
        let winner = if a.status() == 200 { json(a).await } else { json(b).await };
        assert_eq!(json(first.get(&url).await).await, winner, "round {round}");
        assert_eq!(winner["id"], pet["id"]);
    }
}

#[tokio::test]
async fn racing_patches_with_one_if_match_on_sqlite() {
    let db = Db::sqlite();
    let server = db.start();
    racing_patches(&db, &[server]).await;
}

#[tokio::test]
async fn racing_patches_with_one_if_match_on_postgres_across_two_instances() {
    if let Some(db) = Db::postgres().await {
        let servers = [db.start(), db.start()];
        racing_patches(&db, &servers).await;
    }
}
