//! The Error body every error response carries: `{code, message, status}`.

use poem_openapi::Object;

use super::ErrorCode;

/// The body of every error response.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename = "Error")]
pub struct ErrorBody {
    /// Machine-readable error code.
    pub code: ErrorCode,
    /// Human-readable description.
    pub message: String,
    /// The HTTP status code of the response.
    pub status: i32,
}
