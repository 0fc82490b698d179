//! The bodies of the catalogue's changes: `PetPatch`, the JSON merge patch (RFC 7396) of
//! `updatePet`, and `Inventory`, the answer of `getInventory`.
//!
//! A patch is parsed as `NewPet` is (see [`pets`](super::pets)): it never fails to parse,
//! every problem is named in one answer, unknown fields are ignored. Each field is
//! optional and checked by createPet's rules when present; `null`, which in a merge patch
//! removes a member, is refused, since an animal has every field.

use animal_store_domain::{CategoryId, Inventory, PetName, PetPatch, PetStatus};
use poem_openapi::Object;
use poem_openapi::types::{ParseFromJSON, ParseResult};
use serde_json::Value;

use crate::error::ApiError;
use crate::wire::field::{Field, ParseContext, all_three, object_body};
use crate::wire::params::Documented;

/// Changes to an animal, as a JSON merge patch (RFC 7396): the fields sent take the values
/// sent, each checked as `createPet` checks it; the fields left out keep theirs. `null`
/// removes nothing (an animal has every field) and is refused; unknown fields, `id`
/// included, are ignored; `{}` changes nothing.
#[derive(Debug, Object)]
#[oai(rename = "PetPatch", rename_all = "camelCase")]
pub struct PetPatchSchema {
    name: Field<Option<PetName>>,
    category_id: Field<Option<CategoryId>>,
    status: Field<Option<PetStatus>>,
}

impl PetPatchSchema {
    /// The patch, or every problem with the body, each naming its field.
    pub fn into_patch(self, context: &ParseContext) -> Result<PetPatch, ApiError> {
        let Self { name, category_id, status } = self;
        let (name, category_id, status) = all_three(
            name.parse("name", context),
            category_id.parse("categoryId", context),
            status.parse("status", context),
        )?;
        Ok(PetPatch { name, category_id, status })
    }
}

/// An `updatePet` body, documented as `PetPatch`: its fields as the client sent them, or,
/// when it is not a JSON object, the error saying so.
pub type PetPatchBody = Documented<PetPatchSchema, Result<PetPatchSchema, ApiError>>;

impl ParseFromJSON for PetPatchBody {
    fn parse_from_json(value: Option<Value>) -> ParseResult<Self> {
        Ok(Self::new(object_body(value)))
    }
}

/// How many animals have each status, counted when the answer is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Object, serde::Serialize)]
#[oai(rename = "Inventory")]
pub struct InventoryBody {
    /// Animals that are `available`.
    #[oai(validator(minimum(value = "0")))]
    available: i64,
    /// Animals that are `pending`: reserved by an open order, or so set.
    #[oai(validator(minimum(value = "0")))]
    pending: i64,
    /// Animals that are `sold`.
    #[oai(validator(minimum(value = "0")))]
    sold: i64,
}

impl From<Inventory> for InventoryBody {
    fn from(inventory: Inventory) -> Self {
        let count = |status| i64::try_from(inventory[status]).unwrap_or(i64::MAX);
        Self {
            available: count(PetStatus::Available),
            pending: count(PetStatus::Pending),
            sold: count(PetStatus::Sold),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parse(value: &Value) -> Result<PetPatch, String> {
        let context = ParseContext { now: std::time::SystemTime::now() };
        PetPatchBody::parse_from_json(Some(value.clone()))
            .map_err(|_| "parse failed".to_owned())?
            .into_inner()
            .and_then(|fields| fields.into_patch(&context))
            .map_err(|e| e.body().message)
    }

    #[test]
    fn a_patch_names_what_changes_and_nothing_else() {
        assert_eq!(parse(&json!({})).unwrap(), PetPatch::default());
        assert_eq!(parse(&json!({"id": 3, "other": null})).unwrap(), PetPatch::default());
        let patch = parse(&json!({"name": "Max", "categoryId": 4, "status": "sold"})).unwrap();
        assert_eq!(patch.name.map(|n| n.as_str().to_owned()), Some("Max".to_owned()));
        assert_eq!(patch.category_id.map(CategoryId::get), Some(4));
        assert_eq!(patch.status, Some(PetStatus::Sold));
    }

    #[test]
    fn null_and_broken_rules_are_named_together() {
        assert_eq!(
            parse(&json!({"name": null, "categoryId": null, "status": null})).unwrap_err(),
            "name must be a string, got null; categoryId must be an integer, got null; \
             status must be one of available, pending, sold; got null"
        );
        assert_eq!(
            parse(&json!({"name": " ", "categoryId": 0, "status": "lost"})).unwrap_err(),
            "name must not be blank; categoryId must be an integer of at least 1, got 0; \
             status must be one of available, pending, sold; got \"lost\""
        );
    }

    #[test]
    fn a_patch_that_is_not_an_object_is_an_invalid_request() {
        for body in [json!([]), json!("name"), json!(null), json!(1)] {
            let err = PetPatchBody::parse_from_json(Some(body)).ok().unwrap().into_inner();
            assert_eq!(err.unwrap_err().code(), crate::error::ErrorCode::InvalidRequest);
        }
    }

    #[test]
    fn the_schema_has_no_required_field_and_no_default() {
        let mut registry = poem_openapi::registry::Registry::new();
        <PetPatchSchema as poem_openapi::types::Type>::register(&mut registry);
        let schemas = serde_json::to_value(&registry.schemas).unwrap();
        let schema = &schemas["PetPatch"];
        assert!(schema.get("required").is_none(), "{schema}");
        let properties = schema["properties"].as_object().unwrap();
        assert_eq!(properties.keys().collect::<Vec<_>>(), ["name", "categoryId", "status"]);
        for (name, property) in properties {
            assert!(!property.to_string().contains("default"), "{name}: {property}");
        }
    }
}
