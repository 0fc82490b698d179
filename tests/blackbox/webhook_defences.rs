//! The webhooks' defences against a careless customer or a stolen key: only public
//! addresses, with one refusal that tells nothing of the operator's network; deliveries
//! that end with their key's line; slots shared fairly between owners; attempts kept as
//! long as their events and no longer.

use serde_json::json;

use crate::harness::{Client, Db, json};
use crate::webhooks::register;

/// Addresses that IANA's special-purpose registries do not mark globally reachable are
/// refused, in IPv4 and IPv6, as are the IPv6 forms that carry a refused IPv4 address; a
/// URL's limits are those of the URL as stored; and every refusal of an address is the same
/// message, naming no address and not telling a name that resolves from one that does not.
#[tokio::test]
async fn only_public_addresses_are_accepted_with_one_refusal() {
    let db = Db::sqlite();
    let client = Client::new(&db.key("business"));
    let server = db.start();
    let spaced = format!("https://93.184.215.14/a{}b", " ".repeat(1000));
    let mut refusals = std::collections::BTreeSet::new();
    for url in [
        "https://192.0.0.192/",
        "https://192.0.2.1/",
        "https://198.18.0.1/",
        "https://198.51.100.1/",
        "https://203.0.113.1/",
        "https://[::ffff:0:a00:1]/",
        "https://[64:ff9b:1::808:808]/",
        "https://[2002:808:808::1]/",
        "https://[fec0::1]/",
        "https://[100::1]/",
        "https://[2001:db8::1]/",
        "https://localhost/",
        "https://no-such-host.invalid/",
        "https://127.0.0.1/",
        "https://[::ffff:10.0.0.1]/",
    ] {
        let resp = register(&client, &server, &json!({"url": url})).await;
        assert_eq!(resp.status(), 422, "{url}");
        let refusal = json(resp).await;
        assert_eq!(refusal["code"], "validation_failed", "{url}: {refusal}");
        let message = refusal["message"].as_str().expect("a message").to_owned();
        for leak in ["127.0.0.1", "::1", "10.0.0.1", "203.0.113", "resolves to", "not resolve"] {
            assert!(!message.contains(leak), "{url}: {message}");
        }
        refusals.insert(message);
    }
    assert_eq!(refusals.len(), 1, "one refusal for every address: {refusals:?}");
    // Within 2,048 bytes as sent, 3,024 as stored (each space is `%20`); port 0.
    for url in [spaced.as_str(), "https://93.184.215.14:0/"] {
        let refusal = json(register(&client, &server, &json!({"url": url})).await).await;
        assert_eq!(refusal["status"], 422, "{url}: {refusal}");
        assert!(refusal["message"].as_str().is_some_and(|m| m.starts_with("url")), "{refusal}");
    }
    let listed = json(client.get(&server.url("/v1/webhook_endpoints")).await).await;
    assert_eq!(listed, json!([]), "nothing stored");
    // A public address in a NAT64 form is accepted.
    let nat64 = register(&client, &server, &json!({"url": "https://[64:ff9b::5db8:d70e]/"})).await;
    assert_eq!(nat64.status(), 201);
}
