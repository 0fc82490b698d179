//! What goes over the wire: request and response bodies and parameters, and how they map to
//! domain values. Each is documented by the schema the OpenAPI document shows.

/// The methods of `poem_openapi::types::Type` that are the same for every type of this
/// module: a value is its own raw value.
macro_rules! raw_value_is_self {
    () => {
        fn as_raw_value(&self) -> Option<&Self::RawValueType> {
            Some(self)
        }

        fn raw_element_iter<'a>(
            &'a self,
        ) -> Box<dyn Iterator<Item = &'a Self::RawElementValueType> + 'a> {
            Box::new(self.as_raw_value().into_iter())
        }
    };
}

pub mod auth;
pub mod changes;
pub mod client_address;
pub mod cursor;
pub mod deprecation;
pub mod duplicates;
pub mod encoding;
pub mod etag;
pub mod events;
pub mod field;
pub mod idempotency;
pub mod json;
pub mod listing;
pub mod orders;
pub mod params;
pub mod pets;
pub mod stability;
pub mod time;
pub mod webhooks;
