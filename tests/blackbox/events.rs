//! Events through the real binary: every change makes its events, in order, carrying the
//! animal or order exactly as the API returned it; refusals and replays make none; a key
//! sees the animals' events and its own orders'; listEvents pages, filters and refuses bad
//! input; a poller asking again with nothing new gets 304; and on PostgreSQL, with three
//! instances and eight writers at once, a poller that reads after the last id it saw gets
//! every event exactly once, in id order.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};

use crate::conditional::remaining;
use crate::harness::{Client, Db, Server, json};

/// Every event `client` sees at `server` after `after`, following the `Link` header.
async fn events_after(client: &Client, server: &Server, after: i64, query: &str) -> Vec<Value> {
    let mut events = Vec::new();
    let mut uri = server.url(&format!("/v1/events?limit=100&after={after}{query}"));
    for _ in 0..10_000 {
        let resp = client.get(&uri).await;
        assert_eq!(resp.status(), 200, "listing {uri}");
        assert_eq!(resp.headers()["api-stability"], "experimental");
        let link = resp.headers().get("link").and_then(|v| v.to_str().ok()).map(str::to_owned);
        events.extend(json(resp).await.as_array().expect("an array").iter().cloned());
        match link {
            Some(link) => {
                uri = server.url(link.trim_start_matches('<').split('>').next().expect("a target"));
            }
            None => return events,
        }
    }
    panic!("the listing never ended");
}

/// (type, data.object) of each of `events`.
fn changes(events: &[Value]) -> Vec<(String, Value)> {
    events
        .iter()
        .map(|e| (e["type"].as_str().expect("a type").to_owned(), e["data"]["object"].clone()))
        .collect()
}

fn change(kind: &str, object: &Value) -> (String, Value) {
    (kind.to_owned(), object.clone())
}

async fn patch(client: &Client, url: &str, body: &Value) -> reqwest::Response {
    client
        .raw()
        .patch(url)
        .bearer_auth(client.key())
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("a response")
}

async fn created(resp: reqwest::Response) -> Value {
    assert_eq!(resp.status(), 201);
    json(resp).await
}

async fn error(resp: reqwest::Response, status: u16, code: &str) {
    assert_eq!(resp.status(), status);
    let body = json(resp).await;
    assert_eq!((body["code"].as_str(), body["status"].as_u64()), (Some(code), Some(status.into())));
}

#[tokio::test]
async fn every_change_makes_its_events_as_the_api_answered_it() {
    let db = Db::sqlite();
    let (alice, bob) = (Client::new(&db.key("business")), Client::new(&db.key("business")));
    let server = db.start();
    let pets = server.url("/v1/pets");
    let rex = created(alice.post(&pets, r#"{"name":"Rex","categoryId":1}"#).await).await;
    let max = created(alice.post(&pets, r#"{"name":"Max","categoryId":2}"#).await).await;
    let orders = server.url("/v1/store/orders");
    let order = created(alice.post(&orders, &json!({"petId": rex["id"]}).to_string()).await).await;
    let rex_url = server.url(&format!("/v1/pets/{}", rex["id"]));
    let rex_pending = json(alice.get(&rex_url).await).await;
    let order_url = server.url(&format!("/v1/store/orders/{}", order["id"]));
    let approved = json(patch(&alice, &order_url, &json!({"status": "approved"})).await).await;
    let delivered = json(patch(&alice, &order_url, &json!({"status": "delivered"})).await).await;
    let rex_sold = json(alice.get(&rex_url).await).await;
    let max_url = server.url(&format!("/v1/pets/{}", max["id"]));
    let renamed = json(patch(&alice, &max_url, &json!({"name": "Max II"})).await).await;
    // Changes nothing, and is refused: no event.
    assert_eq!(patch(&alice, &max_url, &json!({})).await.status(), 200);
    error(alice.post(&orders, &json!({"petId": rex["id"]}).to_string()).await, 409, "conflict")
        .await;
    error(patch(&alice, &order_url, &json!({"status": "cancelled"})).await, 409, "conflict").await;
    let removed = alice.raw().delete(&max_url).bearer_auth(alice.key()).send().await;
    assert_eq!(removed.expect("a response").status(), 204);

    let seen = events_after(&alice, &server, 0, "").await;
    assert_eq!(
        changes(&seen),
        vec![
            change("pet.created", &rex),
            change("pet.created", &max),
            change("order.placed", &order),
            change("pet.updated", &rex_pending),
            change("order.updated", &approved),
            change("order.updated", &delivered),
            change("pet.updated", &rex_sold),
            change("pet.updated", &renamed),
            change("pet.deleted", &renamed),
        ]
    );
    let ids: Vec<i64> = seen.iter().map(|e| e["id"].as_i64().expect("an id")).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids grow: {ids:?}");
    assert_eq!(seen[2]["createdAt"], order["createdAt"], "an order's event has its time");
    for event in &seen {
        let keys: Vec<&String> = event.as_object().expect("an object").keys().collect();
        assert_eq!(keys, ["id", "type", "createdAt", "data"], "{event}");
    }

    // Bob sees the animals' events, none of Alice's orders'.
    let bobs = events_after(&bob, &server, 0, "").await;
    let animals: Vec<Value> = seen
        .iter()
        .filter(|e| e["type"].as_str().is_some_and(|t| t.starts_with("pet.")))
        .cloned()
        .collect();
    assert_eq!(bobs, animals);
    let placed = server.url(&format!("/v1/events/{}", seen[2]["id"]));
    error(bob.get(&placed).await, 404, "not_found").await;
    let mine = alice.get(&placed).await;
    assert_eq!(mine.status(), 200);
    assert!(mine.headers().contains_key("etag"));
    assert_eq!(json(mine).await, seen[2]);

    // A type, and small pages that chain through `Link`.
    let updates = events_after(&alice, &server, 0, "&type=order.updated").await;
    assert_eq!(updates, seen[4..6].to_vec());
    let first = alice.get(&server.url("/v1/events?limit=2&type=pet.created")).await;
    assert_eq!(first.headers().get("link"), None, "two of two: no next page");
    let paged = alice.get(&server.url("/v1/events?limit=4")).await;
    let next = paged.headers()["link"].to_str().expect("text").to_owned();
    assert_eq!(next, format!("</v1/events?limit=4&after={}>; rel=\"next\"", ids[3]));
    assert_eq!(json(paged).await.as_array().expect("a page").len(), 4);
    assert_eq!(events_after(&alice, &server, ids[6], "").await, seen[7..].to_vec());
}

#[tokio::test]
async fn keyed_retries_and_refusals_make_no_event() {
    let db = Db::sqlite();
    let client = Client::new(&db.key("business"));
    let server = db.start();
    let pets = server.url("/v1/pets");
    let body = r#"{"name":"Bella","categoryId":3}"#;
    let first = created(client.post_keyed(&pets, body, "add-bella").await).await;
    let again = client.post_keyed(&pets, body, "add-bella").await;
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    error(client.post(&pets, r#"{"name":"","categoryId":3}"#).await, 400, "validation_failed")
        .await;
    let missing = server.url("/v1/pets/999");
    error(patch(&client, &missing, &json!({"name": "Nobody"})).await, 404, "not_found").await;
    let stale = client
        .raw()
        .patch(server.url(&format!("/v1/pets/{}", first["id"])))
        .bearer_auth(client.key())
        .header("content-type", "application/json")
        .header("if-match", "\"stale\"")
        .body(r#"{"name":"Bella II"}"#)
        .send()
        .await
        .expect("a response");
    error(stale, 412, "precondition_failed").await;
    let seen = events_after(&client, &server, 0, "").await;
    assert_eq!(changes(&seen), vec![change("pet.created", &first)]);
}

#[tokio::test]
async fn bad_input_is_refused_in_the_error_shape() {
    let db = Db::sqlite();
    let client = Client::new(&db.key("business"));
    let server = db.start();
    for (query, status, code) in [
        ("after=abc", 400, "invalid_request"),
        ("after=1.5", 400, "invalid_request"),
        ("after=-1", 400, "validation_failed"),
        ("limit=0", 400, "validation_failed"),
        ("limit=many", 400, "invalid_request"),
        ("type=pet.removed", 400, "validation_failed"),
        ("after=1&after=2", 400, "invalid_request"),
    ] {
        let resp = client.get(&server.url(&format!("/v1/events?{query}"))).await;
        assert_eq!(resp.status(), status, "{query}");
        let body = json(resp).await;
        assert_eq!(body["code"], code, "{query}: {body}");
    }
    error(client.get(&server.url("/v1/events/abc")).await, 400, "invalid_request").await;
    error(client.get(&server.url("/v1/events/1")).await, 404, "not_found").await;
    let anonymous = reqwest::get(server.url("/v1/events")).await.expect("a response");
    error(anonymous, 401, "unauthorized").await;

    // A long type is repeated as its first 32 characters and its length, never whole.
    let long = "x".repeat(60_000);
    let resp = client.get(&server.url(&format!("/v1/events?type={long}"))).await;
    assert_eq!(resp.status(), 400);
    let body = resp.text().await.expect("a body");
    assert!(body.len() < 500, "{} bytes: {}", body.len(), &body[..500.min(body.len())]);
    let message = serde_json::from_str::<Value>(&body).expect("JSON")["message"].clone();
    let cut = format!("{}... (60000 characters)", "x".repeat(32));
    assert!(message.as_str().is_some_and(|m| m.contains(&cut)), "{message}");
}

#[tokio::test]
async fn a_poller_with_nothing_new_gets_304_and_spends_nothing_of_its_day() {
    let db = Db::sqlite();
    let client = Client::new(&db.key("free"));
    let server = db.start();
    let created =
        created(client.post(&server.url("/v1/pets"), r#"{"name":"Rex","categoryId":1}"#).await)
            .await;
    let poll = server.url("/v1/events?after=1");
    let empty = client.get(&poll).await;
    assert_eq!(empty.status(), 200);
    let tag = empty.headers()["etag"].to_str().expect("text").to_owned();
    let day_left = |resp: &reqwest::Response| remaining(resp, "day");
    let before = day_left(&empty);
    assert_eq!(json(empty).await, json!([]));
    let again = client.raw().get(&poll).bearer_auth(client.key()).header("if-none-match", &tag);
    let again = again.send().await.expect("a response");
    assert_eq!(again.status(), 304);
    assert_eq!(day_left(&again), before, "a 304 spends nothing of the day");
    let max = client.post(&server.url("/v1/pets"), r#"{"name":"Max","categoryId":1}"#).await;
    let max = json(max).await;
    let changed = client.raw().get(&poll).bearer_auth(client.key()).header("if-none-match", &tag);
    let changed = changed.send().await.expect("a response");
    assert_eq!(changed.status(), 200, "a new event changes the answer");
    assert_eq!(
        changes(&json(changed).await.as_array().cloned().unwrap_or_default()),
        vec![change("pet.created", &max)]
    );
    assert_ne!(created["id"], max["id"]);
}

/// Three instances on one PostgreSQL database, eight writers adding animals through them
/// at once, and a poller that reads after the last id it saw while they write: at the end
/// its list is exactly the table's (every event once, in id order), and holds one
/// `pet.created` per animal a writer was answered 201 for.
#[tokio::test]
async fn a_poller_misses_nothing_while_three_instances_write() {
    let Some(db) = Db::postgres().await else {
        return;
    };
    let servers = Arc::new([db.start(), db.start(), db.start()]);
    let key = db.unlimited_key();
    let done = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..8)
        .map(|writer| {
            let (servers, client) = (Arc::clone(&servers), Client::new(&key));
            tokio::spawn(async move {
                let mut ids = Vec::new();
                for n in 0..60 {
                    let server = &servers[(writer + n) % 3];
                    let body = json!({"name": format!("W{writer} #{n}"), "categoryId": 1});
                    let resp = client.post(&server.url("/v1/pets"), &body.to_string()).await;
                    assert_eq!(resp.status(), 201);
                    ids.push(json(resp).await["id"].as_i64().expect("an id"));
                }
                ids
            })
        })
        .collect();
    let poller = {
        let (servers, client, done) = (Arc::clone(&servers), Client::new(&key), Arc::clone(&done));
        tokio::spawn(async move {
            let mut seen: Vec<Value> = Vec::new();
            for round in 0..100_000 {
                let finished = done.load(Ordering::SeqCst);
                let after = seen.last().map_or(0, |e| e["id"].as_i64().expect("an id"));
                let uri = format!("/v1/events?limit=100&after={after}");
                let resp = client.get(&servers[round % 3].url(&uri)).await;
                assert_eq!(resp.status(), 200);
                let page = json(resp).await.as_array().cloned().expect("an array");
                if page.is_empty() && finished {
                    return seen;
                }
                seen.extend(page);
            }
            panic!("the poller never caught up");
        })
    };
    let mut added = Vec::new();
    for writer in writers {
        added.extend(writer.await.expect("a writer"));
    }
    done.store(true, Ordering::SeqCst);
    let caught = poller.await.expect("the poller");
    let table = events_after(&Client::new(&key), &servers[0], 0, "").await;
    assert_eq!(table.len(), 8 * 60);
    let ids: Vec<i64> = caught.iter().map(|e| e["id"].as_i64().expect("an id")).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "every event once, in id order");
    assert_eq!(caught, table, "the poller saw exactly what the table holds");
    let mut announced: Vec<i64> =
        table.iter().map(|e| e["data"]["object"]["id"].as_i64().expect("an id")).collect();
    announced.sort_unstable();
    added.sort_unstable();
    assert_eq!(announced, added, "one pet.created per animal added");
}
