//! A panicking handler becomes a 500 Error body.

use std::panic::AssertUnwindSafe;

use futures_util::FutureExt as _;
use poem::{IntoResponse, Request, Response};

use super::{Next, respond};
use crate::error::ApiError;

/// Answers 500 `internal_error` when the layers inside panic. The panic itself is logged by
/// the process's panic hook; the request's log line carries the request id.
pub async fn catch_panic(next: Next, req: Request) -> poem::Result<Response> {
    let answered = AssertUnwindSafe(respond(&next, req)).catch_unwind().await;
    Ok(answered.unwrap_or_else(|_panic| ApiError::internal().into_response()))
}
