//! What goes over the wire: request and response bodies and parameters, and how they map to
//! domain values. Each is documented by the schema the OpenAPI document shows.

pub mod cursor;
pub mod field;
pub mod params;
pub mod pets;
