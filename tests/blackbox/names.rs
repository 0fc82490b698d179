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
        ("\\u2800", "visible character"),
        ("\\u2800\\u2800\\u2800", "visible character"),
        ("\\u0301", "combining mark"),
        (&format!("a{}", "\\u0301".repeat(40)), "30 combining marks"),
        ("Rex\\u2028Evil", "line or paragraph separator"),
        ("Rex\\u2029", "line or paragraph separator"),
        ("Rex\\uffff", "noncharacter"),
        ("\\u0378", "unassigned"),
        ("\\ue000", "private-use"),
        ("a\\ufff9b\\ufffac\\ufffb", "interlinear annotation"),
        ("Re\\u200bx", "invisible character (found U+200B)"),
        ("\\ufeffRex", "invisible character (found U+FEFF)"),
        ("Re\\u00adx", "invisible character (found U+00AD)"),
        ("Re\\u200dx", "invisible character (found U+200D)"),
    ] {
        let resp = client.post(&pets, &format!(r#"{{"name":"{name}","categoryId":1}}"#)).await;
        assert_eq!(resp.status(), 400, "{name}");
        let body = json(resp).await;
        assert_eq!(body["code"], "validation_failed");
        let message = body["message"].as_str().expect("a message");
        assert!(message.starts_with("name must") && message.contains(rule), "{name}: {message}");
    }
    assert!(list_all(&client, &server).await.is_empty(), "nothing stored");

    for name in [
        "Ça va",
        "Zoe\u{308}",
        "ポチ",
        "شمس",
        "می\u{200c}خواهم",
        "मोती",
        "🐕",
        "👨\u{200d}👩\u{200d}👧",
        "🇫🇷",
        "❤\u{fe0f}",
        "🏳\u{fe0f}\u{200d}🌈",
        "🏴\u{e0067}\u{e0062}\u{e0073}\u{e0063}\u{e0074}\u{e007f}",
        "क्\u{200d}ष",
        &format!("a{}", "\u{301}".repeat(30)),
    ] {
        let resp = client.post(&pets, &format!(r#"{{"name":"{name}","categoryId":1}}"#)).await;
        assert_eq!(resp.status(), 201, "{name}");
        assert_eq!(json(resp).await["name"], name, "kept as sent");
    }
}

#[test]
fn key_names_follow_the_rule_for_names_people_type() {
    let db = Db::sqlite();
    for (name, rule) in [
        ("ok\u{202e}gnp.exe", "bidirectional control"),
        ("ok\u{2028}fake line", "line or paragraph separator"),
        ("\u{2800}", "visible character"),
        ("\u{301}ci", "combining mark"),
    ] {
        let out = db.run(&["keys", "create", "--plan", "free", "--name", name]);
        assert_eq!(out.status.code(), Some(2), "{name:?} is refused");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("key name must") && stderr.contains(rule), "{name:?}: {stderr}");
        assert!(out.stdout.is_empty(), "no key printed");
    }
    let out = db.run(&["keys", "list"]);
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stdout).contains("ok"), "nothing issued");
    for name in ["storefront 🇫🇷", "José's bot", "می\u{200c}خواهم"] {
        let out = db.run(&["keys", "create", "--plan", "free", "--name", name]);
        assert!(out.status.success(), "{name:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

#[tokio::test]
async fn animals_stored_under_a_looser_rule_stay_readable() {
    use sea_orm::ConnectionTrait;
    let db = Db::sqlite();
    let key = db.key("pro");
    let server = db.start();
    let admin = sea_orm::Database::connect(&db.url).await.expect("open the database");
    admin
        .execute_unprepared(
            "INSERT INTO pets (name, category_id, status) VALUES ('⠀', 1, 'available')",
        )
        .await
        .expect("a pet named as an older rule allowed");
    admin.close().await.expect("close");
    let client = Client::new(&key);
    let listed = list_all(&client, &server).await;
    assert_eq!(listed.values().map(|pet| pet["name"].clone()).collect::<Vec<_>>(), ["\u{2800}"]);
    let id = listed.keys().next().expect("one pet");
    let resp = client.get(&server.url(&format!("/v1/pets/{id}"))).await;
    assert_eq!(resp.status(), 200);
}
