//! The API over real HTTP: happy paths, bad input, revocation.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Client, Db, json, list_all};

async fn happy_path(db: &Db) {
    let key = db.key("free");
    let server = db.start();
    let client = Client::new(&key);

    let mut created = Vec::new();
    for (i, status) in ["available", "pending", "sold", "pending"].iter().enumerate() {
        let resp = client
            .post(
                &server.url("/v1/pets"),
                &format!(r#"{{"name":"Pet {i}","categoryId":{},"status":"{status}"}}"#, i + 1),
            )
            .await;
        assert_eq!(resp.status(), 201);
        let location = resp.headers()["location"].to_str().expect("ascii").to_owned();
        let pet = json(resp).await;
        assert_eq!(location, format!("/v1/pets/{}", pet["id"]));
        assert_eq!(pet["name"], format!("Pet {i}"));
        created.push(pet);
    }
    let defaulted =
        json(client.post(&server.url("/v1/pets"), r#"{"name":"Plain","categoryId":1}"#).await)
            .await;
    assert_eq!(defaulted["status"], "available");

    let resp = client.get(&server.url("/v1/pets?limit=2")).await;
    assert_eq!(resp.status(), 200);
    let link = resp.headers()["link"].to_str().expect("ascii").to_owned();
    assert_eq!(json(resp).await, json!([created[0], created[1]]));
    let next = link.trim_start_matches('<').split('>').next().expect("a target");
    let page2 = json(client.get(&server.url(next)).await).await;
    assert_eq!(page2, json!([created[2], created[3]]));

    let pending = json(client.get(&server.url("/v1/pets?status=pending")).await).await;
    assert_eq!(pending, json!([created[1], created[3]]));

    let resp = client.get(&server.url(&format!("/v1/pets/{}", created[2]["id"]))).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["sunset"], "Thu, 05 Dec 2030 00:00:00 GMT");
    assert_eq!(resp.headers()["deprecation"], "@1767225600");
    assert_eq!(json(resp).await, created[2]);

    let doc = json(reqwest::get(server.url("/v1/openapi.json")).await.expect("a response")).await;
    assert_eq!(doc["info"]["version"], "1.0.0");
    assert!(server.stop(), "SIGTERM ends the server cleanly");
}

#[tokio::test]
async fn happy_paths_on_sqlite() {
    happy_path(&Db::sqlite()).await;
}

#[tokio::test]
async fn happy_paths_on_postgres() {
    if let Some(db) = Db::postgres().await {
        happy_path(&db).await;
    }
}

fn assert_error(status: u16, code: &str, body: &Value) {
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["status"], status, "{body}");
    assert!(body["message"].is_string());
}

#[tokio::test]
async fn bad_input_gets_the_error_body_and_changes_nothing() {
    let db = Db::sqlite();
    let key = db.key("free");
    let server = db.start();
    let client = Client::new(&key);
    let first =
        json(client.post(&server.url("/v1/pets"), r#"{"name":"Keep","categoryId":1}"#).await).await;

    let bodies = [
        (r#"{"name":"","categoryId":1}"#, 400, "validation_failed"),
        (r#"{"name":"Rex"}"#, 400, "validation_failed"),
        (r#"{"name":"Rex","categoryId":0}"#, 400, "validation_failed"),
        (r#"{"name":"Rex","categoryId":1,"status":"gone"}"#, 400, "validation_failed"),
        (r#"{"name":null,"categoryId":1}"#, 400, "validation_failed"),
        (r#"{"name":"Rex","categoryId":"one"}"#, 400, "validation_failed"),
        ("{not json", 400, "invalid_request"),
        ("", 400, "invalid_request"),
    ];
    for (body, status, code) in bodies {
        let resp = client.post(&server.url("/v1/pets"), body).await;
        assert_eq!(resp.status(), status, "{body}");
        assert!(
            resp.headers()["content-type"]
                .to_str()
                .unwrap_or_default()
                .starts_with("application/json")
        );
        assert_error(status, code, &json(resp).await);
    }
    let resp = client
        .raw()
        .post(server.url("/v1/pets"))
        .bearer_auth(&key)
        .header("content-type", "application/xml")
        .body("<pet/>")
        .send()
        .await
        .expect("a response");
    assert_eq!(resp.status(), 415);
    assert_error(415, "unsupported_media_type", &json(resp).await);
    let huge = format!(r#"{{"name":"Rex","categoryId":1,"x":"{}"}}"#, "y".repeat(20_000));
    let resp = client.post(&server.url("/v1/pets"), &huge).await;
    assert_eq!(resp.status(), 413);
    assert_error(413, "payload_too_large", &json(resp).await);

    for (query, code) in [
        ("limit=0", "validation_failed"),
        ("limit=101", "validation_failed"),
        ("limit=x", "invalid_request"),
        ("status=lost", "validation_failed"),
        ("cursor=%%%", "invalid_request"),
    ] {
        let resp = client.get(&server.url(&format!("/v1/pets?{query}"))).await;
        assert_eq!(resp.status(), 400, "{query}");
        assert_error(400, code, &json(resp).await);
    }
    let resp = client.get(&server.url("/v1/pets/abc")).await;
    assert_eq!(resp.status(), 400);
    let resp = client.get(&server.url("/v1/pets/424242")).await;
    assert_eq!(resp.status(), 404);
    assert_error(404, "not_found", &json(resp).await);
    let resp = client
        .raw()
        .delete(server.url("/v1/pets"))
        .bearer_auth(&key)
        .send()
        .await
        .expect("a response");
    assert_eq!(resp.status(), 405);
    assert_eq!(resp.headers()["allow"], "GET, POST, HEAD");
    assert_error(405, "method_not_allowed", &json(resp).await);
    let resp = client.get(&server.url("/v2/pets")).await;
    assert_eq!(resp.status(), 404);
    assert_error(404, "not_found", &json(resp).await);

    let all = json(client.get(&server.url("/v1/pets")).await).await;
    assert_eq!(all, json!([first]), "nothing but the valid pet was stored");
    drop(server);
    let server = db.start();
    let all = json(client.get(&server.url("/v1/pets")).await).await;
    assert_eq!(all, json!([first]), "nor is anything else there after a restart");
}

#[tokio::test]
async fn a_revoked_key_stops_working_within_a_second() {
    let db = Db::sqlite();
    let key = db.key("pro");
    let server = db.start();
    let client = Client::new(&key);
    assert_eq!(client.get(&server.url("/v1/pets")).await.status(), 200);

    let id = key.trim_start_matches("as_live_").split('_').next().expect("an id").to_owned();
    let out = db.run(&["keys", "revoke", &id]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let revoked_at = std::time::Instant::now();
    let mut status = 200;
    for _ in 0..40 {
        status = client.get(&server.url("/v1/pets")).await.status().as_u16();
        if status == 401 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status, 401, "the key still works 2 s after revocation");
    assert!(
        revoked_at.elapsed() <= Duration::from_millis(2_000),
        "took {:?}",
        revoked_at.elapsed()
    );
    let resp = client.get(&server.url("/v1/pets")).await;
    assert_eq!(resp.headers()["www-authenticate"], "Bearer");
    assert_error(401, "unauthorized", &json(resp).await);
}

#[tokio::test]
async fn missing_and_unknown_keys_are_401() {
    let db = Db::sqlite();
    let server = db.start();
    let resp = reqwest::get(server.url("/v1/pets")).await.expect("a response");
    assert_eq!(resp.status(), 401);
    assert_error(401, "unauthorized", &json(resp).await);
    let client = Client::new("as_live_aaaaaaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
    let resp = client.post(&server.url("/v1/pets"), r#"{"name":"Rex","categoryId":1}"#).await;
    assert_eq!(resp.status(), 401);
    drop(server);
    let out = db.run(&["keys", "list"]);
    assert!(out.stdout.is_empty(), "no key was created by anybody but the operator");
}

#[tokio::test]
async fn get_pet_is_gone_from_its_sunset_on() {
    let db = Db::sqlite();
    let key = db.key("free");
    // 2030-12-04T23:59:58Z, two seconds before the sunset.
    let (server, clock) = db.start_at(1_922_659_198);
    let client = Client::new(&key);
    let pet =
        json(client.post(&server.url("/v1/pets"), r#"{"name":"Rex","categoryId":1}"#).await).await;
    let url = server.url(&format!("/v1/pets/{}", pet["id"]));
    assert_eq!(client.get(&url).await.status(), 200);
    clock.set(1_922_659_200);
    let resp = client.get(&url).await;
    assert_eq!(resp.status(), 410);
    assert_eq!(resp.headers()["sunset"], "Thu, 05 Dec 2030 00:00:00 GMT");
    assert_error(410, "gone", &json(resp).await);
    assert_eq!(
        json(client.get(&server.url("/v1/pets")).await).await,
        json!([pet]),
        "the successor still works"
    );
}

/// A client's valid `X-Request-Id` is kept, on successes and errors alike, and in the log
/// line of the request; an invalid one is replaced by a new id.
#[tokio::test]
async fn a_valid_client_request_id_is_echoed_and_logged() {
    let db = Db::sqlite();
    let key = db.key("free");
    let server = db.start();
    let http = reqwest::Client::new();
    for (path, auth) in [("/v1/pets", true), ("/v1/nowhere", false)] {
        let mut request = http.get(server.url(path)).header("x-request-id", "trace-42.a:b_c");
        if auth {
            request = request.bearer_auth(&key);
        }
        let resp = request.send().await.expect("an answer");
        assert_eq!(resp.headers()["x-request-id"], "trace-42.a:b_c", "{path}");
    }
    // Each request's line, whichever thread wrote it first (lines of two threads can reach
    // stderr out of order).
    for route in ["route=/v1/pets ", "route=(unmatched) "] {
        let logged = server.stderr_line(|line| {
            (line.contains("request_id=trace-42.a:b_c") && line.contains(route))
                .then(|| line.to_owned())
        });
        assert!(logged.contains("request status="), "{logged}");
    }
    for bad in ["has space", "x;y", &"a".repeat(129)] {
        let resp = http.get(server.url("/v1/pets")).header("x-request-id", bad).send().await;
        let id = resp.expect("an answer").headers()["x-request-id"].to_str().unwrap().to_owned();
        assert_ne!(id, bad);
        assert!(id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
    }
}

#[tokio::test]
async fn bodies_too_large_or_too_deep_are_refused_and_store_nothing() {
    let db = Db::sqlite();
    let key = db.key("pro");
    let server = db.start();
    let client = Client::new(&key);
    let deep = format!(
        r#"{{"name":"Rex","categoryId":1,"tags":{}1{}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    let resp = client.post(&server.url("/v1/pets"), &deep).await;
    assert_eq!(resp.status(), 400, "200 levels of nesting");
    assert_eq!(json(resp).await["code"], "invalid_request");
    let large = format!(r#"{{"name":"Rex","categoryId":1,"notes":"{}"}}"#, "x".repeat(17 * 1024));
    let resp = client.post(&server.url("/v1/pets"), &large).await;
    assert_eq!(resp.status(), 413, "a body over 16 KiB");
    assert_eq!(json(resp).await["code"], "payload_too_large");
    assert!(list_all(&client, &server).await.is_empty(), "nothing stored");
}
