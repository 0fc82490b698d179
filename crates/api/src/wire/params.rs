//! Parameters that the handler, not the extractor, validates.
//!
//! poem-openapi rejects a parameter that does not parse with one generic error, before the
//! handler runs. The contract wants finer answers: `limit=abc` is `invalid_request` but
//! `limit=0` is `validation_failed`, an unknown `status` is `validation_failed`, and every
//! message names the parameter. [`RawParam`] therefore takes any text, while the document
//! still shows the schema of `S`; the handler then parses it with the domain's constructors.
//! [`Documented`] does the same for the `createPet` body.

use std::borrow::Cow;
use std::marker::PhantomData;

use animal_store_domain::{PageSize, PageSizeError, PetId, PetIds, excerpt};
use poem_openapi::registry::{MetaSchema, MetaSchemaRef, Registry};
use poem_openapi::types::{ParseFromParameter, ParseResult, Type};

use crate::error::ApiError;

/// A value of type `T`, documented with the schema of `S`: the handler gets what the client
/// sent, in a form it checks itself, while the document shows the real schema.
pub struct Documented<S, T> {
    value: T,
    schema: PhantomData<fn() -> S>,
}

impl<S, T> Documented<S, T> {
    /// Wraps a value parsed by hand.
    pub(crate) fn new(value: T) -> Self {
        Self { value, schema: PhantomData }
    }

    /// The value.
    pub fn into_inner(self) -> T {
        self.value
    }
}

/// The text of a parameter, documented with the schema of `S`.
pub type RawParam<S> = Documented<S, String>;

impl<S> RawParam<S> {
    /// The text as the client sent it (percent-decoded).
    pub fn as_str(&self) -> &str {
        &self.value
    }
}

impl<S: Type, T: Send + Sync> Type for Documented<S, T> {
    const IS_REQUIRED: bool = true;
    type RawValueType = Self;
    type RawElementValueType = Self;

    fn name() -> Cow<'static, str> {
        S::name()
    }

    fn schema_ref() -> MetaSchemaRef {
        S::schema_ref()
    }

    fn register(registry: &mut Registry) {
        S::register(registry);
    }

    raw_value_is_self!();
}

impl<S: Type> ParseFromParameter for RawParam<S> {
    fn parse_from_parameter(value: &str) -> ParseResult<Self> {
        Ok(Self::new(value.to_owned()))
    }
}

/// Every value of a repeated parameter (`id=3&id=7`), documented with the schema of `S`.
pub type RawParams<S> = Documented<S, Vec<String>>;

impl<S: Type> ParseFromParameter for RawParams<S> {
    fn parse_from_parameter(value: &str) -> ParseResult<Self> {
        Ok(Self::new(vec![value.to_owned()]))
    }

    fn parse_from_parameters<I: IntoIterator<Item = A>, A: AsRef<str>>(
        iter: I,
    ) -> ParseResult<Self> {
        Ok(Self::new(iter.into_iter().map(|value| value.as_ref().to_owned()).collect()))
    }
}

/// `listPets`' `id`s: `invalid_request` when one is not an integer, `validation_failed`
/// when there are more than [`PetIds::MAX`].
pub fn parse_pet_ids(raw: &[String]) -> Result<PetIds, ApiError> {
    let ids = raw
        .iter()
        .map(|id| {
            id.parse().map(PetId::new).map_err(|_| {
                let id = excerpt(id);
                ApiError::invalid_request(format!("id must be an int64 integer, got {id:?}"))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    PetIds::new(ids).map_err(|e| ApiError::validation_failed(e.to_string()))
}

/// A string schema of at most `max` characters that match `pattern` (which says how few).
/// No example: the docs page would fill it in for "Try it out".
fn text_schema(max: Option<usize>, pattern: &str) -> MetaSchemaRef {
    MetaSchemaRef::Inline(Box::new(MetaSchema {
        max_length: max,
        pattern: Some(pattern.to_owned()),
        ..MetaSchema::new("string")
    }))
}

/// Declares a type that only documents, with `schema`, what a handler checks by hand.
macro_rules! schema {
    ($(#[$doc:meta])* $name:ident, $title:literal, $schema:expr) => {
        $(#[$doc])*
        pub struct $name;

        impl Type for $name {
            const IS_REQUIRED: bool = true;
            type RawValueType = Self;
            type RawElementValueType = Self;

            fn name() -> Cow<'static, str> {
                $title.into()
            }

            fn schema_ref() -> MetaSchemaRef {
                $schema
            }

            raw_value_is_self!();
        }
    };
}

schema!(
    /// The schema of `listPets`' `limit`: an int64 within the bounds of [`PageSize`], its
    /// default by default.
    PageSizeSchema,
    "integer(int64)",
    MetaSchemaRef::Inline(Box::new(MetaSchema {
        format: Some("int64"),
        minimum: Some(f64::from(PageSize::MIN)),
        maximum: Some(f64::from(PageSize::MAX)),
        default: Some(PageSize::DEFAULT.get().into()),
        ..MetaSchema::new("integer")
    }))
);

schema!(
    /// The schema of `listPets`' `id`: 1 to [`PetIds::MAX`] int64 ids, each given as its own
    /// `id=` (`id=3&id=7`).
    PetIdsSchema,
    "list_integer(int64)",
    MetaSchemaRef::Inline(Box::new(MetaSchema {
        items: Some(Box::new(i64::schema_ref())),
        min_items: Some(1),
        max_items: Some(PetIds::MAX),
        ..MetaSchema::new("array")
    }))
);

schema!(
    /// The schema of `Idempotency-Key`: 1 to 255 visible ASCII characters, or the same as a
    /// structured-field string (`"..."`, with `\"` and `\\` its only escapes).
    IdempotencyKeySchema,
    "string(idempotency-key)",
    text_schema(Some(2 + 2 * 255), r#"^(?:[!#-~][!-~]{0,254}|"(?:[!#-\[\]-~]|\\["\\]){1,255}")$"#)
);

schema!(
    /// The schema of `If-Match`: `*`, or a list of entity tags (`"..."` or `W/"..."`)
    /// separated by commas or spaces.
    EntityTagsSchema,
    "string(entity-tags)",
    text_schema(None, r#"^(?:\*|(?:W/)?"[!#-~]*"(?:[ ,]+(?:W/)?"[!#-~]*")*)$"#)
);

schema!(
    /// The schema of a listing's `cursor`: opaque, base64url without padding.
    CursorSchema,
    "string(cursor)",
    text_schema(None, "^[A-Za-z0-9_-]+$")
);

/// A listing's `limit`: `invalid_request` when it is not an integer, `validation_failed`
/// when it is outside the bounds of [`PageSize`].
pub fn parse_page_size(raw: &str) -> Result<PageSize, ApiError> {
    let digits = raw.strip_prefix(['+', '-']).unwrap_or(raw);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        let raw = excerpt(raw);
        return Err(ApiError::invalid_request(format!("limit must be an integer, got {raw:?}")));
    }
    // An integer too large for 64 bits is out of range like any other.
    let out_of_range = || PageSizeError(excerpt(raw));
    raw.parse::<i64>()
        .map_err(|_| out_of_range())
        .and_then(|size| PageSize::new(size).map_err(|_| out_of_range()))
        .map_err(|e| ApiError::validation_failed(e.to_string()))
}
