//! Idempotent retries through the real binary: a retry with the same `Idempotency-Key` gets
//! the first response again and adds nothing, a key reused with another body is refused, a
//! malformed header is refused and stores nothing, records last a day, and clients retrying
//! through a `kill -9` end with exactly one pet per key.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Client, Db, Server, json, list_all};

async fn post(client: &Client, url: &str, key: Option<&str>, body: &str) -> reqwest::Response {
    let mut request = client
        .raw()
        .post(url)
        .bearer_auth(client.key())
        .header("content-type", "application/json")
        .body(body.to_owned());
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    request.send().await.expect("a response")
}

fn replayed(resp: &reqwest::Response) -> bool {
    resp.headers().get("idempotent-replayed").is_some_and(|v| v == "true")
}

async fn count(client: &Client, server: &Server) -> usize {
    list_all(client, server).await.len()
}

#[tokio::test]
async fn a_retry_gets_the_first_response_and_adds_nothing() {
    let db = Db::sqlite();
    let client = Client::new(&db.key("business"));
    let server = db.start();
    let pets = server.url("/v1/pets");
    let body = r#"{"name":"Rex","categoryId":1}"#;

    let first = post(&client, &pets, Some("retry-1"), body).await;
    assert_eq!(first.status(), 201);
    assert!(!replayed(&first), "the first answer is not a replay");
    let location = first.headers()["location"].clone();
    let remaining: u32 =
        first.headers()["x-ratelimit-remaining"].to_str().expect("text").parse().expect("a number");
    let created = json(first).await;

    for quoted in ["retry-1", "\"retry-1\""] {
        let again = post(&client, &pets, Some(quoted), body).await;
        assert_eq!(again.status(), 201);
        assert!(replayed(&again), "{quoted}: marked as a replay");
        assert_eq!(again.headers()["location"], location);
        let left: u32 = again.headers()["x-ratelimit-remaining"]
            .to_str()
            .expect("text")
            .parse()
            .expect("a number");
        assert!(left < remaining, "a replay counts against the rate limit, with fresh headers");
        assert_eq!(json(again).await, created, "the same body");
    }
    assert_eq!(count(&client, &server).await, 1, "one animal");

    let other_body =
        post(&client, &pets, Some("retry-1"), r#"{"name":"Max","categoryId":1}"#).await;
    assert_eq!(other_body.status(), 422);
    assert_eq!(json(other_body).await["code"], "idempotency_key_reused");
    assert_eq!(
        post(&client, &pets, Some("retry-2"), body).await.status(),
        201,
        "a new key, a new animal"
    );
    let stranger = Client::new(&db.key("business"));
    let theirs = post(&stranger, &pets, Some("retry-1"), body).await;
    assert!(theirs.status() == 201 && !replayed(&theirs), "keys belong to their API key");
    assert_eq!(count(&client, &server).await, 3);

    let listed = client
        .raw()
        .get(&pets)
        .bearer_auth(client.key())
        .header("idempotency-key", "")
        .send()
        .await;
    assert_eq!(listed.expect("a response").status(), 200, "the header is ignored on a GET");
}

#[tokio::test]
async fn a_malformed_key_is_refused_and_stores_nothing() {
    let db = Db::sqlite();
    let client = Client::new(&db.key("business"));
    let server = db.start();
    let pets = server.url("/v1/pets");
    let body = r#"{"name":"Rex","categoryId":1}"#;
    let long = "k".repeat(256);
    for key in ["", long.as_str(), "a\tb", "a b", "\"open"] {
        let refused = post(&client, &pets, Some(key), body).await;
        assert_eq!(refused.status(), 400, "{key:?}");
        let error = json(refused).await;
        assert_eq!(error["code"], "invalid_request");
        assert!(error["message"].as_str().expect("text").contains("Idempotency-Key"), "{error}");
    }
    let twice = client
        .raw()
        .post(&pets)
        .bearer_auth(client.key())
        .header("content-type", "application/json")
        .header("idempotency-key", "a")
        .header("idempotency-key", "b")
        .body(body)
        .send()
        .await
        .expect("a response");
    assert_eq!(twice.status(), 400);
    assert_eq!(json(twice).await["message"], "Idempotency-Key must be sent once");
    let non_ascii = client
        .raw()
        .post(&pets)
        .bearer_auth(client.key())
        .header("content-type", "application/json")
        .header(
            "idempotency-key",
            reqwest::header::HeaderValue::from_bytes(b"cl\xc3\xa9").expect("bytes"),
        )
        .body(body)
        .send()
        .await
        .expect("a response");
    assert_eq!(non_ascii.status(), 400);
    assert_eq!(count(&client, &server).await, 0, "nothing was stored");
}

#[tokio::test]
async fn an_order_and_its_refusal_are_replayed() {
    let db = Db::sqlite();
    let client = Client::new(&db.key("business"));
    let server = db.start();
    let pet = json(
        post(&client, &server.url("/v1/pets"), None, r#"{"name":"Rex","categoryId":1}"#).await,
    )
    .await;
    let orders = server.url("/v1/store/orders");
    let body = json!({"petId": pet["id"]}).to_string();

    let placed = post(&client, &orders, Some("order-1"), &body).await;
    assert_eq!(placed.status(), 201);
    let order = json(placed).await;
    let again = post(&client, &orders, Some("order-1"), &body).await;
    assert!(again.status() == 201 && replayed(&again));
    assert_eq!(json(again).await, order);

    let refused = post(&client, &orders, Some("order-2"), &body).await;
    assert_eq!(refused.status(), 409, "the animal is reserved");
    let refusal = json(refused).await;
    let again = post(&client, &orders, Some("order-2"), &body).await;
    assert!(again.status() == 409 && replayed(&again), "a refusal of the rules is replayed too");
    assert_eq!(json(again).await, refusal);
    let all = json(client.get(&orders).await).await;
    assert_eq!(all.as_array().map(Vec::len), Some(1), "one order");
}

#[tokio::test]
async fn a_key_is_kept_for_a_day() {
    let db = Db::sqlite();
    let client = Client::new(&db.unlimited_key());
    let start = 1_900_000_000;
    let (server, clock) = db.start_at(start);
    let pets = server.url("/v1/pets");
    let body = r#"{"name":"Rex","categoryId":1}"#;
    assert_eq!(post(&client, &pets, Some("daily"), body).await.status(), 201);
    clock.set(start + 86_399);
    assert!(replayed(&post(&client, &pets, Some("daily"), body).await), "kept 24 hours");
    clock.set(start + 86_400);
    let later = post(&client, &pets, Some("daily"), body).await;
    assert!(later.status() == 201 && !replayed(&later), "after 24 hours the key is new again");
    assert_eq!(count(&client, &server).await, 2);
}

/// Writers retry each keyed request until it is answered, through a `kill -9` and a restart:
/// every key ends with exactly one animal, and every animal's key replays it.
#[tokio::test]
async fn retries_through_kill_9_leave_one_animal_per_key() {
    let db = Db::sqlite();
    let key = db.unlimited_key();
    let server = db.start();
    let base = Arc::new(Mutex::new(server.base.clone()));
    let answered: Arc<Mutex<BTreeMap<String, i64>>> = Arc::default();
    let writers: Vec<_> = (0..6)
        .map(|w| {
            let (client, base, answered) = (Client::new(&key), base.clone(), answered.clone());
            tokio::spawn(async move {
                for i in 0..120 {
                    let name = format!("w{w}-{i}");
                    let body = json!({"name": name, "categoryId": 1}).to_string();
                    let mut attempts = 0;
                    loop {
                        attempts += 1;
                        assert!(attempts < 600, "{name} was never answered");
                        let url = format!("{}/v1/pets", base.lock().expect("lock"));
                        let sent = client
                            .raw()
                            .post(url)
                            .bearer_auth(client.key())
                            .header("content-type", "application/json")
                            .header("idempotency-key", &name)
                            .body(body.clone())
                            .send()
                            .await;
                        if let Ok(resp) = sent
                            && resp.status() == 201
                            && let Ok(pet) = resp.json::<Value>().await
                        {
                            answered
                                .lock()
                                .expect("lock")
                                .insert(name.clone(), pet["id"].as_i64().expect("an id"));
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
            })
        })
        .collect();
    for _ in 0..400 {
        if answered.lock().expect("lock").len() >= 150 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server.kill();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let server = db.start();
    *base.lock().expect("lock") = server.base.clone();
    for writer in writers {
        writer.await.expect("a writer");
    }

    let client = Client::new(&key);
    let stored = list_all(&client, &server).await;
    let answered = answered.lock().expect("lock").clone();
    assert_eq!(answered.len(), 720);
    let mut by_name: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for (id, pet) in &stored {
        by_name.entry(pet["name"].as_str().expect("a name").to_owned()).or_default().push(*id);
    }
    for (name, id) in &answered {
        assert_eq!(
            by_name.get(name),
            Some(&vec![*id]),
            "{name}: exactly the animal its answer named"
        );
    }
    assert_eq!(stored.len(), answered.len(), "no animal without its key");
    for (name, id) in answered.iter().step_by(37) {
        let body = json!({"name": name, "categoryId": 1}).to_string();
        let again = post(&client, &server.url("/v1/pets"), Some(name), &body).await;
        assert!(replayed(&again), "{name} replays");
        assert_eq!(json(again).await["id"].as_i64(), Some(*id));
    }
}

/// Requests with one key sent at once: one adds the animal, each other is a replay or a 409
/// `idempotency_in_progress`, and one animal is stored.
async fn at_once(db: &Db) {
    let client = Client::new(&db.unlimited_key());
    let server = db.start();
    let pets = server.url("/v1/pets");
    for round in 0..5 {
        let key = format!("at-once-{round}");
        let body = json!({"name": key, "categoryId": 1}).to_string();
        let sent = (0..8).map(|_| post(&client, &pets, Some(&key), &body));
        let answers = futures_util::future::join_all(sent).await;
        let mut fresh = 0;
        for answer in answers {
            match (answer.status().as_u16(), replayed(&answer)) {
                (201, false) => fresh += 1,
                (201, true) => {}
                (409, false) => assert_eq!(json(answer).await["code"], "idempotency_in_progress"),
                other => panic!("round {round}: {other:?}"),
            }
        }
        assert_eq!(fresh, 1, "round {round}: one request adds the animal");
    }
    assert_eq!(count(&client, &server).await, 5);
}

#[tokio::test]
async fn requests_with_one_key_at_once_add_one_animal_on_sqlite() {
    at_once(&Db::sqlite()).await;
}

#[tokio::test]
async fn requests_with_one_key_at_once_add_one_animal_on_postgres() {
    if let Some(db) = Db::postgres().await {
        at_once(&db).await;
    }
}
