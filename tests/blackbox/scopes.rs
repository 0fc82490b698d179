//! Read-only keys through the real binary: `keys create --scope read`, shown by `keys list`
//! and kept by `keys rotate`; such a key reads everything and changes nothing (403
//! `forbidden`, counted like any request), and so does a fixture key of scope `read`.

use serde_json::json;

use crate::harness::{Client, Db, Server, json};

/// The line of `keys list` for the key whose id `key` carries.
fn listed(db: &Db, key: &str) -> String {
    let id = key.split('_').nth(2).expect("a key id");
    let out = db.run(&["keys", "list"]);
    let text = String::from_utf8(out.stdout).expect("utf-8");
    text.lines().find(|line| line.starts_with(id)).expect("the key is listed").to_owned()
}

/// What a `read` key may and may not do on `server`, and that its refusals store nothing.
async fn a_read_key_reads_and_changes_nothing(reader: &Client, writer: &Client, server: &Server) {
    let added = writer.post(&server.url("/v1/pets"), r#"{"name":"Rex","categoryId":1}"#).await;
    assert_eq!(added.status(), 201, "a write key writes");
    let pet = json(added).await;
    let pet_url = server.url(&format!("/v1/pets/{}", pet["id"]));
    for path in ["/v1/pets", "/v1/store/orders", "/v1/store/inventory", "/v1/rate_limit"] {
        assert_eq!(reader.get(&server.url(path)).await.status(), 200, "{path}");
    }
    assert_eq!(reader.get(&pet_url).await.status(), 200);

    let before = json(reader.get(&server.url("/v1/rate_limit")).await).await;
    let http = reader.raw();
    let body = json!({"name": "Tom", "categoryId": 1}).to_string();
    let order = json!({"petId": pet["id"]}).to_string();
    let refused = [
        http.post(server.url("/v1/pets")).body(body.clone()),
        http.post(server.url("/v1/pets")).header("idempotency-key", "k1").body(body),
        http.patch(&pet_url).body(r#"{"name":"Max"}"#),
        http.delete(&pet_url),
        http.post(server.url("/v1/store/orders")).body(order),
        http.patch(server.url("/v1/store/orders/1")).body(r#"{"status":"cancelled"}"#),
    ];
    let count = refused.len();
    for request in refused {
        let resp = request
            .bearer_auth(reader.key())
            .header("content-type", "application/json")
            .send()
            .await
            .expect("a response");
        assert_eq!(resp.status(), 403);
        assert!(resp.headers().contains_key("x-ratelimit-remaining"));
        assert_eq!(
            resp.headers()["www-authenticate"],
            "Bearer error=\"insufficient_scope\", scope=\"write\""
        );
        let error = json(resp).await;
        assert_eq!(
            (error["code"].as_str(), error["status"].as_u64()),
            (Some("forbidden"), Some(403))
        );
        assert!(error["message"].as_str().expect("text").contains("write scope"), "{error}");
    }
    let after = json(reader.get(&server.url("/v1/rate_limit")).await).await;
    let spent = before["day"]["remaining"].as_u64().expect("a count")
        - after["day"]["remaining"].as_u64().expect("a count");
    assert_eq!(
        spent,
        u64::try_from(count).expect("small"),
        "each refusal counted like any request"
    );
    let pets = json(reader.get(&server.url("/v1/pets")).await).await;
    assert_eq!(pets, json!([pet]), "nothing added, changed or removed");
    let orders = json(reader.get(&server.url("/v1/store/orders")).await).await;
    assert_eq!(orders, json!([]), "nothing ordered");
    assert_eq!(
        json(reader.get(&server.url("/v1/store/inventory")).await).await,
        json!({"available": 1, "pending": 0, "sold": 0})
    );
}

#[tokio::test]
async fn a_read_key_reads_everything_and_changes_nothing() {
    let db = Db::sqlite();
    let out = db.run(&["keys", "create", "--plan", "pro", "--scope", "read", "--name", "shop"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let read_key = String::from_utf8(out.stdout).expect("utf-8").trim().to_owned();
    let write_key = db.key("pro");
    assert!(listed(&db, &read_key).contains("\tscope=read"), "{}", listed(&db, &read_key));
    assert!(listed(&db, &write_key).contains("\tscope=write"), "the default is write");

    let server = db.start();
    a_read_key_reads_and_changes_nothing(
        &Client::new(&read_key),
        &Client::new(&write_key),
        &server,
    )
    .await;

    // A rotation keeps the scope.
    let id = read_key.split('_').nth(2).expect("a key id");
    let out = db.run(&["keys", "rotate", id, "--grace", "0s"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let successor = String::from_utf8(out.stdout).expect("utf-8").trim().to_owned();
    assert!(listed(&db, &successor).contains("\tscope=read"), "{}", listed(&db, &successor));
    let resp = Client::new(&successor)
        .post(&server.url("/v1/pets"), r#"{"name":"Tom","categoryId":1}"#)
        .await;
    assert_eq!(resp.status(), 403, "the successor is a read key too");
}

#[tokio::test]
async fn an_unknown_scope_is_refused_in_one_line() {
    let db = Db::sqlite();
    let out = db.run(&["keys", "create", "--plan", "free", "--scope", "admin"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("admin") && stderr.contains("read"), "{stderr}");
    assert!(out.stdout.is_empty(), "no key printed");
}

#[tokio::test]
async fn a_fixture_key_of_scope_read_changes_nothing() {
    let dir = tempfile::tempdir().expect("a directory");
    let fixtures = dir.path().join("fixtures.json");
    let text = json!({"keys": [
        {"name": "shop", "plan": "business", "scope": "read"},
        {"name": "staff", "plan": "business"}
    ]});
    std::fs::write(&fixtures, text.to_string()).expect("write the fixtures");
    let server = Server::start(
        "memory://",
        dir.path().to_path_buf(),
        &["--fixtures", fixtures.to_str().expect("UTF-8")],
    );
    let key = |name: &str| Client::new(server.ready["keys"][name].as_str().expect("a key"));
    a_read_key_reads_and_changes_nothing(&key("shop"), &key("staff"), &server).await;

    std::fs::write(&fixtures, r#"{"keys": [{"name": "shop", "plan": "pro", "scope": "all"}]}"#)
        .expect("write the fixtures");
    let out = std::process::Command::new(crate::harness::BIN)
        .args(["--database-url", "memory://", "serve", "--fixtures"])
        .arg(&fixtures)
        .env_clear()
        .output()
        .expect("the binary runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("keys[0]") && stderr.contains("scope"), "{stderr}");
}
