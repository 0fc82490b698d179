//! The bodies of the `animals` operations: `Pet` and `PetStatus` in responses, `NewPet` in
//! requests.
//!
//! A body that is not JSON at all is rejected by poem-openapi before the handler runs
//! (`invalid_request`). Anything that is JSON reaches [`NewPetBody`], which never fails to
//! parse: it holds either a valid [`NewPet`] or the list of every problem found, each naming
//! its field, so that one response tells the client everything to fix. Unknown fields, `id`
//! included, are ignored; an explicit `null` is refused, as no field of the schema is
//! nullable.

use std::sync::OnceLock;

use animal_store_domain::{CategoryId, NewPet, Pet, PetName, PetStatus};
use poem_openapi::registry::{MetaSchema, MetaSchemaRef, Registry};
use poem_openapi::types::{ParseFromJSON, ParseResult, Type};
use poem_openapi::{Enum, Object};
use serde_json::Value;

use crate::error::ApiError;
use crate::wire::field::{BodyValue, Field, ParseContext, all_three, kind, object_body};
use crate::wire::params::Documented;

/// Availability status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Enum, serde::Serialize)]
#[oai(rename = "PetStatus", rename_all = "lowercase")]
#[serde(rename_all = "lowercase")]
pub enum PetStatusDto {
    /// Animal is available.
    #[default]
    Available,
    /// Animal is pending.
    Pending,
    /// Animal is sold.
    Sold,
}

impl From<PetStatus> for PetStatusDto {
    fn from(status: PetStatus) -> Self {
        match status {
            PetStatus::Available => Self::Available,
            PetStatus::Pending => Self::Pending,
            PetStatus::Sold => Self::Sold,
        }
    }
}

/// An animal of the store.
#[derive(Debug, Clone, PartialEq, Eq, Object, serde::Serialize)]
#[oai(rename = "Pet", rename_all = "camelCase")]
#[serde(rename_all = "camelCase")]
pub struct PetBody {
    /// Unique identifier assigned by the service on creation.
    id: i64,
    /// The animal's name.
    name: String,
    /// Id of the category the animal belongs to.
    category_id: i64,
    /// Availability status; always present in responses.
    status: Option<PetStatusDto>,
}

impl From<Pet> for PetBody {
    fn from(pet: Pet) -> Self {
        // Every field named: a field added to `Pet` does not compile until it is sent.
        let Pet { id, name, category_id, status } = pet;
        Self {
            id: id.get(),
            name: name.into_string(),
            category_id: category_id.get(),
            status: Some(status.into()),
        }
    }
}

// This one struct is the `NewPet` schema of the document and the parser of `createPet`
// bodies: each field's schema and rules come from its domain type (see `BodyValue`). Its doc
// comment is the schema's description.

/// An animal to add. The service assigns its `id`; an `id` sent here is ignored.
#[derive(Debug, Object)]
#[oai(rename = "NewPet", rename_all = "camelCase")]
pub struct NewPetSchema {
    name: Field<PetName>,
    category_id: Field<CategoryId>,
    status: Field<PetStatus>,
}

impl NewPetSchema {
    /// The new pet, or every problem with the body, each naming its field.
    pub fn into_new_pet(self, context: &ParseContext) -> Result<NewPet, ApiError> {
        let Self { name, category_id, status } = self;
        let (name, category_id, status) = all_three(
            name.parse("name", context),
            category_id.parse("categoryId", context),
            status.parse("status", context),
        )?;
        Ok(NewPet { name, category_id, status })
    }
}

/// A `createPet` body, documented as `NewPet`: its fields as the client sent them, or, when
/// it is not a JSON object, the error saying so. The operation then parses the fields with
/// [`NewPetSchema::into_new_pet`], in the request's [`ParseContext`].
pub type NewPetBody = Documented<NewPetSchema, Result<NewPetSchema, ApiError>>;

impl ParseFromJSON for NewPetBody {
    fn parse_from_json(value: Option<Value>) -> ParseResult<Self> {
        Ok(Self::new(object_body(value)))
    }
}

/// A description built once from the domain's constants, for the life of the process.
fn description(cell: &'static OnceLock<String>, text: impl FnOnce() -> String) -> &'static str {
    cell.get_or_init(text).as_str()
}

impl BodyValue for PetName {
    const REQUIRED: bool = true;

    fn schema() -> MetaSchemaRef {
        static DESCRIPTION: OnceLock<String> = OnceLock::new();
        MetaSchemaRef::Inline(Box::new(MetaSchema {
            description: Some(description(&DESCRIPTION, || {
                format!(
                    "The animal's name: 1 to {} characters with a visible one among them; no \
                     control, bidirectional control, line or paragraph separator, unassigned, \
                     private-use or noncharacter code points; no invisible code points (U+200B...) \
                     code points but for variation selectors and the joiners of scripts and \
                     emoji sequences; combining marks only after a base character, at most 30 \
                     in a row.",
                    PetName::MAX_CHARS
                )
            })),
            min_length: Some(1),
            max_length: Some(PetName::MAX_CHARS),
            // What a regular expression can say of the rule: no control characters, and one
            // that is neither a control nor a space. The rest is in the description.
            pattern: Some(
                "^[^\\u0000-\\u001F\\u007F-\\u009F]*[^\\u0000-\\u0020\\u007F-\\u009F]\
                 [^\\u0000-\\u001F\\u007F-\\u009F]*$"
                    .to_owned(),
            ),
            ..MetaSchema::new("string")
        }))
    }

    fn from_json(name: &str, json: &Value, _: &ParseContext) -> Result<Self, String> {
        match json {
            Value::String(text) => PetName::new(text).map_err(|e| e.to_string()),
            other => Err(format!("{name} must be a string, got {}", kind(other))),
        }
    }
}

impl BodyValue for CategoryId {
    const REQUIRED: bool = true;

    fn schema() -> MetaSchemaRef {
        static DESCRIPTION: OnceLock<String> = OnceLock::new();
        #[allow(clippy::cast_precision_loss, reason = "a small constant")]
        let minimum = CategoryId::MIN as f64;
        MetaSchemaRef::Inline(Box::new(MetaSchema {
            format: Some("int64"),
            description: Some(description(&DESCRIPTION, || {
                format!(
                    "Id of the category the animal belongs to. Categories are not modelled: any \
                     id of at least {} is accepted.",
                    CategoryId::MIN
                )
            })),
            minimum: Some(minimum),
            ..MetaSchema::new("integer")
        }))
    }

    fn from_json(name: &str, json: &Value, _: &ParseContext) -> Result<Self, String> {
        match json {
            Value::Number(n) => match n.as_i64() {
                Some(id) => CategoryId::new(id).map_err(|e| e.to_string()),
                None => Err(format!("{name} must be an int64 integer, got {n}")),
            },
            other => Err(format!("{name} must be an integer, got {}", kind(other))),
        }
    }
}

impl BodyValue for PetStatus {
    const REQUIRED: bool = false;

    fn schema() -> MetaSchemaRef {
        PetStatusDto::schema_ref().merge(MetaSchema {
            description: Some("Availability status."),
            default: Some(Value::from(PetStatus::default().as_str())),
            ..MetaSchema::ANY
        })
    }

    fn register(registry: &mut Registry) {
        PetStatusDto::register(registry);
    }

    fn absent() -> Option<Self> {
        Some(Self::default())
    }

    fn from_json(name: &str, json: &Value, _: &ParseContext) -> Result<Self, String> {
        match json {
            Value::String(text) => text.parse::<PetStatus>().map_err(|e| e.to_string()),
            other => Err(format!(
                "{name} must be one of {}; got {}",
                PetStatus::spellings(),
                kind(other)
            )),
        }
    }
}

/// Parses a `NewPet` body exactly as `createPet` does, at `now`: the pet, or the message of
/// the 400 the API would answer. For tools that load pets from elsewhere (fixtures).
///
/// # Errors
///
/// The message naming every field at fault.
pub fn parse_new_pet(
    json: serde_json::Value,
    now: std::time::SystemTime,
) -> Result<animal_store_domain::NewPet, String> {
    use poem_openapi::types::ParseFromJSON;
    let context = super::field::ParseContext { now };
    NewPetBody::parse_from_json(Some(json))
        .map_err(poem_openapi::types::ParseError::into_message)?
        .into_inner()
        .and_then(|fields| fields.into_new_pet(&context))
        .map_err(|err| err.body().message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(value: &Value) -> Result<NewPet, String> {
        let context = ParseContext { now: std::time::SystemTime::now() };
        NewPetBody::parse_from_json(Some(value.clone()))
            .map_err(|_| "parse failed".to_owned())?
            .into_inner()
            .and_then(|fields| fields.into_new_pet(&context))
            .map_err(|e| e.body().message)
    }

    /// A valid value for a property of the document, read off its schema alone.
    fn sample(property: &Value, schemas: &Value) -> Value {
        if let Some(default) = property.get("default") {
            return default.clone();
        }
        if let Some(name) = property["$ref"].as_str() {
            let name = name.trim_start_matches("#/components/schemas/");
            return schemas[name]["enum"][0].clone();
        }
        match (property["type"].as_str(), property["format"].as_str()) {
            (Some("string"), Some("date")) => Value::from("2021-04-01"),
            (Some("string"), Some("date-time")) => Value::from("2021-04-01T12:00:00Z"),
            (Some("string"), _) => {
                let min = property["minLength"].as_u64().unwrap_or(1);
                Value::from("x".repeat(usize::try_from(min).unwrap()))
            }
            #[allow(clippy::cast_possible_truncation, reason = "a schema's small minimum")]
            (Some("integer"), _) => Value::from(property["minimum"].as_f64().unwrap_or(0.0) as i64),
            other => panic!("no sample for a property of type and format {other:?}"),
        }
    }

    /// The parser and the schema are one: every property of `NewPet` in the document is read
    /// under its name, a required one is required, and nothing else is read.
    #[test]
    fn the_parser_reads_exactly_the_fields_of_the_schema() {
        let mut registry = Registry::new();
        NewPetSchema::register(&mut registry);
        let schemas = serde_json::to_value(&registry.schemas).unwrap();
        let schema = &schemas["NewPet"];
        let properties = schema["properties"].as_object().unwrap();
        let required: Vec<&str> =
            schema["required"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        let full: serde_json::Map<String, Value> =
            properties.iter().map(|(name, p)| (name.clone(), sample(p, &schemas))).collect();
        assert!(parse(&Value::Object(full.clone())).is_ok(), "samples of every field: {full:?}");

        for name in properties.keys() {
            let mut without = full.clone();
            without.remove(name);
            let parsed = parse(&Value::Object(without));
            if required.contains(&name.as_str()) {
                assert_eq!(parsed.unwrap_err(), format!("{name} is required"));
            } else {
                assert!(parsed.is_ok(), "{name} is optional");
            }
            let mut null = full.clone();
            null.insert(name.clone(), Value::Null);
            let problem = parse(&Value::Object(null)).unwrap_err();
            assert!(problem.starts_with(&format!("{name} ")), "{name}: {problem}");
        }
        let mut extra = full.clone();
        extra.insert("notInTheSchema".into(), Value::Null);
        assert!(parse(&Value::Object(extra)).is_ok(), "fields outside the schema are ignored");
    }

    #[test]
    fn a_full_body_is_accepted_and_status_defaults_to_available() {
        let pet = parse(&json!({"name": "Rex", "categoryId": 3})).unwrap();
        assert_eq!(
            (pet.name.as_str(), pet.category_id.get(), pet.status),
            ("Rex", 3, PetStatus::Available)
        );
        let pet =
            parse(&json!({"name": "Rex", "categoryId": 3, "status": "sold", "id": 99, "x": 1}))
                .unwrap();
        assert_eq!(pet.status, PetStatus::Sold);
    }

    #[test]
    fn every_problem_is_reported_with_its_field() {
        assert_eq!(parse(&json!({})).unwrap_err(), "name is required; categoryId is required");
        assert_eq!(
            parse(&json!({"name": null, "categoryId": "1", "status": null})).unwrap_err(),
            "name must be a string, got null; categoryId must be an integer, got a string; \
             status must be one of available, pending, sold; got null"
        );
        assert_eq!(
            parse(&json!({"name": "Rex", "categoryId": 1.5})).unwrap_err(),
            "categoryId must be an int64 integer, got 1.5"
        );
        assert!(
            parse(&json!({"name": " ", "categoryId": 0}))
                .unwrap_err()
                .starts_with("name must not be blank; categoryId")
        );
    }

    #[test]
    fn a_body_that_is_not_an_object_is_an_invalid_request() {
        let err =
            NewPetBody::parse_from_json(Some(json!([1]))).ok().unwrap().into_inner().unwrap_err();
        assert_eq!(err.code(), crate::error::ErrorCode::InvalidRequest);
    }
}
