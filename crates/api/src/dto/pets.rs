//! The bodies of the `animals` operations: `Pet` and `PetStatus` in responses, `NewPet` in
//! requests.
//!
//! A body that is not JSON at all is rejected by poem-openapi before the handler runs
//! (`invalid_request`). Anything that is JSON reaches [`NewPetBody`], which never fails to
//! parse: it holds either a valid [`NewPet`] or the list of every problem found, each naming
//! its field, so that one response tells the client everything to fix. Unknown fields, `id`
//! included, are ignored; an explicit `null` is refused, as no field of the schema is
//! nullable.

use animal_store_domain::{CategoryId, NewPet, Pet, PetName, PetStatus};
use poem_openapi::types::{ParseFromJSON, ParseResult};
use poem_openapi::{Enum, Object};
use serde_json::{Map, Value};

use crate::dto::params::Documented;
use crate::error::ApiError;

/// Availability status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Enum)]
#[oai(rename = "PetStatus", rename_all = "lowercase")]
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
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename = "Pet", rename_all = "camelCase")]
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
        Self {
            id: pet.id.get(),
            name: pet.name.as_str().to_owned(),
            category_id: pet.category_id.get(),
            status: Some(pet.status.into()),
        }
    }
}

/// An animal to add. The service assigns its `id`; an `id` sent here is ignored.
#[derive(Object)]
#[oai(rename = "NewPet", rename_all = "camelCase")]
pub struct NewPetSchema {
    /// The animal's name: 1 to 100 characters, not blank, no control characters.
    #[oai(validator(min_length = 1, max_length = 100))]
    name: String,
    /// Id of the category the animal belongs to. Categories are not modelled: any id of at
    /// least 1 is accepted.
    #[oai(validator(minimum(value = "1")))]
    category_id: i64,
    /// Availability status.
    #[oai(default)]
    status: PetStatusDto,
}

/// A `createPet` body: a valid new pet, or what is wrong with it.
pub type NewPetBody = Documented<NewPetSchema, Result<NewPet, ApiError>>;

impl ParseFromJSON for NewPetBody {
    fn parse_from_json(value: Option<Value>) -> ParseResult<Self> {
        Ok(Self::new(match value {
            Some(Value::Object(fields)) => new_pet(&fields),
            _ => Err(ApiError::invalid_request("the body must be a JSON object")),
        }))
    }
}

fn new_pet(fields: &Map<String, Value>) -> Result<NewPet, ApiError> {
    let name = match fields.get("name") {
        None => Err("name is required".to_owned()),
        Some(Value::String(name)) => PetName::new(name).map_err(|e| e.to_string()),
        Some(other) => Err(format!("name must be a string, got {}", kind(other))),
    };
    let category_id = match fields.get("categoryId") {
        None => Err("categoryId is required".to_owned()),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(id) => CategoryId::new(id).map_err(|e| e.to_string()),
            None => Err(format!("categoryId must be an int64 integer, got {n}")),
        },
        Some(other) => Err(format!("categoryId must be an integer, got {}", kind(other))),
    };
    let status = match fields.get("status") {
        None => Ok(PetStatus::default()),
        Some(Value::String(s)) => s.parse::<PetStatus>().map_err(|e| e.to_string()),
        Some(other) => {
            Err(format!("status must be one of available, pending, sold; got {}", kind(other)))
        }
    };
    match (name, category_id, status) {
        (Ok(name), Ok(category_id), Ok(status)) => Ok(NewPet { name, category_id, status }),
        (name, category_id, status) => {
            let problems: Vec<String> =
                [name.err(), category_id.err(), status.err()].into_iter().flatten().collect();
            Err(ApiError::validation_failed(problems.join("; ")))
        }
    }
}

/// How a JSON value is described in messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(value: &Value) -> Result<NewPet, String> {
        NewPetBody::parse_from_json(Some(value.clone()))
            .map_err(|_| "parse failed".to_owned())?
            .into_inner()
            .map_err(|e| e.body().message)
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
