//! The OpenAPI document and the docs page (`docs/api.md#basics`).
//!
//! poem-openapi generates the document from the operations. What the middleware adds to
//! responses it cannot see, so [`document`] writes it in afterwards, from the table of
//! operations (`operations/table.rs`): the headers of a deprecated operation on every one of
//! its responses, the scope a key needs (`x-scope`), and the stability marker of every
//! operation (`x-stability`, which poem-openapi has no attribute for) with the
//! `API-Stability` header of the beta and experimental ones.

mod examples;
mod generators;
pub mod pages;
pub mod published;
mod responses;

use poem_openapi::{ContactObject, LicenseObject, OpenApiService, ServerObject};
use serde_json::{Value, json};

use crate::operations::state::ApiConfig;
use crate::operations::{
    AccountApi, Caching, EventsApi, Operation, Operations, OrdersApi, PetsApi, WebhooksApi,
};
use crate::wire::stability::Stability;
use animal_store_domain::Scope;
use responses::{
    add_cache_headers, add_deprecation_headers, add_entity_tags, add_forbidden,
    add_rate_limit_headers, add_too_many_requests, canonical_header_names, header,
};

/// The version of the API description.
pub const API_VERSION: &str = "1.0.0";

/// The path every operation's address starts with.
pub const PREFIX: &str = "/v1";

/// The operations, whose attributes poem-openapi reads for both their routes and the document.
const OPERATIONS: Operations = (PetsApi, OrdersApi, EventsApi, WebhooksApi, AccountApi);

/// The poem-openapi service: the operations and their generated description.
pub fn service(config: &ApiConfig) -> OpenApiService<Operations, ()> {
    OpenApiService::new(OPERATIONS, "Animal Store API", API_VERSION)
        .description(
            "Keep the catalogue of animals of a pet store: list them, add them, get one by id, \
             change and remove them, count them by status; reserve them with orders; read what \
             changed as events, or have it posted to your webhook endpoints. Every operation needs an API key sent as `Authorization: Bearer <API_KEY>`. Every \
             error answers with the `Error` body. The version is part of the path: every \
             address ends in `/v1`.",
        )
        .contact(
            ContactObject::new()
                .name("Animal Store API support")
                .url("https://animal-store.example/support")
                .email("api@animal-store.example"),
        )
        .license(LicenseObject::new("MIT OR Apache-2.0").url("https://spdx.org/licenses/MIT.html"))
        .server(ServerObject::new(&config.production_url).description("Production"))
        .server(ServerObject::new(&config.staging_url).description("Staging"))
}

/// The complete document: generated, then completed with what the middleware does. Without
/// `experimental`, the experimental operations are left out, with the schemas only they use.
pub fn document(service: &OpenApiService<Operations, ()>, experimental: bool) -> Value {
    let mut document: Value = serde_json::from_str(&service.spec()).unwrap_or_else(|err| {
        tracing::error!(error = %err, "poem-openapi produced an unreadable document");
        Value::Null
    });
    for (_, operation) in operations_by_method(&mut document) {
        let Some(entry) = operation["operationId"].as_str().and_then(Operation::of) else {
            tracing::error!(operation = %operation["operationId"], "an operation the table lacks");
            continue;
        };
        operation[crate::operations::routes::SCOPE_EXTENSION] = json!(entry.scope.name());
        if entry.scope == Scope::Write {
            add_forbidden(operation);
        }
        let takes_idempotency_key = entry.idempotent;
        let conditional = entry.caching == Caching::Revalidated;
        if conditional {
            add_entity_tags(operation);
        }
        let stability = entry.stability;
        operation["x-stability"] = json!(stability.as_str());
        add_too_many_requests(operation);
        add_cache_headers(operation, conditional);
        for response in responses(operation) {
            canonical_header_names(response);
            add_rate_limit_headers(response);
            if takes_idempotency_key {
                response["headers"]["Idempotent-Replayed"] = json!({
                    "description": "`true` on a response sent again to a retry with the same \
                                    `Idempotency-Key`; absent otherwise.",
                    "required": false,
                    "schema": {"type": "string", "enum": ["true"]},
                    "example": "true",
                });
            }
            if stability != Stability::Stable {
                header(
                    response,
                    "API-Stability",
                    "How far the operation may still change: `beta` or `experimental`.",
                    stability.as_str(),
                );
            }
        }
        if let Some(deprecation) = entry.deprecation {
            for response in responses(operation) {
                add_deprecation_headers(response, deprecation);
            }
        }
    }
    name_listing(
        &mut document,
        "/pets",
        "Pets",
        "An array of Pet objects: the body of a list response.",
    );
    name_listing(
        &mut document,
        "/store/orders",
        "Orders",
        "An array of Order objects: the body of a list of orders.",
    );
    name_listing(
        &mut document,
        "/events",
        "Events",
        "An array of Event objects, oldest first: the body of a list of events.",
    );
    plain_references(&mut document);
    plain_json_media_type(&mut document);
    examples::add(&mut document);
    if !experimental {
        leave_out(&mut document, Stability::Experimental);
    }
    document
}

/// The document as clients read it: [`document`], which the routes are read from, with what
/// makes it read well by client generators ([`generators`]).
pub fn published(mut document: Value) -> Value {
    generators::for_generators(&mut document);
    document
}

/// The document as the service serves it: first in `servers`, the address it is served from
/// (`/v1`, relative to the document's own address), so that the docs page's "Try it out"
/// calls the server that served the page; then production and staging. `animal-store
/// openapi` and `docs/openapi.json` list production and staging only.
pub fn served(mut document: Value) -> Value {
    let this =
        json!({"url": "/v1", "description": "This server: the one that served this document"});
    if let Some(servers) = document["servers"].as_array_mut() {
        servers.insert(0, this);
    }
    document
}

/// Removes the operations of `stability`, the paths left without one, and the schemas
/// nothing refers to any more.
fn leave_out(document: &mut Value, stability: Stability) {
    if let Some(paths) = document["paths"].as_object_mut() {
        for item in paths.values_mut().filter_map(Value::as_object_mut) {
            item.retain(|_, operation| operation["x-stability"] != stability.as_str());
        }
        paths.retain(|_, item| item.as_object().is_some_and(|item| !item.is_empty()));
    }
    let mut used = std::collections::BTreeSet::new();
    let mut pending = vec![document["paths"].clone()];
    while let Some(value) = pending.pop() {
        for name in references(&value) {
            if used.insert(name.clone()) {
                pending.push(document["components"]["schemas"][&name].clone());
            }
        }
    }
    if let Some(schemas) = document["components"]["schemas"].as_object_mut() {
        schemas.retain(|name, _| used.contains(name));
    }
}

/// The names of the schemas `value` refers to (`#/components/schemas/NAME`).
fn references(value: &Value) -> Vec<String> {
    match value {
        Value::Object(object) => object
            .iter()
            .flat_map(|(key, value)| match (key.as_str(), value.as_str()) {
                ("$ref", Some(target)) => target
                    .strip_prefix("#/components/schemas/")
                    .map(str::to_owned)
                    .into_iter()
                    .collect(),
                _ => references(value),
            })
            .collect(),
        Value::Array(items) => items.iter().flat_map(references).collect(),
        _ => Vec::new(),
    }
}

/// poem-openapi wraps a property that refers to another schema in `allOf` to attach its
/// description: `allOf: [{$ref}, {description, default}]`. OpenAPI 3.0 ignores anything beside
/// a `$ref`, so a property with a description or a default of its own keeps an `allOf` of the
/// reference alone, its description and default beside it; the second member, a schema
/// without a type, goes (client generators such as openapi-python-client refuse an `allOf`
/// that mixes an enumeration with it). A bare wrapper becomes a plain `$ref`. Enumerations and
/// arrays get no `properties`: indexing a `serde_json` value would add a `null` one.
fn plain_references(document: &mut Value) {
    let schemas =
        document["components"]["schemas"].as_object_mut().into_iter().flat_map(|s| s.values_mut());
    for property in schemas.flat_map(|schema| {
        schema
            .get_mut("properties")
            .and_then(Value::as_object_mut)
            .into_iter()
            .flat_map(|p| p.values_mut())
    }) {
        let Some(object) = property.as_object_mut() else { continue };
        let Some(Value::Array(members)) = object.get_mut("allOf") else { continue };
        members.retain(|member| member.get("$ref").is_some());
        let reference =
            members.first().and_then(|member| member["$ref"].as_str()).map(str::to_owned);
        if let (Some(reference), 1) = (reference, object.len()) {
            object.remove("allOf");
            object.insert("$ref".to_owned(), json!(reference));
        }
    }
}

/// Bodies are `application/json` (sent with `; charset=utf-8`, which JSON needs no more
/// than it allows); the document names the media type plainly.
fn plain_json_media_type(document: &mut Value) {
    for operation in operations(document) {
        let Some(operation) = operation.as_object_mut() else {
            continue;
        };
        let mut contents = Vec::new();
        for (part, value) in operation.iter_mut() {
            match part.as_str() {
                "requestBody" => contents.extend(value.get_mut("content")),
                "responses" => {
                    let responses = value.as_object_mut().into_iter().flat_map(|r| r.values_mut());
                    contents.extend(responses.filter_map(|r| r.get_mut("content")));
                }
                _ => {}
            }
        }
        for content in contents.into_iter().filter_map(Value::as_object_mut) {
            if let Some(media) = content.remove("application/json; charset=utf-8") {
                content.insert("application/json".to_owned(), media);
            }
        }
    }
}

/// The contract names the body of a listing `Pets`, an array of `Pet`; poem-openapi writes
/// the array inline. Name it (and the listing of orders, `Orders`), and point the listing at
/// the name.
fn name_listing(document: &mut Value, path: &str, name: &str, description: &str) {
    let Some(listing) = document["paths"]
        .get_mut(path)
        .and_then(|item| item.get_mut("get"))
        .and_then(|operation| operation["responses"].get_mut("200"))
        .and_then(|response| response.get_mut("content"))
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    let Some(media) = listing.values_mut().next() else { return };
    let reference = json!({"$ref": format!("#/components/schemas/{name}")});
    let mut array = std::mem::replace(&mut media["schema"], reference);
    array["description"] = json!(description);
    document["components"]["schemas"][name] = array;
}

/// The docs page: Swagger UI, bundled in the binary (it works offline), showing `document`.
pub fn docs_page(service: &OpenApiService<Operations, ()>, document: &str) -> String {
    // The page embeds the generated document verbatim; swap in the completed one.
    service.swagger_ui_html().replacen(&service.spec(), document, 1)
}

/// Every operation, with its method.
fn operations_by_method(
    document: &mut Value,
) -> impl Iterator<Item = (poem::http::Method, &mut Value)> {
    document["paths"]
        .as_object_mut()
        .into_iter()
        .flat_map(|paths| paths.values_mut())
        .filter_map(Value::as_object_mut)
        .flat_map(|item| item.iter_mut())
        .filter_map(|(method, operation)| {
            let method = poem::http::Method::from_bytes(method.to_ascii_uppercase().as_bytes());
            Some((method.ok()?, operation))
        })
}

fn operations(document: &mut Value) -> impl Iterator<Item = &mut Value> {
    operations_by_method(document).map(|(_, operation)| operation)
}

fn responses(operation: &mut Value) -> impl Iterator<Item = &mut Value> {
    operation["responses"].as_object_mut().into_iter().flat_map(|r| r.values_mut())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::Value;

    use poem::http::Method;

    use crate::operations::state::ApiConfig;
    use animal_store_domain::Scope;

    use crate::operations::{Caching, OPERATIONS, Operation};
    use crate::wire::stability::Stability;

    /// The document's operations, each with its method and path.
    fn documented() -> Vec<(String, Method, String, Value)> {
        let service = super::service(&ApiConfig::default());
        let document = super::document(&service, true);
        let mut found = Vec::new();
        for (path, item) in document["paths"].as_object().expect("paths") {
            for (method, operation) in item.as_object().expect("a path item") {
                let method = Method::from_bytes(method.to_ascii_uppercase().as_bytes()).expect("m");
                let id = operation["operationId"].as_str().expect("an id").to_owned();
                found.push((id, method, format!("/v1{path}"), operation.clone()));
            }
        }
        found
    }

    fn declares(operation: &Value, header: &str) -> bool {
        operation["parameters"].as_array().into_iter().flatten().any(|p| {
            p["in"] == "header"
                && p["name"].as_str().is_some_and(|n| n.eq_ignore_ascii_case(header))
        })
    }

    #[test]
    fn the_table_says_what_the_generated_operations_declare() {
        let documented = documented();
        let ids = |ids: Vec<&str>| ids.into_iter().map(str::to_owned).collect::<BTreeSet<_>>();
        assert_eq!(
            ids(documented.iter().map(|(id, ..)| id.as_str()).collect()),
            ids(OPERATIONS.iter().map(|op| op.id).collect()),
            "one entry for each operation"
        );
        for (id, method, path, operation) in &documented {
            let entry = Operation::of(id).expect("an entry");
            assert_eq!((&entry.method, entry.path), (method, path.as_str()), "{id}");
            let summary = operation["summary"].as_str().expect("a summary");
            assert_eq!(Stability::of_summary(summary).0, entry.stability, "{id}: {summary}");
            assert_eq!(operation["deprecated"] == true, entry.deprecation.is_some(), "{id}");
            let changes_nothing = *method == Method::GET;
            assert_eq!(entry.scope, if changes_nothing { Scope::Read } else { Scope::Write });
            assert_eq!(declares(operation, "Idempotency-Key"), entry.idempotent, "{id}");
            let revalidated = changes_nothing && declares(operation, "If-None-Match");
            assert_eq!(revalidated, entry.caching == Caching::Revalidated, "{id}");
            let types = operation["requestBody"]["content"]
                .as_object()
                .map(|content| content.keys().map(String::as_str).collect::<Vec<_>>().join(", "));
            let patch_types = (*method == Method::PATCH).then_some(types).flatten();
            assert_eq!(patch_types.as_deref(), entry.patch_types, "{id}");
        }
    }
}
