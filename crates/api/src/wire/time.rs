//! Instants as the API writes them: RFC 3339 in UTC with a `Z`, to the second
//! (`2026-11-23T17:36:06Z`), as `docs/decisions/0007-chrono.md` decides. poem-openapi's own
//! `DateTime<Utc>` writes `+00:00` and fractions of a second.

use std::borrow::Cow;

use chrono::{DateTime, SecondsFormat, Utc};
use poem_openapi::registry::{MetaSchema, MetaSchemaRef};
use poem_openapi::types::{ParseError, ParseFromJSON, ParseResult, ToJSON, Type};
use serde_json::Value;

/// An instant, written `YYYY-MM-DDTHH:MM:SSZ`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timestamp(pub DateTime<Utc>);

impl Type for Timestamp {
    const IS_REQUIRED: bool = true;
    type RawValueType = Self;
    type RawElementValueType = Self;

    fn name() -> Cow<'static, str> {
        "string(date-time)".into()
    }

    fn schema_ref() -> MetaSchemaRef {
        MetaSchemaRef::Inline(Box::new(MetaSchema {
            format: Some("date-time"),
            example: Some(Value::from("2026-11-23T17:36:06Z")),
            ..MetaSchema::new("string")
        }))
    }

    raw_value_is_self!();
}

impl serde::Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0.to_rfc3339_opts(SecondsFormat::Secs, true))
    }
}

impl ToJSON for Timestamp {
    fn to_json(&self) -> Option<Value> {
        Some(Value::String(self.0.to_rfc3339_opts(SecondsFormat::Secs, true)))
    }
}

impl ParseFromJSON for Timestamp {
    fn parse_from_json(value: Option<Value>) -> ParseResult<Self> {
        match value {
            Some(Value::String(text)) => DateTime::parse_from_rfc3339(&text)
                .map(|at| Self(at.with_timezone(&Utc)))
                .map_err(|e| ParseError::custom(e.to_string())),
            other => Err(ParseError::expected_type(other.unwrap_or_default())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_are_written_in_utc_with_a_z_to_the_second() {
        let at = DateTime::from_timestamp(1_795_455_366, 0).expect("an instant");
        assert_eq!(Timestamp(at).to_json(), Some(Value::from("2026-11-23T17:36:06Z")));
        let parsed = Timestamp::parse_from_json(Timestamp(at).to_json()).ok();
        assert_eq!(parsed, Some(Timestamp(at)));
    }
}
