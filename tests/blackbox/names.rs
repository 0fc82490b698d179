//! Names that show nothing, or that display in another order than they read, are refused;
//! ordinary names in any script, and emoji, are kept as sent.

use crate::harness::{Client, Db, json, list_all};

#[tokio::test]
async fn invisible_and_reordering_names_are_refused() {
    let db = Db::sqlite();
    let key = db.key("pro");
    let server = db.start();
    let client = Client::new(&key);
    let pets = server.url("/v1/pets");
    for (name, rule) in [
        ("\\u200b", "visible character"),
        ("\\u3164", "visible character"),
        ("\\u200b \\u2060", "visible character"),
        ("\\u202egnp.exe", "bidirectional control"),
        ("\\u2066x\\u2069", "bidirectional control"),
    ] {
        let resp = client.post(&pets, &format!(r#"{{"name":"{name}","categoryId":1}}"#)).await;
        assert_eq!(resp.status(), 400, "{name}");
        let body = json(resp).await;
        assert_eq!(body["code"], "validation_failed");
        let message = body["message"].as_str().expect("a message");
        assert!(message.starts_with("name must") && message.contains(rule), "{name}: {message}");
    }
    assert!(list_all(&client, &server).await.is_empty(), "nothing stored");

    for name in ["Ça va", "ポチ", "شمس", "🐕", "👨\u{200d}👩\u{200d}👧"] {
        let resp = client.post(&pets, &format!(r#"{{"name":"{name}","categoryId":1}}"#)).await;
        assert_eq!(resp.status(), 201, "{name}");
        assert_eq!(json(resp).await["name"], name, "kept as sent");
    }
}
