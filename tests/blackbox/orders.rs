//! Orders through the real binary: placing reserves the animal, moves follow the rules and
//! the animal follows its order, each key sees its own orders only (a rotated key keeps
//! them), two orders for one animal give one 201 and one 409, and bad input changes nothing.

use serde_json::{Value, json};

use crate::harness::{Client, Db, Server, json};

const ORDERS: &str = "/v1/store/orders";

async fn patch(client: &Client, url: &str, body: &str) -> reqwest::Response {
    client
        .raw()
        .patch(url)
        .bearer_auth(client.key())
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .expect("a response")
}

async fn add_pet(client: &Client, server: &Server, name: &str) -> i64 {
    let resp = client
        .post(&server.url("/v1/pets"), &json!({"name": name, "categoryId": 1}).to_string())
        .await;
    assert_eq!(resp.status(), 201);
    json(resp).await["id"].as_i64().expect("an id")
}

async fn pet_status(client: &Client, server: &Server, id: i64) -> String {
    let pet = json(client.get(&server.url(&format!("/v1/pets/{id}"))).await).await;
    pet["status"].as_str().expect("a status").to_owned()
}

/// An Error body with this code and status.
async fn error(resp: reqwest::Response, status: u16, code: &str) -> Value {
    assert_eq!(resp.status(), status);
    let body = json(resp).await;
    assert_eq!(
        (body["code"].as_str(), body["status"].as_u64()),
        (Some(code), Some(u64::from(status))),
        "{body}"
    );
    body
}

#[tokio::test]
async fn an_order_reserves_its_animal_and_moves_by_the_rules() {
    let db = Db::sqlite();
    let client = Client::new(&db.key("business"));
    let server = db.start();
    let rex = add_pet(&client, &server, "Rex").await;

    let placed = client.post(&server.url(ORDERS), &json!({"petId": rex}).to_string()).await;
    assert_eq!(placed.status(), 201);
    assert_eq!(placed.headers()["api-stability"], "experimental");
    let location = placed.headers()["location"].to_str().expect("text").to_owned();
    let order = json(placed).await;
    let id = order["id"].as_i64().expect("an id");
    assert_eq!(location, format!("/v1/store/orders/{id}"));
    assert_eq!((order["petId"].as_i64(), order["status"].as_str()), (Some(rex), Some("placed")));
    let created = order["createdAt"].as_str().expect("a time");
    assert!(created.ends_with('Z') && created.len() == 20, "RFC 3339 UTC to the second: {created}");
    assert_eq!(order["updatedAt"], order["createdAt"]);
    assert_eq!(pet_status(&client, &server, rex).await, "pending");
    assert_eq!(json(client.get(&server.url(&location)).await).await, order);

    let again = client.post(&server.url(ORDERS), &json!({"petId": rex}).to_string()).await;
    let body = error(again, 409, "conflict").await;
    assert!(body["message"].as_str().expect("text").contains("pending"), "{body}");

    let url = server.url(&location);
    let backwards =
        error(patch(&client, &url, r#"{"status":"delivered"}"#).await, 409, "conflict").await;
    assert_eq!(backwards["message"], "an order cannot move from placed to delivered");
    let approved = patch(&client, &url, r#"{"status":"approved"}"#).await;
    assert_eq!(approved.status(), 200);
    assert_eq!(approved.headers()["api-stability"], "beta");
    assert_eq!(json(approved).await["status"], "approved");
    assert_eq!(pet_status(&client, &server, rex).await, "pending");
    let delivered = json(patch(&client, &url, r#"{"status":"delivered"}"#).await).await;
    assert_eq!(delivered["status"], "delivered");
    assert_eq!(pet_status(&client, &server, rex).await, "sold");
    error(patch(&client, &url, r#"{"status":"cancelled"}"#).await, 409, "conflict").await;
    assert_eq!(pet_status(&client, &server, rex).await, "sold", "a refused move changes nothing");

    let bella = add_pet(&client, &server, "Bella").await;
    let order =
        json(client.post(&server.url(ORDERS), &json!({"petId": bella}).to_string()).await).await;
    let url = server.url(&format!("{ORDERS}/{}", order["id"]));
    assert_eq!(
        json(patch(&client, &url, r#"{"status":"cancelled"}"#).await).await["status"],
        "cancelled"
    );
    assert_eq!(
        pet_status(&client, &server, bella).await,
        "available",
        "cancelling frees the animal"
    );
    let reordered = client.post(&server.url(ORDERS), &json!({"petId": bella}).to_string()).await;
    assert_eq!(reordered.status(), 201, "and it can be ordered again");

    let cancelled =
        json(client.get(&server.url(&format!("{ORDERS}?status=cancelled"))).await).await;
    assert_eq!(cancelled.as_array().map(Vec::len), Some(1), "{cancelled}");
    let page = client.get(&server.url(&format!("{ORDERS}?limit=2"))).await;
    let link = page.headers()["link"].to_str().expect("text").to_owned();
    assert!(link.starts_with("</v1/store/orders?limit=2&cursor="), "{link}");
    let next = link.trim_start_matches('<').split('>').next().expect("a target");
    let rest = json(client.get(&server.url(next)).await).await;
    assert_eq!(rest.as_array().map(Vec::len), Some(1), "three orders: two, then one");
}

#[tokio::test]
async fn a_key_sees_its_own_orders_and_keeps_them_when_rotated() {
    let db = Db::sqlite();
    let (alice_key, bob) = (db.key("business"), Client::new(&db.key("business")));
    let alice = Client::new(&alice_key);
    let server = db.start();
    let rex = add_pet(&alice, &server, "Rex").await;
    let order =
        json(alice.post(&server.url(ORDERS), &json!({"petId": rex}).to_string()).await).await;
    let url = server.url(&format!("{ORDERS}/{}", order["id"]));

    let hidden = error(bob.get(&url).await, 404, "not_found").await;
    assert_eq!(hidden["message"], format!("no order has id {}", order["id"]));
    error(patch(&bob, &url, r#"{"status":"cancelled"}"#).await, 404, "not_found").await;
    assert_eq!(json(bob.get(&server.url(ORDERS)).await).await, json!([]));
    assert_eq!(json(alice.get(&url).await).await, order, "another key's attempt changed nothing");

    let id = alice_key.split('_').nth(2).expect("a key id");
    let out = db.run(&["keys", "rotate", id]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rotated = Client::new(String::from_utf8(out.stdout).expect("utf-8").trim());
    assert_eq!(json(rotated.get(&url).await).await, order, "the new key sees the order");
    assert_eq!(json(rotated.get(&server.url(ORDERS)).await).await, json!([order]));
}

#[tokio::test]
async fn bad_input_gets_the_error_body_and_changes_nothing() {
    let db = Db::sqlite();
    let client = Client::new(&db.key("business"));
    let server = db.start();
    let rex = add_pet(&client, &server, "Rex").await;
    let orders = server.url(ORDERS);

    let missing =
        error(client.post(&orders, r#"{"petId": 999999}"#).await, 422, "validation_failed").await;
    assert!(missing["message"].as_str().expect("text").starts_with("petId"), "{missing}");
    let cases = [
        ("{}", "petId is required"),
        (r#"{"petId": "1"}"#, "petId must be an integer, got a string"),
        (r#"{"petId": null}"#, "petId must be an integer, got null"),
    ];
    for (body, message) in cases {
        let refused = error(client.post(&orders, body).await, 400, "validation_failed").await;
        assert_eq!(refused["message"], message, "{body}");
    }
    error(client.post(&orders, "[1]").await, 400, "invalid_request").await;
    error(client.post(&orders, "not json").await, 400, "invalid_request").await;
    assert_eq!(json(client.get(&orders).await).await, json!([]), "no order was placed");
    assert_eq!(pet_status(&client, &server, rex).await, "available");

    let order = json(client.post(&orders, &json!({"petId": rex}).to_string()).await).await;
    let url = server.url(&format!("{ORDERS}/{}", order["id"]));
    for (body, status, code) in [
        ("", 400, "invalid_request"),
        ("not json", 400, "invalid_request"),
        ("{}", 400, "validation_failed"),
        (r#"{"status":"shipped"}"#, 400, "validation_failed"),
        (r#"{"status":null}"#, 400, "validation_failed"),
        (r#"{"status":"cancelled","petId":2}"#, 400, "validation_failed"),
    ] {
        let refused = error(patch(&client, &url, body).await, status, code).await;
        if body.contains("petId") {
            assert!(refused["message"].as_str().expect("text").contains("petId cannot be changed"));
        }
    }
    error(client.get(&server.url(&format!("{ORDERS}/abc"))).await, 400, "invalid_request").await;
    error(
        patch(&client, &server.url(&format!("{ORDERS}/abc")), r#"{"status":"cancelled"}"#).await,
        400,
        "invalid_request",
    )
    .await;
    error(
        client.get(&server.url(&format!("{ORDERS}?status=shipped"))).await,
        400,
        "validation_failed",
    )
    .await;
    error(client.get(&server.url(&format!("{ORDERS}?limit=0"))).await, 400, "validation_failed")
        .await;
    error(client.get(&server.url(&format!("{ORDERS}?cursor=abc"))).await, 400, "invalid_request")
        .await;
    assert_eq!(json(client.get(&url).await).await, order, "the order did not change");
    assert_eq!(pet_status(&client, &server, rex).await, "pending", "nor its animal");
}

/// Two clients order the same animal at once, many times over, through `servers` (one, or
/// two instances on one database): one 201 and one 409 each time, and the animal is
/// reserved by exactly the order that won.
async fn two_orders_for_one_animal(db: &Db, servers: &[Server]) {
    let server = &servers[0];
    let (first, second) = (Client::new(&db.unlimited_key()), Client::new(&db.unlimited_key()));
    for round in 0..20 {
        let pet = add_pet(&first, server, &format!("Contested {round}")).await;
        let body = json!({"petId": pet}).to_string();
        let (one, other) = (server.url(ORDERS), servers[servers.len() - 1].url(ORDERS));
        let (a, b) = tokio::join!(first.post(&one, &body), second.post(&other, &body));
        let mut statuses = [a.status().as_u16(), b.status().as_u16()];
        statuses.sort_unstable();
        assert_eq!(statuses, [201, 409], "round {round}");
        assert_eq!(pet_status(&first, server, pet).await, "pending");
    }
    let mine = json(first.get(&server.url(&format!("{ORDERS}?limit=100"))).await).await;
    let theirs = json(second.get(&server.url(&format!("{ORDERS}?limit=100"))).await).await;
    let total = mine.as_array().map_or(0, Vec::len) + theirs.as_array().map_or(0, Vec::len);
    assert_eq!(total, 20, "one order per animal");
}

#[tokio::test]
async fn two_orders_for_one_animal_on_sqlite() {
    let db = Db::sqlite();
    let server = db.start();
    two_orders_for_one_animal(&db, &[server]).await;
}

#[tokio::test]
async fn two_orders_for_one_animal_on_postgres_across_two_instances() {
    if let Some(db) = Db::postgres().await {
        let servers = [db.start(), db.start()];
        two_orders_for_one_animal(&db, &servers).await;
    }
}
