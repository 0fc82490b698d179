//! Stability markers through the real binary: `x-stability` and the summary prefix in the
//! document, `API-Stability` on every response of a beta or experimental operation (errors
//! included), and `--disable-experimental`.

use serde_json::Value;

use crate::harness::{Client, Db, Server, json};

async fn document(server: &Server) -> Value {
    json(reqwest::get(server.url("/v1/openapi.json")).await.expect("the document")).await
}

/// Every operation of the document: (path, method, operation).
fn operations(document: &Value) -> Vec<(String, String, Value)> {
    let paths = document["paths"].as_object().expect("paths");
    paths
        .iter()
        .flat_map(|(path, item)| {
            let methods = item.as_object().expect("a path item").clone();
            methods.into_iter().map(move |(method, op)| (path.clone(), method, op))
        })
        .collect()
}

#[tokio::test]
async fn every_operation_says_how_stable_it_is() {
    let db = Db::sqlite();
    let server = db.start();
    let document = document(&server).await;
    let expected = [
        ("listPets", "stable"),
        ("createPet", "stable"),
        ("getPet", "stable"),
        ("updatePet", "experimental"),
        ("deletePet", "experimental"),
        ("placeOrder", "experimental"),
        ("listOrders", "experimental"),
        ("getOrder", "experimental"),
        ("updateOrder", "beta"),
        ("getInventory", "experimental"),
        ("listEvents", "experimental"),
        ("getEvent", "experimental"),
        ("createWebhookEndpoint", "experimental"),
        ("listWebhookEndpoints", "experimental"),
        ("getWebhookEndpoint", "experimental"),
        ("updateWebhookEndpoint", "experimental"),
        ("deleteWebhookEndpoint", "experimental"),
        ("listWebhookDeliveries", "experimental"),
        ("getRateLimit", "beta"),
    ];
    let found: Vec<(String, String)> = operations(&document)
        .into_iter()
        .map(|(_, _, op)| {
            (
                op["operationId"].as_str().expect("an id").to_owned(),
                op["x-stability"].as_str().expect("a marker").to_owned(),
            )
        })
        .collect();
    for (id, stability) in expected {
        assert!(
            found.contains(&(id.to_owned(), stability.to_owned())),
            "{id} is {stability}: {found:?}"
        );
    }
    assert_eq!(found.len(), expected.len(), "{found:?}");
    for (_, _, op) in operations(&document) {
        let (stability, summary) = (
            op["x-stability"].as_str().expect("a marker"),
            op["summary"].as_str().expect("a summary"),
        );
        if stability == "stable" {
            assert!(!summary.starts_with('['), "{summary}");
        } else {
            assert!(summary.starts_with(&format!("[{stability}] ")), "{summary}");
            for (status, response) in op["responses"].as_object().expect("responses") {
                assert!(response["headers"]["API-Stability"].is_object(), "{summary} {status}");
            }
        }
    }

    // Errors of an experimental operation say so too; stable operations say nothing.
    let stranger = Client::new("as_live_aaaaaaaaaaaa_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    let refused = stranger.get(&server.url("/v1/store/orders")).await;
    assert_eq!(refused.status(), 401);
    assert_eq!(refused.headers()["api-stability"], "experimental");
    let client = Client::new(&db.key("free"));
    let pets = client.get(&server.url("/v1/pets")).await;
    assert!(!pets.headers().contains_key("api-stability"));
}

#[tokio::test]
async fn disabled_experimental_operations_do_not_exist() {
    let db = Db::sqlite();
    let key = db.key("business");
    let server = Server::start(&db.url, db.path().to_path_buf(), &["--disable-experimental"]);
    let client = Client::new(&key);

    let document = document(&server).await;
    let stabilities: Vec<String> = operations(&document)
        .into_iter()
        .map(|(_, _, op)| op["x-stability"].as_str().expect("a marker").to_owned())
        .collect();
    assert!(!stabilities.iter().any(|s| s == "experimental"), "{stabilities:?}");
    assert!(stabilities.iter().any(|s| s == "beta"), "beta operations stay");
    assert!(document["components"]["schemas"].get("NewOrder").is_none(), "nor their schemas");
    assert!(document["paths"].get("/store/orders").is_none());

    for resp in [
        client.get(&server.url("/v1/store/orders")).await,
        client.post(&server.url("/v1/store/orders"), r#"{"petId":1}"#).await,
    ] {
        assert_eq!(resp.status(), 404);
        assert_eq!(json(resp).await["code"], "not_found");
    }
    let get_order = client.get(&server.url("/v1/store/orders/1")).await;
    assert_eq!(get_order.status(), 405, "the path remains for its beta operation");
    assert_eq!(get_order.headers()["allow"], "PATCH");
    let update = client
        .raw()
        .patch(server.url("/v1/store/orders/1"))
        .bearer_auth(&key)
        .header("content-type", "application/json")
        .body(r#"{"status":"cancelled"}"#)
        .send()
        .await
        .expect("a response");
    assert_eq!(update.status(), 404, "served: no such order");
    assert_eq!(json(update).await["message"], "no order has id 1");
    assert_eq!(client.get(&server.url("/v1/pets")).await.status(), 200);

    // The animals' changes and the inventory are experimental too.
    for schema in ["PetPatch", "Inventory"] {
        assert!(document["components"]["schemas"].get(schema).is_none(), "{schema}");
    }
    let inventory = client.get(&server.url("/v1/store/inventory")).await;
    assert_eq!(inventory.status(), 404);
    let delete = client.raw().delete(server.url("/v1/pets/1")).bearer_auth(&key).send().await;
    let delete = delete.expect("a response");
    assert_eq!(delete.status(), 405, "getPet is served on the path");
    assert_eq!(delete.headers()["allow"], "GET, HEAD");
}
