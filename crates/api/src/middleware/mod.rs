//! The layers around the operations. Their order is written once, in `app`
//! (`crates/api/src/lib.rs`), with why each stands where it does; docs/architecture.md's
//! "The request path" walks a request through them.
//!
//! - [`idempotency_keys`]: takes the `Idempotency-Key` of an operation that declares it:
//!   refuses a malformed header or a key whose request still runs, or lets the operation
//!   run holding the key (it stores its outcome, or repeats the key's first response).
//! - [`DropAnswers`]: with `memory://?drop-answer-every=N`, marks every Nth answer of a
//!   write that stored something for the connection to drop unanswered.
//! - [`representations`]: an operation's JSON answer compressed when the request asks for
//!   it and it is worth it, and, for the reads that declare `If-None-Match`, the `ETag` of
//!   that representation and `304 Not Modified` to a request that holds it.
//! - [`body_limit`]: reads at most 16 KiB of a body (poem's `SizeLimit` trusts only
//!   `Content-Length` and answers 411 to chunked bodies), and notes a JSON body that gives
//!   a key twice, for the operation to refuse.
//! - [`error_response`]: everything raised before or after a handler (routing, extraction)
//!   becomes the Error body; an operation's own error responses pass.
//! - [`allow_header`]: 404 and 405 from the route table, and the `Allow` header RFC 9110
//!   requires on a 405.
//! - [`panic_response`]: a panicking handler becomes a 500 Error body.
//! - [`request_timeout`]: a request the layers inside do not answer in time gets 503.
//! - [`guard`]: finds the caller's key, applies the rate limits, and sets their headers
//!   on every response (see `rate_limit`).
//! - [`lifecycle_headers`]: the headers of a deprecated operation, and `API-Stability` of
//!   a beta or experimental one, on all its responses.
//! - [`trace_request`]: a request id and one span and log line per request.
//! - [`standard_headers`]: `X-Content-Type-Options: nosniff` and `Cache-Control` on every
//!   response, the latter by the kind of answer.
//! - [`record_metrics`]: the request's duration by method, route and status, and the
//!   requests in flight.
//! - [`resolve_route`]: looks the request's route up in the route table, once, and puts it
//!   on the request for every layer inside.
//!
//! The layers learn a request's route from a route table read off the OpenAPI document
//! (`routes.rs`), not from a list of their own, so that the routes and the document cannot
//! drift apart.
//!
//! A new layer is a file here with one
//! `async fn(Arc<Next>, Box<Request>) -> poem::Result<Response>`, its line in the list above,
//! and its line in `app`, with why it stands there. The request comes boxed so that a
//! layer's future holds a pointer to it, not its 472 bytes (see `Layer`).

mod allow;
mod body_limit;
mod drop_answers;
mod guard;
mod idempotency_keys;
mod lifecycle;
mod measure;
mod panic;
mod representation;
mod resolve;
mod standard_headers;
mod timeout;
mod trace;

use std::sync::Arc;

use futures_util::future::BoxFuture;
use poem::endpoint::{BoxEndpoint, DynEndpoint};
use poem::{IntoResponse, Request, Response};

pub use allow::allow_header;
pub use body_limit::{MAX_BODY_BYTES, body_limit};
pub use drop_answers::{AnswerDrops, DropAnswers};
pub use guard::guard;
pub use idempotency_keys::idempotency_keys;
pub use lifecycle::{API_STABILITY, lifecycle_headers};
pub use measure::record_metrics;
pub use panic::panic_response;
pub use representation::{COMPRESS_FROM, representations};
pub use resolve::resolve_route;
pub use standard_headers::{Kind, cache_headers, standard_headers};
pub use timeout::request_timeout;
pub use trace::{request_id, trace_request};

use crate::error::ApiError;
use crate::routes::Resolved;
use crate::state::AppState;

// What the layers read, the route table and the services, is request data that `app` adds
// as the outermost layers (`EndpointExt::data`): each layer is then a plain function, and
// `app` reads as the list of layers in their order. The operations read the services the
// same way.

/// The route of a request, as `resolve_route` found it; `None` only if `app` did not add
/// that layer, a bug.
fn resolved(req: &Request) -> Option<Resolved> {
    req.extensions().get::<Resolved>().cloned()
}

/// The services; `None` only if `app` did not add them, a bug.
fn state(req: &Request) -> Option<AppState> {
    req.data::<AppState>().cloned()
}

/// The layers inside a layer, behind a pointer: every layer is written against this one
/// type, not against the type of the stack inside it. Generic over that stack, each layer's
/// type held every type inside it twice (the layer's function and its future both name
/// it), so the type names doubled with each layer, up to 42 MB for one name in the debug
/// information, and the future of each layer held those inside it by value (23 KB for the
/// stack) and was moved into the next one out, once per request.
pub type Next = BoxEndpoint<'static, Response>;

/// How `app` stacks the layers: each one around the stack so far, the result behind a
/// pointer again.
pub trait Stack {
    /// `layer` around `self`.
    fn layer<F, Fut>(self, layer: F) -> Next
    where
        F: Fn(Arc<Next>, Box<Request>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = poem::Result<Response>> + Send + 'static;
}

impl Stack for Next {
    fn layer<F, Fut>(self, layer: F) -> Next
    where
        F: Fn(Arc<Next>, Box<Request>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = poem::Result<Response>> + Send + 'static,
    {
        Box::new(Layer { inner: Arc::new(self), layer })
    }
}

/// A layer function around the stack inside it. Its call boxes the request and the
/// function's future and nothing else (poem's `around` then `boxed` would wrap it in two
/// more futures, each holding the request until its first poll). An async function's future
/// holds its arguments twice, as given and as its locals, and every one of its states is
/// as large as the largest: with the request by value, each layer's future took 1 to 5 KB,
/// copied to the heap per layer per request; with the request boxed, one allocation of the
/// request per layer costs less than those copies (docs/benchmarks.md).
struct Layer<F> {
    inner: Arc<Next>,
    layer: F,
}

impl<F, Fut> DynEndpoint for Layer<F>
where
    F: Fn(Arc<Next>, Box<Request>) -> Fut + Send + Sync,
    Fut: Future<Output = poem::Result<Response>> + Send + 'static,
{
    type Output = Response;

    fn call(&self, req: Request) -> BoxFuture<'_, poem::Result<Response>> {
        Box::pin((self.layer)(Arc::clone(&self.inner), Box::new(req)))
    }
}

/// Calls `ep` and turns an error into the Error body. `ep`'s call boxes its own future, so a
/// layer's future holds the layers inside by a pointer.
///
/// Not an `async fn`: the call is made here, at once, so the future returned holds the
/// inner layers' boxed future and nothing else, not the request until its first poll (see
/// `Layer`).
fn respond(ep: &Next, req: Box<Request>) -> impl Future<Output = Response> + Send + '_ {
    let call = DynEndpoint::call(ep.as_ref(), *req);
    async move {
        match call.await {
            Ok(output) => output.into_response(),
            Err(err) => error_response(err),
        }
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
