//! The HTTP server: hyper's HTTP/1.1 connections, serving the app, with the limits that keep
//! slow and broken clients from holding it (`docs/operations.md#slow-and-broken-clients`).
//!
//! poem's own `Server` has an inactivity timeout only. This one adds a header and an idle
//! deadline on the socket (`socket.rs`), a body deadline (`body.rs`), a cap on connections
//! and a backoff when descriptors run out (`accept.rs`), and refuses framing a proxy could
//! read otherwise (`framing.rs`).

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use poem::endpoint::BoxEndpoint;
use poem::http::uri::Scheme;
use poem::web::{LocalAddr, RemoteAddr};
use poem::{Addr, Endpoint, EndpointExt};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::Refused;
use super::body::KeptBody;
use super::socket::{Connection, Socket};
use super::{accept, framing};

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

/// An answer the app marks with this extension is not sent: the connection closes without
/// it, as when a network drops a response (the test kit's `drop-answer-every`).
#[derive(Debug, Clone, Copy)]
pub struct DropAnswer;

/// A bound listener, ready to serve.
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    limits: Limits,
}

impl Server {
    /// Listens on `address` (`host:port`).
    pub async fn bind(address: &str, limits: Limits) -> io::Result<Self> {
        Ok(Self { listener: TcpListener::bind(address).await?, limits })
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
        let Self { listener, limits } = self;
        let local = LocalAddr(
            listener.local_addr().map_or(Addr::Custom("unknown", "".into()), Addr::SocketAddr),
        );
        let app = Arc::new(app.map_to_response().boxed());
        let slots = Arc::new(Semaphore::new(limits.max_connections));
        let graceful = GracefulShutdown::new();
        // HTTP/1.1 only: a socket's timer reads the start of a request from its first bytes,
        // which HTTP/2's control frames (PING, WINDOW_UPDATE) would fake; HTTP/2 is the
        // proxy's to speak. The socket keeps the header deadline, not hyper.
        let mut builder = http1::Builder::new();
        builder.header_read_timeout(None);
        let mut accepting = accept::Accepting::new(limits.max_connections);
        tokio::pin!(shutdown);
        loop {
            let socket = tokio::select! {
                () = &mut shutdown => break,
                accepted = listener.accept() => accepting.accepted(accepted).await,
            };
            let Some((socket, remote)) = socket else { continue };
            let slot = Arc::clone(&slots).try_acquire_owned();
            if !accepting.admits(&socket, slot.is_ok()) {
                continue;
            }
            let connection = Arc::new(Connection::default());
            let service = AppService {
                app: Arc::clone(&app),
                connection: Arc::clone(&connection),
                body_timeout: limits.body_timeout,
                local: local.clone(),
                remote: RemoteAddr(Addr::SocketAddr(remote)),
            };
            let (read, write) = socket.into_split();
            let io = TokioIo::new(tokio::io::join(
                Socket::new(read, connection, (limits.header_timeout, limits.idle_timeout)),
                write,
            ));
            let service = service_fn(move |req| service.clone().answer(req));
            let connection = graceful.watch(builder.serve_connection(io, service));
            tokio::spawn(async move {
                if let Err(err) = connection.await {
                    tracing::debug!(%remote, error = %err, "connection ended with an error");
                }
                drop(slot);
            });
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

/// The hyper service of one connection: each request goes to the app as poem's server
/// would hand it, its body on a deadline, unless its framing is refused.
#[derive(Clone)]
struct AppService {
    app: Arc<BoxEndpoint<'static>>,
    connection: Arc<Connection>,
    body_timeout: Duration,
    local: LocalAddr,
    remote: RemoteAddr,
}

type ResponseBody = http_body_util::combinators::BoxBody<bytes::Bytes, io::Error>;

impl AppService {
    async fn answer(
        self,
        req: hyper::Request<Incoming>,
    ) -> io::Result<hyper::Response<ResponseBody>> {
        let _in_flight = self.connection.begin_request();
        let mut req = poem::Request::from((req, self.local, self.remote, Scheme::HTTP));
        // A refused request's body is not read: where it ends is what is in doubt.
        let kept = if let Some(reason) =
            framing::refused(req.headers(), self.connection.ambiguous_framing())
        {
            req.extensions_mut().insert(Refused(reason));
            None
        } else {
            KeptBody::take(&mut req, self.body_timeout)
        };
        let mut response = self.app.get_response(req).await;
        if response.extensions().get::<DropAnswer>().is_some() {
            return Err(io::Error::other("the answer was dropped on purpose (drop-answer-every)"));
        }
        if let Some(kept) = kept {
            if kept.timed_out() {
                return Err(io::Error::other(
                    "the request body did not arrive within the body timeout",
                ));
            }
            kept.read_away(response.headers_mut()).await;
        }
        Ok(response.into())
    }
}
