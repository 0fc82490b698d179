//! A panicking handler becomes a 500 Error body.

use std::any::Any;

use poem::{IntoResponse, Response};

use crate::error::ApiError;

/// The response for a panicking handler. The panic itself is logged by the
/// process's panic hook; the request's log line carries the request id.
#[allow(clippy::needless_pass_by_value, reason = "the signature poem's PanicHandler wants")]
pub fn panic_response(_panic: Box<dyn Any + Send>) -> Response {
    ApiError::internal().into_response()
}
