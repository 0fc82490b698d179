//! The edge: the connections (`server.rs` over hyper, with `socket.rs`, `body.rs`,
//! `framing.rs` and `accept.rs`), and the layers around the operations. Their order is
//! written once, in `app`
//! (`crates/api/src/lib.rs`), with why each stands where it does; docs/architecture.md's
//! "The request path" walks a request through them.
//!
//! - [`idempotency_keys`]: takes the `Idempotency-Key` of an operation that declares it:
//!   refuses a malformed header or a key whose request still runs, or lets the operation
//!   run holding the key (it stores its outcome, or repeats the key's first response).
//! - [`representations`]: an operation's JSON answer compressed when the request asks for
//!   it and it is worth it, and, for the reads that declare `If-None-Match`, the `ETag` of
//!   that representation and `304 Not Modified` to a request that holds it.
//! - [`check_request`]: 404 and 405 from the route table (with the `Allow` header RFC 9110
//!   requires on a 405), and at most 16 KiB of a body, read before anything parses it.
//! - poem's `CatchPanic`: a panic inside becomes a 500 Error body.
//! - [`guard`]: finds the caller's key, applies the rate limits, sets their headers on
//!   every response (see `rate_limit`), and gives the request its time (503 past it).
//! - [`envelope`]: looks the request's route up once, for every layer inside; a request id
//!   and one span and log line per request; the request metrics; and the headers every
//!   response carries (`Cache-Control` as the route's `Caching` says, `X-Content-Type-Options`, a
//!   deprecated or unstable operation's own).
//!
//! Every layer calls the layers inside it through `respond`, which turns an error raised
//! there (no route, a bad parameter, a missing body) into the Error body, so each layer
//! sees a finished response; an operation's own error responses pass unchanged.
//!
//! The layers learn a request's route, and the operation it reaches, from the route table
//! (`operations/routes.rs`), built from the one table of operations (`operations/table.rs`), which a
//! test holds against the operations poem-openapi generates.
//!
//! A new layer is a file here with one `async fn(Next, Request) -> poem::Result<Response>`,
//! for poem's `EndpointExt::around`, its line in the list above, and its line in `app`,
//! with why it stands there.

mod accept;
mod body;
mod check;
mod envelope;
mod framing;
mod guard;
mod idempotency_keys;
mod representation;
pub mod server;
mod socket;

use std::sync::Arc;

use poem::endpoint::BoxEndpoint;
use poem::http::Method;
use poem::{Endpoint as _, Request, Response};

pub use check::check_request;
pub use envelope::{Refused, envelope};
pub use guard::guard;
pub use idempotency_keys::idempotency_keys;
pub use representation::representations;

use crate::error::ApiError;
use crate::operations::Operation;
use crate::operations::routes::Resolved;
use crate::operations::state::AppState;

/// The layers inside a layer, as poem's `around` hands them to it. `app` boxes the stack
/// after each layer, so that a layer's type does not hold the types of all those inside it.
pub type Next = Arc<BoxEndpoint<'static, Response>>;

// What the layers read, the route table and the services, is request data that `app` adds
// as the outermost layers (poem's `EndpointExt::data`): each layer is then a plain function,
// and `app` reads as the list of layers in their order. The operations read the services the
// same way.

/// The route of a request, as `envelope` found it; `None` only if `app` did not add that
/// layer, a bug.
fn resolved(req: &Request) -> Option<Resolved> {
    req.extensions().get::<Resolved>().cloned()
}

/// The operation `method` reaches on the request's route, if it reaches one (not the
/// document, a probe or the metrics).
fn operation(req: &Request, method: &Method) -> Option<&'static Operation> {
    req.extensions().get::<Resolved>()?.route()?.operation(method)
}

/// The services; `None` only if `app` did not add them, a bug.
fn state(req: &Request) -> Option<AppState> {
    req.data::<AppState>().cloned()
}

/// Calls the layers inside and turns an error raised there into the Error body.
async fn respond(next: &Next, req: Request) -> Response {
    let mut response = match next.call(req).await {
        Ok(output) => output,
        Err(err) => ApiError::response_to(err),
    };
    make_room(&mut response);
    response
}

/// About as many headers as the layers leave on a response: a read's carries 14.
const RESPONSE_HEADERS: usize = 16;

/// Makes room, once, for the headers the layers add, so that the response's header table
/// is not grown and rehashed twice on the way out.
fn make_room(response: &mut Response) {
    let headers = response.headers_mut();
    if headers.capacity() < RESPONSE_HEADERS {
        headers.reserve(RESPONSE_HEADERS.saturating_sub(headers.len()));
    }
}
