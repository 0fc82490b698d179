//! A connection's socket, with its read deadlines.
//!
//! hyper's `header_read_timeout` also runs while a keep-alive connection waits, so one value
//! cannot give a short header timeout and a longer idle one. The socket keeps both as one
//! timer on its reads: the header timeout runs from a request's first byte (from the
//! connection's opening, for its first request), the idle timeout from the end of the last
//! request, and neither while a request is in flight, whose body has its own deadline
//! (`body.rs`). A read past the timer fails, and hyper drops the connection. The socket
//! also shows each request head it reads to the connection's framing check (`framing.rs`).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, ReadBuf};
use tokio::time::{Instant, Sleep};

use super::framing::HeadScan;

/// What a connection's socket and its requests share.
#[derive(Debug, Default)]
pub struct Connection {
    /// Requests handed to the app and not yet answered.
    in_flight: AtomicUsize,
    /// Requests answered so far.
    answered: AtomicUsize,
    /// A request head held both `Content-Length` and `Transfer-Encoding`.
    ambiguous_framing: AtomicBool,
}

impl Connection {
    /// Whether a request head on this connection held both framing fields.
    pub fn ambiguous_framing(&self) -> bool {
        self.ambiguous_framing.load(Ordering::Relaxed)
    }

    /// A request goes to the app; the socket's timer stops until the guard drops.
    pub fn begin_request(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(Arc::clone(self))
    }
}

/// A request in flight on its connection, until dropped (even if its future is cancelled).
#[derive(Debug)]
pub struct InFlight(Arc<Connection>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.answered.fetch_add(1, Ordering::Relaxed);
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A socket's read half, whose reads fail once its connection waits past its header or idle
/// timeout.
pub struct Socket<IO> {
    io: IO,
    connection: Arc<Connection>,
    header_timeout: Duration,
    idle_timeout: Duration,
    deadline: Pin<Box<Sleep>>,
    /// Between requests: the next request's first bytes have arrived.
    head_began: bool,
    /// Requests answered when the idle timer last started.
    answered: usize,
    head: HeadScan,
}

impl<IO> Socket<IO> {
    /// A socket just accepted, with `(header, idle)` timeouts: its first request's headers
    /// are due.
    pub fn new(io: IO, connection: Arc<Connection>, (header, idle): (Duration, Duration)) -> Self {
        let deadline = Box::pin(tokio::time::sleep(header));
        let head = HeadScan::default();
        Self {
            io,
            connection,
            header_timeout: header,
            idle_timeout: idle,
            deadline,
            head_began: true,
            answered: 0,
            head,
        }
    }

    fn wait(&mut self, timeout: Duration) {
        self.deadline.as_mut().reset(Instant::now() + timeout);
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Socket<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let busy = self.connection.in_flight.load(Ordering::Relaxed) > 0;
        let answered = self.connection.answered.load(Ordering::Relaxed);
        if !busy && answered != self.answered {
            // The last request was answered: the connection is idle until a new one begins.
            let idle = self.idle_timeout;
            self.wait(idle);
            self.head_began = false;
            self.head = HeadScan::default();
            self.answered = answered;
        }
        let before = buf.filled().len();
        match Pin::new(&mut self.io).poll_read(cx, buf) {
            Poll::Ready(Ok(())) if !busy && buf.filled().len() > before => {
                if !std::mem::replace(&mut self.head_began, true) {
                    let header = self.header_timeout;
                    self.wait(header);
                }
                if self.head.read(&buf.filled()[before..]) {
                    self.connection.ambiguous_framing.store(true, Ordering::Relaxed);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Pending if !busy => {
                ready!(self.deadline.as_mut().poll(cx));
                let why = if self.head_began { "header timeout" } else { "idle timeout" };
                Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, why)))
            }
            read => read,
        }
    }
}
