//! Body fields that never fail to extract, so that one response can name every problem.
//!
//! A request body is an `Object` whose fields are [`Field<T>`]s, `T` a domain value. The one
//! struct is both the schema in the document and the parser: each field's schema comes from
//! `T` ([`BodyValue::schema`], built from the domain's own bounds), and each field keeps the
//! JSON the client sent until the operation turns it into `T` with [`Field::parse`], which
//! names the field in its message. A field added to the struct therefore shows in the
//! document and is parsed, or the code does not compile.

use std::borrow::Cow;
use std::marker::PhantomData;
use std::time::SystemTime;

use poem_openapi::registry::{MetaSchemaRef, Registry};
use poem_openapi::types::{ParseFromJSON, ParseResult, ToJSON, Type};
use serde_json::Value;

/// What parsing a body may need beyond the body: the time, for rules such as "not in the
/// future", from the clock port so that tests can stand at any instant.
#[derive(Debug, Clone, Copy)]
pub struct ParseContext {
    /// The time of the request.
    #[expect(
        dead_code,
        reason = "no rule of today's fields needs the time; the first one that does reads it here"
    )]
    pub now: SystemTime,
}

/// A domain value that a body field carries.
pub trait BodyValue: Sized + Send + Sync {
    /// Whether the field must be present. An absent optional field takes
    /// [`BodyValue::absent`].
    const REQUIRED: bool;

    /// The schema the document shows for the field, before the field's own description.
    fn schema() -> MetaSchemaRef;

    /// Registers the schemas that [`BodyValue::schema`] refers to.
    fn register(_registry: &mut Registry) {}

    /// The value of an optional field the client left out.
    fn absent() -> Option<Self> {
        None
    }

    /// The value `json` holds, or why it holds none: a message that names the field `name`.
    fn from_json(name: &str, json: &Value, context: &ParseContext) -> Result<Self, String>;
}

/// A field a patch may leave out: absent, it is `None` (the value stays as it is); present,
/// it follows `T`'s rules, and `null`, which would remove a value no field may lack, is
/// refused as `T` refuses it. Its schema is `T`'s, optional and without a default.
impl<T: BodyValue> BodyValue for Option<T> {
    const REQUIRED: bool = false;

    fn schema() -> MetaSchemaRef {
        without_default(T::schema())
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }

    fn absent() -> Option<Self> {
        Some(None)
    }

    fn from_json(name: &str, json: &Value, context: &ParseContext) -> Result<Self, String> {
        T::from_json(name, json, context).map(Some)
    }
}

/// `schema` without the default it or the schemas it merges declare.
fn without_default(schema: MetaSchemaRef) -> MetaSchemaRef {
    match schema {
        MetaSchemaRef::Inline(mut schema) => {
            schema.default = None;
            schema.all_of = schema.all_of.into_iter().map(without_default).collect();
            MetaSchemaRef::Inline(schema)
        }
        reference @ MetaSchemaRef::Reference(_) => reference,
    }
}

/// A field of a request body, as the client sent it (see the module's documentation).
#[derive(Debug)]
pub struct Field<T> {
    json: Option<Value>,
    value: PhantomData<fn() -> T>,
}

impl<T: BodyValue> Field<T> {
    /// The field's value, or the problem with it, naming the field `name`. An explicit
    /// `null` is a problem: no field of the API is nullable.
    pub fn parse(self, name: &str, context: &ParseContext) -> Result<T, String> {
        match self.json {
            None => T::absent().ok_or_else(|| format!("{name} is required")),
            Some(json) => T::from_json(name, &json, context),
        }
    }
}

impl<T: BodyValue> Type for Field<T> {
    const IS_REQUIRED: bool = T::REQUIRED;
    type RawValueType = Self;
    type RawElementValueType = Self;

    fn name() -> Cow<'static, str> {
        "field".into()
    }

    fn schema_ref() -> MetaSchemaRef {
        T::schema()
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }

    raw_value_is_self!();
}

impl<T: BodyValue> ParseFromJSON for Field<T> {
    fn parse_from_json(json: Option<Value>) -> ParseResult<Self> {
        Ok(Self { json, value: PhantomData })
    }
}

impl<T: BodyValue> ToJSON for Field<T> {
    fn to_json(&self) -> Option<Value> {
        self.json.clone()
    }
}

/// A request body that must be a JSON object, as the fields of `T`; the `invalid_request`
/// that says it is not one otherwise.
pub fn object_body<T: ParseFromJSON>(value: Option<Value>) -> Result<T, crate::error::ApiError> {
    let not_an_object =
        || crate::error::ApiError::invalid_request("the body must be a JSON object");
    match value {
        Some(object @ Value::Object(_)) => {
            T::parse_from_json(Some(object)).map_err(|_| not_an_object())
        }
        _ => Err(not_an_object()),
    }
}

/// The values of three fields, or every problem with them in one `validation_failed`, each
/// naming its field, in the order given.
pub fn all_three<A, B, C>(
    a: Result<A, String>,
    b: Result<B, String>,
    c: Result<C, String>,
) -> Result<(A, B, C), crate::error::ApiError> {
    match (a, b, c) {
        (Ok(a), Ok(b), Ok(c)) => Ok((a, b, c)),
        (a, b, c) => {
            let problems: Vec<String> = [a.err(), b.err(), c.err()].into_iter().flatten().collect();
            Err(crate::error::ApiError::validation_failed(problems.join("; ")))
        }
    }
}

/// How a JSON value is described in messages.
pub fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
