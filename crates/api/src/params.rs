//! Parameters that the handler, not the extractor, validates.
//!
//! poem-openapi rejects a parameter that does not parse with one generic error, before the
//! handler runs. The contract wants finer answers: `limit=abc` is `invalid_request` but
//! `limit=0` is `validation_failed`, an unknown `status` is `validation_failed`, and every
//! message names the parameter. [`RawParam`] therefore takes any text, while the document
//! still shows the schema of `S`; the handler then parses it with the domain's constructors.

use std::borrow::Cow;
use std::marker::PhantomData;

use poem_openapi::registry::{MetaSchema, MetaSchemaRef, Registry};
use poem_openapi::types::{ParseFromParameter, ParseResult, Type};

/// The text of a parameter, documented with the schema of `S`.
pub struct RawParam<S> {
    raw: String,
    schema: PhantomData<fn() -> S>,
}

impl<S> RawParam<S> {
    /// The text as the client sent it (percent-decoded).
    pub fn as_str(&self) -> &str {
        &self.raw
    }
}

impl<S: Type> Type for RawParam<S> {
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

    fn as_raw_value(&self) -> Option<&Self::RawValueType> {
        Some(self)
    }

    fn raw_element_iter<'a>(
        &'a self,
    ) -> Box<dyn Iterator<Item = &'a Self::RawElementValueType> + 'a> {
        Box::new(self.as_raw_value().into_iter())
    }
}

impl<S: Type> ParseFromParameter for RawParam<S> {
    fn parse_from_parameter(value: &str) -> ParseResult<Self> {
        Ok(Self {
            raw: value.to_owned(),
            schema: PhantomData,
        })
    }
}

/// The schema of `listPets`' `limit`: an int64 from 1 to 100, 20 by default.
pub struct LimitSchema;

impl Type for LimitSchema {
    const IS_REQUIRED: bool = true;
    type RawValueType = Self;
    type RawElementValueType = Self;

    fn name() -> Cow<'static, str> {
        "integer(int64)".into()
    }

    fn schema_ref() -> MetaSchemaRef {
        MetaSchemaRef::Inline(Box::new(MetaSchema {
            format: Some("int64"),
            minimum: Some(1.0),
            maximum: Some(100.0),
            default: Some(20.into()),
            ..MetaSchema::new("integer")
        }))
    }

    fn as_raw_value(&self) -> Option<&Self::RawValueType> {
        Some(self)
    }

    fn raw_element_iter<'a>(
        &'a self,
    ) -> Box<dyn Iterator<Item = &'a Self::RawElementValueType> + 'a> {
        Box::new(self.as_raw_value().into_iter())
    }
}
