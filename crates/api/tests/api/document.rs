//! The OpenAPI document and the docs page, served without a key.

use animal_store_api::ApiConfig;
use poem::http::{Method, StatusCode};
use serde_json::json;

use crate::helpers::*;

#[tokio::test]
async fn every_operation_has_an_id_of_its_own() {
    let h = Harness::new().await;
    let doc = h.send(Method::GET, "/v1/openapi.json", None, None).await.body;
    let mut ids: Vec<&str> = doc["paths"]
        .as_object()
        .expect("paths")
        .values()
        .flat_map(|path| path.as_object().expect("a path item").values())
        .filter_map(|operation| operation["operationId"].as_str())
        .collect();
    let count = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), count, "an operationId given twice: {ids:?}");
    assert!(count >= 10, "{count} operations");
}

#[tokio::test]
async fn the_document_describes_the_pet_operations() {
    let h = Harness::new().await;
    let reply = h.send(Method::GET, "/v1/openapi.json", None, None).await;
    assert_eq!(reply.status, StatusCode::OK);
    let doc = reply.body;
    assert_eq!(doc["info"]["version"], "1.0.0");
    // First the server that served the document, for the docs page's "Try it out"; then
    // production and staging.
    let servers: Vec<&str> = doc["servers"]
        .as_array()
        .expect("servers")
        .iter()
        .filter_map(|s| s["url"].as_str())
        .collect();
    let config = ApiConfig::default();
    assert_eq!(servers, ["/v1", config.production_url.as_str(), config.staging_url.as_str()]);
    assert_eq!(doc["paths"]["/pets"]["get"]["operationId"], "listPets");
    assert_eq!(doc["paths"]["/pets"]["post"]["operationId"], "createPet");
    let get_pet = &doc["paths"]["/pets/{petId}"]["get"];
    assert_eq!(get_pet["operationId"], "getPet");
    assert_eq!(get_pet["deprecated"], true);
    assert!(get_pet["responses"]["200"]["headers"]["Sunset"].is_object());
    for op in [&doc["paths"]["/pets"]["get"], &doc["paths"]["/pets"]["post"], get_pet] {
        assert_eq!(op["tags"], json!(["animals"]));
        assert!(op["security"].is_array(), "every operation requires the bearer key");
        assert!(op["responses"]["401"].is_object());
    }
    assert_eq!(doc["components"]["securitySchemes"]["BearerKey"]["scheme"], "bearer");
    assert_eq!(
        doc["paths"]["/pets"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/Pets"
    );
    assert_eq!(doc["components"]["schemas"]["Pets"]["items"]["$ref"], "#/components/schemas/Pet");
    assert_eq!(
        doc["components"]["schemas"]["NewPet"]["properties"]["status"]["default"],
        "available"
    );
    assert_eq!(
        doc["paths"]["/pets"]["get"]["responses"]["400"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/Error"
    );

    let docs = h.send(Method::GET, "/v1/docs", None, None).await;
    assert_eq!(docs.status, StatusCode::OK);
    let html = docs.body.as_str().expect("html");
    assert!(
        html.contains("SwaggerUIBundle") && html.contains("x-stability"),
        "the page shows the completed document"
    );
}
