//! The layers around the operations, innermost first:
//!
//! 1. [`body_limit`]: reads at most 16 KiB of a body (poem's `SizeLimit` trusts only
//!    `Content-Length` and answers 411 to chunked bodies).
//! 2. `catch_all_error` ([`error_response`]): everything raised before or after a handler
//!    (routing, extraction) becomes the Error body; an operation's own error responses pass.
//! 3. [`allow_header`]: the `Allow` header RFC 9110 requires on a 405.
//! 4. `CatchPanic` ([`panic_response`]): a panicking handler becomes a 500 Error body.
//! 5. [`guard`]: finds the caller's key, applies the rate limits, and sets their headers
//!    on every response (see `rate_limit`).
//! 6. [`deprecation_headers`]: the headers of a deprecated operation on all its responses,
//!    those of the layers inside included.
//! 7. [`trace_request`]: a request id and one span and log line per request.
//!
//! Each layer outside `catch_all_error` turns an error into a response itself before adding
//! its headers, so that no response escapes without them.

mod allow;
mod body_limit;
mod deprecation;
mod guard;
mod panic;
mod trace;

use poem::{Endpoint, IntoResponse, Request, Response};

pub use allow::allow_header;
pub use body_limit::{MAX_BODY_BYTES, body_limit};
pub use deprecation::deprecation_headers;
pub use guard::guard;
pub use panic::panic_response;
pub use trace::trace_request;

use crate::error::ApiError;

/// Calls `ep` and turns an error into the Error body.
async fn respond<E: Endpoint>(ep: &E, req: Request) -> Response {
    match ep.call(req).await {
        Ok(output) => output.into_response(),
        Err(err) => error_response(err),
    }
}

/// The response for an error: its own if an operation built it, the Error body otherwise.
pub fn error_response(err: poem::Error) -> Response {
    if err.is_from_response() {
        err.into_response()
    } else {
        ApiError::from_poem(&err).into_response()
    }
}
