//! Webhook endpoints through the real binary: registered, changed and removed by their
//! owner only, and every bad input refused with nothing stored.

use serde_json::json;

use crate::harness::{Client, Db, Server, json};
use crate::webhooks::{TEST_FLAGS, endpoints, error, patch, register};

#[tokio::test]
async fn endpoints_are_registered_changed_and_removed_by_their_owner_only() {
    let db = Db::sqlite();
    let (alice, bob) = (Client::new(&db.key("business")), Client::new(&db.key("business")));
    let server = Server::start(&db.url, db.path().to_path_buf(), &TEST_FLAGS);
    let resp = register(
        &alice,
        &server,
        &json!({"url": "http://127.0.0.1:9/a", "events": ["pet.created", "order.placed"]}),
    )
    .await;
    assert_eq!(resp.status(), 201);
    assert_eq!(resp.headers()["api-stability"], "experimental");
    let location = resp.headers()["location"].to_str().expect("text").to_owned();
    let created = json(resp).await;
    assert_eq!(location, format!("/v1/webhook_endpoints/{}", created["id"]));
    assert_eq!(created["status"], "enabled");
    assert_eq!(created["events"], json!(["pet.created", "order.placed"]));
    assert_eq!(created["url"], "http://127.0.0.1:9/a");
    let secret = created["secret"].as_str().expect("a secret");
    assert!(secret.starts_with("whsec_") && secret.len() == "whsec_".len() + 32, "{secret}");
    let url = server.url(&location);
    let read = json(alice.get(&url).await).await;
    assert_eq!(read.get("secret"), None, "the secret is shown once");
    let mut without = created.clone();
    without.as_object_mut().expect("an object").remove("secret");
    assert_eq!(read, without);
    assert_eq!(endpoints(&alice, &server).await, vec![read.clone()]);
    let every = register(&alice, &server, &json!({"url": "http://127.0.0.1:9/b"})).await;
    assert_eq!(json(every).await["events"], json!(["*"]), "every type by default");

    // Another key's endpoint is 404 to every operation, and untouched.
    assert!(endpoints(&bob, &server).await.is_empty());
    error(bob.get(&url).await, 404, "not_found").await;
    error(patch(&bob, &url, &json!({"status": "disabled"})).await, 404, "not_found").await;
    let deliveries = format!("{url}/deliveries");
    error(bob.get(&deliveries).await, 404, "not_found").await;
    let removed = bob.raw().delete(&url).bearer_auth(bob.key()).send().await.expect("a response");
    error(removed, 404, "not_found").await;
    assert_eq!(json(alice.get(&url).await).await, read);

    // Changes.
    let off =
        json(patch(&alice, &url, &json!({"status": "disabled", "events": ["*"]})).await).await;
    assert_eq!((off["status"].as_str(), &off["events"]), (Some("disabled"), &json!(["*"])));
    let moved = json(patch(&alice, &url, &json!({"url": "http://localhost:9/c"})).await).await;
    assert_eq!(
        (moved["url"].as_str(), moved["status"].as_str()),
        (Some("http://localhost:9/c"), Some("disabled"))
    );
    assert_eq!(json(alice.get(&url).await).await, moved, "as stored");
    let gone = alice.raw().delete(&url).bearer_auth(alice.key()).send().await.expect("a response");
    assert_eq!(gone.status(), 204);
    error(alice.get(&url).await, 404, "not_found").await;
    assert_eq!(endpoints(&alice, &server).await.len(), 1);
}

#[tokio::test]
async fn bad_input_is_refused_and_stores_nothing() {
    let db = Db::sqlite();
    let client = Client::new(&db.key("business"));
    let server = db.start();
    let long = format!("https://93.184.215.14/{}", "a".repeat(2048));
    for (body, status, code) in [
        // Addresses: 422 naming url, whatever is wrong with them.
        (json!({"url": "http://169.254.169.254/latest/meta-data"}), 422, "validation_failed"),
        (json!({"url": "http://127.0.0.1/"}), 422, "validation_failed"),
        (json!({"url": "http://[::ffff:10.0.0.1]/"}), 422, "validation_failed"),
        (json!({"url": "https://169.254.169.254/"}), 422, "validation_failed"),
        (json!({"url": "https://127.0.0.1/"}), 422, "validation_failed"),
        (json!({"url": "https://localhost/"}), 422, "validation_failed"),
        (json!({"url": "https://[::1]/"}), 422, "validation_failed"),
        (json!({"url": "https://0.0.0.0/"}), 422, "validation_failed"),
        (json!({"url": "https://2130706433/"}), 422, "validation_failed"),
        (json!({"url": "https://0177.0.0.1/"}), 422, "validation_failed"),
        (json!({"url": "https://0x7f.1/"}), 422, "validation_failed"),
        (json!({"url": "https://[::ffff:127.0.0.1]/"}), 422, "validation_failed"),
        (json!({"url": "https://10.1.2.3/"}), 422, "validation_failed"),
        (json!({"url": "https://100.64.0.1/"}), 422, "validation_failed"),
        (json!({"url": "https://[fd12::1]/"}), 422, "validation_failed"),
        (json!({"url": "https://[fe80::1]/"}), 422, "validation_failed"),
        (json!({"url": "http://93.184.215.14/"}), 422, "validation_failed"),
        (json!({"url": "ftp://93.184.215.14/"}), 422, "validation_failed"),
        (json!({"url": "/hook"}), 422, "validation_failed"),
        (json!({"url": "https://user:pw@93.184.215.14/"}), 422, "validation_failed"),
        (json!({"url": long}), 422, "validation_failed"),
        (json!({"url": "https://no-such-host.invalid/"}), 422, "validation_failed"),
        // The body's shape: 400.
        (json!({}), 400, "validation_failed"),
        (json!({"url": 7}), 400, "validation_failed"),
        (json!({"url": null}), 400, "validation_failed"),
        (
            json!({"url": "https://93.184.215.14/", "events": ["pet.born"]}),
            400,
            "validation_failed",
        ),
        (json!({"url": "https://93.184.215.14/", "events": []}), 400, "validation_failed"),
        (
            json!({"url": "https://93.184.215.14/", "events": "pet.created"}),
            400,
            "validation_failed",
        ),
        (json!(["https://93.184.215.14/"]), 400, "invalid_request"),
    ] {
        let resp = register(&client, &server, &body).await;
        assert_eq!(resp.status(), status, "{body}");
        let refusal = json(resp).await;
        assert_eq!(refusal["code"], code, "{body}: {refusal}");
        if status == 422 {
            let message = refusal["message"].as_str().expect("a message");
            assert!(message.starts_with("url"), "{body}: names url: {message}");
        }
    }
    assert!(endpoints(&client, &server).await.is_empty(), "nothing stored");

    // A public address is accepted (no event is made: nothing is sent to it).
    let fine = json!({"url": "https://93.184.215.14/hook"});
    for n in 0..16 {
        assert_eq!(register(&client, &server, &fine).await.status(), 201, "endpoint {n}");
    }
    let seventeenth =
        error(register(&client, &server, &fine).await, 422, "validation_failed").await;
    assert!(seventeenth["message"].as_str().is_some_and(|m| m.contains("16")), "{seventeenth}");
    assert_eq!(endpoints(&client, &server).await.len(), 16);
    let first = endpoints(&client, &server).await[0]["id"].clone();
    let url = server.url(&format!("/v1/webhook_endpoints/{first}"));
    error(
        patch(&client, &url, &json!({"url": "https://127.0.0.1/"})).await,
        422,
        "validation_failed",
    )
    .await;
    error(patch(&client, &url, &json!({"status": "paused"})).await, 400, "validation_failed").await;
    error(patch(&client, &url, &json!({"events": ["pet.born"]})).await, 400, "validation_failed")
        .await;
    assert_eq!(
        json(client.get(&url).await).await["url"],
        "https://93.184.215.14/hook",
        "unchanged"
    );
    error(client.get(&server.url("/v1/webhook_endpoints/abc")).await, 400, "invalid_request").await;
    let deliveries = server.url(&format!("/v1/webhook_endpoints/{first}/deliveries?limit=0"));
    error(client.get(&deliveries).await, 400, "validation_failed").await;

    // A read key cannot register.
    let out = db.run(&["keys", "create", "--plan", "free", "--scope", "read"]);
    let reader = Client::new(String::from_utf8(out.stdout).expect("utf-8").trim());
    error(register(&reader, &server, &fine).await, 403, "forbidden").await;
}
