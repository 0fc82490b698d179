//! What makes the document read well by client generators (openapi-python-client,
//! openapi-typescript...), applied once it is complete:
//!
//! - a body taken as a JSON merge patch is declared under `application/merge-patch+json`
//!   alone, so that a generated client sends one (the service still takes
//!   `application/json`, `docs/api.md#updatepet-patch-v1petspetid-experimental`);
//! - the event types an endpoint selects, `"*"` among them, are one shared schema,
//!   `EventSelector`, with `x-enum-varnames` naming `"*"` `ALL`.

use serde_json::{Value, json};

/// The name of the shared schema of the event types an endpoint selects.
const EVENT_SELECTOR: &str = "EventSelector";

/// Applies both rules to `document`.
pub(super) fn for_generators(document: &mut Value) {
    merge_patch_alone(document);
    shared_event_selector(document);
}

/// Leaves `application/merge-patch+json` alone where a body declares it beside
/// `application/json`.
fn merge_patch_alone(document: &mut Value) {
    let Some(paths) = document["paths"].as_object_mut() else { return };
    for operation in
        paths.values_mut().filter_map(Value::as_object_mut).flat_map(|item| item.values_mut())
    {
        if let Some(content) =
            operation.pointer_mut("/requestBody/content").and_then(Value::as_object_mut)
            && content.contains_key("application/merge-patch+json")
        {
            content.retain(|media_type, _| media_type != "application/json");
        }
    }
}

/// Replaces each inline enum of event types that holds `"*"` by a reference to one
/// `EventSelector` schema, and so the event types an endpoint's answers list (strings).
fn shared_event_selector(document: &mut Value) {
    let Some(schemas) = document["components"]["schemas"].as_object_mut() else { return };
    let mut selector = None;
    let mut listed = Vec::new();
    for (name, schema) in schemas.iter_mut() {
        // Read with `pointer_mut`: indexing would add the keys it looks for.
        let Some(items) = schema.pointer_mut("/properties/events/items") else { continue };
        if items["enum"].as_array().is_some_and(|values| values.contains(&json!("*"))) {
            selector.get_or_insert_with(|| items.clone());
            *items = json!({"$ref": format!("#/components/schemas/{EVENT_SELECTOR}")});
        } else if items == &json!({"type": "string"}) {
            listed.push(name.clone());
        }
    }
    let Some(mut selector) = selector else { return };
    for name in listed {
        if let Some(items) = schemas[&name].pointer_mut("/properties/events/items") {
            *items = json!({"$ref": format!("#/components/schemas/{EVENT_SELECTOR}")});
        }
    }
    let names: Vec<String> = selector["enum"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|value| match value {
            "*" => "ALL".to_owned(),
            value => value.replace('.', "_").to_uppercase(),
        })
        .collect();
    selector["description"] = json!("An event type an endpoint gets, or `*` for every type.");
    selector["x-enum-varnames"] = json!(names);
    selector["example"] = json!("pet.created");
    schemas.insert(EVENT_SELECTOR.to_owned(), selector);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_patch_stands_alone_and_selectors_are_one_named_schema() {
        let mut document = json!({
            "paths": {"/pets/{petId}": {"patch": {"requestBody": {"content": {
                "application/merge-patch+json": {}, "application/json": {}}}}}},
            "components": {"schemas": {
                "New": {"properties": {"events": {"items": {"type": "string", "enum": ["*", "pet.created"]}}}},
                "Update": {"properties": {"events": {"items": {"type": "string", "enum": ["*", "pet.created"]}}}},
                "Endpoint": {"properties": {"events": {"items": {"type": "string"}}}},
            }},
        });
        for_generators(&mut document);
        let content = &document["paths"]["/pets/{petId}"]["patch"]["requestBody"]["content"];
        assert_eq!(content, &json!({"application/merge-patch+json": {}}));
        let reference = json!({"$ref": "#/components/schemas/EventSelector"});
        for name in ["New", "Update", "Endpoint"] {
            assert_eq!(
                document["components"]["schemas"][name]["properties"]["events"]["items"],
                reference
            );
        }
        let selector = &document["components"]["schemas"]["EventSelector"];
        assert_eq!(selector["x-enum-varnames"], json!(["ALL", "PET_CREATED"]));
        assert_eq!(selector["enum"], json!(["*", "pet.created"]));
    }
}
