//! The HTTP server: hyper's HTTP/1.1 connections, serving the app, with the
//! limits that keep slow and broken clients from holding it (see `docs/operations.md`).
//!
//! poem's own `Server` has an inactivity timeout only: a client that sends a byte every few
//! seconds holds a connection for ever, headers and bodies have no deadline, connections are
//! not capped, and an accept loop that runs out of file descriptors retries at once. This
//! one gives every connection a clock (`connection::Activity`): headers within
//! [`Limits::header_timeout`], a body within [`Limits::body_timeout`] of its headers, and
//! [`Limits::idle_timeout`] between requests. Past [`Limits::max_connections`], a new
//! connection is answered 503 and closed at once. A request whose body a proxy could
//! delimit otherwise (`Content-Length` with `Transfer-Encoding`, a `Transfer-Encoding` other
//! than `chunked`) is answered 400 and its connection closed before the app sees it
//! (`framing.rs`).

mod accept;
mod answers;
mod connection;
mod framing;
mod unread;

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use poem::http::uri::Scheme;
use poem::web::{LocalAddr, RemoteAddr};
use poem::{Addr, Endpoint, EndpointExt, Response};
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub use answers::AnswerFaults;
use answers::{AnswerCounter, AnswerOutcome};
use connection::{Activity, Watched};
use framing::{AmbiguousFraming, HeadScan};

/// How long a client may take, and how many connections it may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// A request's headers must be complete within this time of its first byte (of the
    /// connection's opening, for its first request).
    pub header_timeout: Duration,
    /// A request's body must be complete within this time of its headers.
    pub body_timeout: Duration,
    /// A connection with no request in flight is closed after this time.
    pub idle_timeout: Duration,
    /// The most connections served at once; more are answered 503 and closed.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            max_connections: 10_000,
        }
    }
}

/// A bound listener, ready to serve.
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    limits: Limits,
    answers: Option<Arc<AnswerCounter>>,
}

impl Server {
    /// Listens on `address` (`host:port`).
    pub async fn bind(address: &str, limits: Limits) -> io::Result<Self> {
        Ok(Self { listener: TcpListener::bind(address).await?, limits, answers: None })
    }

    /// For harnesses (`memory://?drop-answer-every=N` and the like): what becomes of the
    /// answers of stored writes, as [`AnswerFaults`] says.
    #[must_use]
    pub fn answer_faults(self, faults: AnswerFaults) -> Self {
        Self { answers: AnswerCounter::new(faults).map(Arc::new), ..self }
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves `app` until `shutdown` resolves, then stops accepting and lets the open
    /// connections finish their requests for at most `grace`.
    pub async fn run<E>(self, app: E, shutdown: impl Future<Output = ()>, grace: Duration)
    where
        E: Endpoint + 'static,
    {
        let Self { listener, limits, answers } = self;
        let local = listener.local_addr().ok();
        let app: Arc<dyn DynApp> = Arc::new(app.map_to_response());
        let slots = Arc::new(Semaphore::new(limits.max_connections));
        let graceful = GracefulShutdown::new();
        // HTTP/1.1 only: a connection's clock reads the start of a request from its first
        // bytes, which HTTP/2's control frames (PING, WINDOW_UPDATE) would fake; HTTP/2 is
        // the proxy's to speak.
        let mut builder = auto::Builder::new(TokioExecutor::new()).http1_only();
        builder.http1().keep_alive(true);
        let mut accepting = accept::Accepting::new(limits.max_connections);
        tokio::pin!(shutdown);
        loop {
            let socket = tokio::select! {
                () = &mut shutdown => break,
                accepted = listener.accept() => accepting.accepted(accepted).await,
            };
            let Some((socket, remote)) = socket else { continue };
            let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
                accepting.over_capacity(&socket);
                continue;
            };
            accepting.under_capacity();
            let activity = Activity::new(limits);
            let framing = Arc::new(AmbiguousFraming::default());
            let service = AppService::new(
                Arc::clone(&app),
                Arc::clone(&activity),
                Arc::clone(&framing),
                answers.clone(),
                (local, remote),
            );
            let scan = HeadScan::new(framing);
            let io = TokioIo::new(Watched::new(socket, Arc::clone(&activity), scan));
            let connection = graceful.watch(builder.serve_connection(io, service).into_owned());
            tokio::spawn(serve(connection, activity, remote, slot));
        }
        drop(listener);
        if tokio::time::timeout(grace, graceful.shutdown()).await.is_err() {
            tracing::warn!(
                grace_secs = grace.as_secs_f64(),
                "connections still open after the shutdown grace period are closed"
            );
        }
    }
}

/// One connection, until it ends or its clock runs out.
async fn serve(
    connection: impl Future<Output = Result<(), Box<dyn std::error::Error + Send + Sync>>>,
    activity: Arc<Activity>,
    remote: SocketAddr,
    _slot: OwnedSemaphorePermit,
) {
    tokio::select! {
        ended = connection => {
            if let Err(err) = ended {
                tracing::debug!(%remote, error = %err, "connection ended with an error");
            }
        }
        phase = activity.expired() => {
            tracing::debug!(%remote, reason = phase.reason(), "connection closed");
        }
    }
}

/// The app behind a pointer, as every connection's service calls it.
trait DynApp: Send + Sync {
    fn call(&self, req: poem::Request) -> BoxFuture<'_, Response>;
}

impl<E: Endpoint<Output = Response>> DynApp for E {
    fn call(&self, req: poem::Request) -> BoxFuture<'_, Response> {
        Box::pin(self.get_response(req))
    }
}

/// The hyper service of one connection: each request goes to the app as poem's server
/// would hand it, its body on the connection's clock, unless its framing is refused.
#[derive(Clone)]
struct AppService {
    app: Arc<dyn DynApp>,
    activity: Arc<Activity>,
    /// What the connection's socket saw of its header blocks.
    framing: Arc<AmbiguousFraming>,
    /// Only with [`AnswerFaults`].
    answers: Option<Arc<AnswerCounter>>,
    local: LocalAddr,
    remote: RemoteAddr,
}

type ResponseBody = http_body_util::combinators::BoxBody<bytes::Bytes, io::Error>;

impl AppService {
    fn new(
        app: Arc<dyn DynApp>,
        activity: Arc<Activity>,
        framing: Arc<AmbiguousFraming>,
        answers: Option<Arc<AnswerCounter>>,
        (local, remote): (Option<SocketAddr>, SocketAddr),
    ) -> Self {
        let local = LocalAddr(local.map_or(Addr::Custom("unknown", "".into()), Addr::SocketAddr));
        let remote = RemoteAddr(Addr::SocketAddr(remote));
        Self { app, activity, framing, answers, local, remote }
    }
}

/// The answer was dropped on purpose: the connection closes without it.
#[derive(Debug, thiserror::Error)]
#[error("the answer was dropped on purpose (drop-answer-every)")]
pub struct AnswerDropped;

impl hyper::service::Service<hyper::Request<Incoming>> for AppService {
    type Response = hyper::Response<ResponseBody>;
    type Error = AnswerDropped;
    type Future = BoxFuture<'static, Result<Self::Response, AnswerDropped>>;

    fn call(&self, req: hyper::Request<Incoming>) -> Self::Future {
        let Self { app, activity, framing, answers, local, remote } = self.clone();
        Box::pin(async move {
            let _request = activity.begin_request();
            let mut req = poem::Request::from((req, local, remote, Scheme::HTTP));
            if let Some(reason) = framing::refused(req.headers(), &framing) {
                // Nothing of the body is read: where it ends is what is in doubt.
                return Ok(framing::refusal(&req, reason).into());
            }
            let body = req.take_body();
            let (body, unread) = activity.time_body(req.headers(), body);
            req.set_body(body);
            let method = answers.as_ref().map(|_| req.method().clone());
            let mut response = app.call(req).await;
            if let (Some(answers), Some(method)) = (&answers, method) {
                match answers.outcome(&method, &response).await {
                    // hyper closes a connection whose service fails, writing nothing.
                    AnswerOutcome::Dropped => return Err(AnswerDropped),
                    AnswerOutcome::Unavailable => response = answers::unavailable(&response),
                    AnswerOutcome::Sent => {}
                }
            }
            if let Some(unread) = unread {
                unread.read_away(response.headers_mut()).await;
            }
            Ok(response.into())
        })
    }
}
