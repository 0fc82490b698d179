//! The layers around the operations. Their order is written once, in `app`
//! (`crates/api/src/lib.rs`), with why each stands where it does; docs/architecture.md's
//! "The request path" walks a request through them.
//!
//! - [`idempotency_keys`]: takes the `Idempotency-Key` of an operation that declares it:
//!   refuses a malformed header or a key whose request still runs, or lets the operation
//!   run holding the key (it stores its outcome, or repeats the key's first response).
//! - [`drop_answers`]: with `memory://?drop-answer-every=N`, marks every Nth answer of a
//!   write that stored something for the connection to drop unanswered.
//! - [`representations`]: an operation's JSON answer compressed when the request asks for
//!   it and it is worth it, and, for the reads that declare `If-None-Match`, the `ETag` of
//!   that representation and `304 Not Modified` to a request that holds it.
//! - [`body_limit`]: reads at most 16 KiB of a body (poem's `SizeLimit` trusts only
//!   `Content-Length` and answers 411 to chunked bodies), and notes a JSON body that gives
//!   a key twice, for the operation to refuse.
//! - [`allow_header`]: 404 and 405 from the route table, and the `Allow` header RFC 9110
//!   requires on a 405.
//! - [`catch_panic`]: a panicking handler becomes a 500 Error body.
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
//! Every layer calls the layers inside it through `respond`, which turns an error raised
//! there (no route, a bad parameter, a missing body) into the Error body, so each layer
//! sees a finished response; an operation's own error responses pass unchanged.
//!
//! The layers learn a request's route from a route table read off the OpenAPI document
//! (`routes.rs`), not from a list of their own, so that the routes and the document cannot
//! drift apart.
//!
//! A new layer is a file here with one
//! `async fn(Arc<Next>, Box<Request>) -> poem::Result<Response>`, its line in the list above,
//! and its line in `app`, with why it stands there. The request comes boxed, the same box
//! from layer to layer, so that a layer's future holds a pointer to it, not its 472 bytes
//! (see [`Next`]).

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
pub use drop_answers::{AnswerDrops, drop_answers};
pub use guard::guard;
pub use idempotency_keys::idempotency_keys;
pub use lifecycle::{API_STABILITY, lifecycle_headers};
pub use measure::record_metrics;
pub use panic::catch_panic;
pub use representation::{COMPRESS_FROM, representations};
pub use resolve::resolve_route;
pub use standard_headers::{Kind, cache_headers, standard_headers};
pub use timeout::request_timeout;
pub use trace::{request_id, trace_request};

use crate::error::ApiError;
use crate::routes::Resolved;
use crate::state::AppState;

// What the layers read, the route table and the services, is request data that `app` adds
// as the outermost layers (`Next::data`): each layer is then a plain function, and `app`
// reads as the list of layers in their order. The operations read the services the same way.

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
///
/// A request goes through it boxed: it is boxed once, where it enters the stack
/// ([`Next::into_endpoint`]), and each layer hands the same box on. An async function's
/// future holds its arguments twice, as given and as its locals, and every one of its
/// states is as large as the largest: with the request by value (472 bytes), each layer's
/// future took 1 to 5 KB, copied to the heap per layer per request; boxed again by each
/// layer, the request was copied twice and allocated once per layer (docs/benchmarks.md).
pub struct Next(Box<dyn Inner>);

/// What a [`Next`] calls: a layer around the stack inside it, the data a request is given,
/// a change made to it, or the router at the bottom.
trait Inner: Send + Sync {
    fn call(&self, req: Box<Request>) -> BoxFuture<'_, poem::Result<Response>>;
}

impl Next {
    /// `layer` around `self`.
    #[must_use]
    pub fn layer<F, Fut>(self, layer: F) -> Self
    where
        F: Fn(Arc<Self>, Box<Request>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = poem::Result<Response>> + Send + 'static,
    {
        Self(Box::new(Layer { inner: Arc::new(self), layer }))
    }

    /// `wrap` around `self` when `enabled`; nothing otherwise, not even a layer that passes
    /// the request on.
    #[must_use]
    pub fn with_if(self, enabled: bool, wrap: impl FnOnce(Self) -> Self) -> Self {
        if enabled { wrap(self) } else { self }
    }

    /// Puts `value` on every request (`Request::data`) before the layers inside see it. It
    /// adds no future of its own: the insertion is made, and the call passed on, at once.
    #[must_use]
    pub fn data<T: Clone + Send + Sync + 'static>(self, value: T) -> Self {
        Self(Box::new(Data { inner: self, value }))
    }

    /// Applies `prepare` to every request before the layers inside see it, at once, with no
    /// future of its own.
    #[must_use]
    pub fn prepare(self, prepare: fn(&mut Request)) -> Self {
        Self(Box::new(Prepare { inner: self, prepare }))
    }

    /// The stack as poem's endpoint: the request is boxed here, once.
    pub fn into_endpoint(self) -> BoxEndpoint<'static, Response> {
        Box::new(self)
    }

    fn call(&self, req: Box<Request>) -> BoxFuture<'_, poem::Result<Response>> {
        self.0.call(req)
    }
}

impl DynEndpoint for Next {
    type Output = Response;

    fn call(&self, req: Request) -> BoxFuture<'_, poem::Result<Response>> {
        Next::call(self, Box::new(req))
    }
}

/// How `app` starts the stack: poem's router at its bottom.
pub trait Stack {
    /// The stack of poem's router alone, for the layers to go around.
    fn stack(self) -> Next;
}

impl Stack for BoxEndpoint<'static, Response> {
    fn stack(self) -> Next {
        Next(Box::new(Router(self)))
    }
}

/// Poem's router, at the bottom of the stack: the request leaves its box here.
struct Router(BoxEndpoint<'static, Response>);

impl Inner for Router {
    fn call(&self, req: Box<Request>) -> BoxFuture<'_, poem::Result<Response>> {
        DynEndpoint::call(self.0.as_ref(), *req)
    }
}

/// A layer function around the stack inside it. Its call boxes the function's future and
/// nothing else (poem's `around` then `boxed` would wrap it in two more futures, each
/// holding the request until its first poll).
struct Layer<F> {
    inner: Arc<Next>,
    layer: F,
}

impl<F, Fut> Inner for Layer<F>
where
    F: Fn(Arc<Next>, Box<Request>) -> Fut + Send + Sync,
    Fut: Future<Output = poem::Result<Response>> + Send + 'static,
{
    fn call(&self, req: Box<Request>) -> BoxFuture<'_, poem::Result<Response>> {
        Box::pin((self.layer)(Arc::clone(&self.inner), req))
    }
}

/// A value put on every request.
struct Data<T> {
    inner: Next,
    value: T,
}

impl<T: Clone + Send + Sync + 'static> Inner for Data<T> {
    fn call(&self, mut req: Box<Request>) -> BoxFuture<'_, poem::Result<Response>> {
        req.extensions_mut().insert(self.value.clone());
        self.inner.call(req)
    }
}

/// A change made to every request.
struct Prepare {
    inner: Next,
    prepare: fn(&mut Request),
}

impl Inner for Prepare {
    fn call(&self, mut req: Box<Request>) -> BoxFuture<'_, poem::Result<Response>> {
        (self.prepare)(&mut req);
        self.inner.call(req)
    }
}

/// Calls `ep` and turns an error into the Error body. `ep`'s call boxes its own future, so a
/// layer's future holds the layers inside by a pointer.
///
/// Not an `async fn`: the call is made here, at once, so the future returned holds the
/// inner layers' boxed future and nothing else, not the request until its first poll (see
/// `Layer`).
fn respond(ep: &Next, req: Box<Request>) -> impl Future<Output = Response> + Send + '_ {
    let call = ep.call(req);
    async move {
        let mut response = match call.await {
            Ok(output) => output.into_response(),
            Err(err) => error_response(err),
        };
        make_room(&mut response);
        response
    }
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

/// The response for an error: its own if an operation built it, the Error body otherwise.
pub fn error_response(err: poem::Error) -> Response {
    if err.is_from_response() {
        err.into_response()
    } else {
        ApiError::from_poem(&err).into_response()
    }
}
