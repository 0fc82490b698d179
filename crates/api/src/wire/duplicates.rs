//! Ambiguous requests: a query parameter given twice, a JSON object with a key twice. RFC
//! 8259 leaves the meaning of a repeated key open and I-JSON (RFC 7493) forbids it; a front
//! end and this service could read such a request two ways, so it is refused, naming what
//! was repeated.

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::error::ApiError;

/// Refuses a query that gives one of `names` more than once.
pub fn refuse_repeated_parameters<const N: usize>(
    query: Option<&str>,
    names: &[&str; N],
) -> Result<(), ApiError> {
    // Which of `names` the query gave so far, by position: no set to allocate and hash into.
    let mut seen = [false; N];
    for (name, _) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        let Some(given) = names.iter().position(|n| *n == name).and_then(|i| seen.get_mut(i))
        else {
            continue;
        };
        if std::mem::replace(given, true) {
            return Err(ApiError::invalid_request(format!(
                "the query parameter {name} is given more than once; give it once"
            )));
        }
    }
    Ok(())
}

/// A JSON body gave this key (quoted) twice: noted on the request by the body layer, refused
/// by the operation in its turn.
#[derive(Debug, Clone)]
pub struct RepeatedJsonKey(pub String);

impl RepeatedJsonKey {
    /// Refuses the request if its body repeated a key.
    pub fn refuse(request: &poem::Request) -> Result<(), ApiError> {
        match request.extensions().get::<Self>() {
            Some(Self(key)) => Err(ApiError::invalid_request(format!(
                "the JSON body gives the key {key} more than once; give each key once"
            ))),
            None => Ok(()),
        }
    }
}

/// The message prefix that marks a repeated key among `serde_json`'s errors.
const REPEATED: &str = "repeated key ";

/// The first key that an object of the JSON document `bytes` holds twice, if any. A
/// document that is not JSON has none: its own error comes later, from the operation.
pub fn repeated_json_key(bytes: &[u8]) -> Option<String> {
    let err = serde_json::from_slice::<UniqueKeys>(bytes).err()?;
    let message = err.to_string();
    let key = message.strip_prefix(REPEATED)?;
    // `serde_json` appends " at line L column C".
    Some(key.rsplit_once(" at line ").map_or(key, |(key, _)| key).to_owned())
}

/// Walks a JSON document, failing at the first object that repeats a key.
struct UniqueKeys;

impl<'de> Deserialize<'de> for UniqueKeys {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(UniqueKeys)
    }
}

impl<'de> Visitor<'de> for UniqueKeys {
    type Value = Self;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self, A::Error> {
        let mut keys = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if keys.contains(&key) {
                let shown = animal_store_domain::excerpt(&key);
                return Err(de::Error::custom(format!("{REPEATED}{shown:?}")));
            }
            map.next_value::<UniqueKeys>()?;
            keys.insert(key);
        }
        Ok(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self, A::Error> {
        while seq.next_element::<UniqueKeys>()?.is_some() {}
        Ok(self)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_unit<E>(self) -> Result<Self, E> {
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_keys_are_found_at_any_depth() {
        assert_eq!(repeated_json_key(br#"{"name":"a","name":"b"}"#).as_deref(), Some("\"name\""));
        assert_eq!(repeated_json_key(br#"{"a":{"x":1,"x":2}}"#).as_deref(), Some("\"x\""));
        assert_eq!(repeated_json_key(br#"[{"x":1},{"x":2}]"#), None, "one per object");
        assert_eq!(repeated_json_key(br#"{"name":"a","status":"sold"}"#), None);
        assert_eq!(repeated_json_key(b"not json"), None);
    }

    #[test]
    fn repeated_parameters_are_refused_encoded_or_not() {
        let names = ["limit", "status"];
        assert!(refuse_repeated_parameters(Some("limit=1&status=sold"), &names).is_ok());
        assert!(refuse_repeated_parameters(Some("limit=1&limit=2"), &names).is_err());
        assert!(refuse_repeated_parameters(Some("limit=1&l%69mit=2"), &names).is_err());
        assert!(refuse_repeated_parameters(Some("x=1&x=2"), &names).is_ok(), "unknown ones pass");
        assert!(refuse_repeated_parameters(None, &names).is_ok());
    }
}
