//! One connection's clock: what it is waiting for, and until when.
//!
//! A connection is in one of three phases. It starts waiting for its first request's
//! headers, which must be complete within the header timeout of the connection. Once the
//! headers are in, the request is the handlers' business: its body must arrive within the
//! body timeout of the headers ([`TimedBody`]), and the request itself is bounded by the
//! request timeout layer. When the last request in flight has its response, the connection
//! is idle; the first byte of a new request starts the header timeout again, and an idle
//! connection that sends nothing is closed after the idle timeout.
//!
//! The [`Watched`] socket reports reads to the [`Activity`], and [`Activity::expired`]
//! resolves when the current phase has run out: the connection is then dropped, closing
//! the socket. It also shows what it reads to the connection's [`HeadScan`], which looks
//! for framing a proxy could read otherwise (`framing.rs`).

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use http_body_util::combinators::BoxBody;
use poem::Body;
use poem::http::HeaderMap;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio::time::{Instant, Sleep};

use super::Limits;
use super::framing::HeadScan;
use super::unread::KeptBody;

/// What a connection is waiting for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// A request's headers, which have begun to arrive (or the first request's, from the
    /// moment the connection was accepted).
    Headers,
    /// Requests are being handled; their own deadlines apply.
    Busy,
    /// Nothing: the last response went out and no new request has begun.
    Idle,
    /// A request's body, which did not arrive in time: the connection is to close now.
    Body,
}

impl Phase {
    /// Why a connection in this phase was closed, for the log.
    pub fn reason(self) -> &'static str {
        match self {
            Self::Headers => "the request headers did not arrive within the header timeout",
            Self::Busy => "the connection was closed while busy",
            Self::Idle => "the connection was idle past the idle timeout",
            Self::Body => "the request body did not arrive within the body timeout",
        }
    }
}

#[derive(Debug)]
struct State {
    phase: Phase,
    in_flight: usize,
    deadline: Option<Instant>,
}

/// The phase and deadline of one connection, shared by its socket, its requests and its
/// watchdog.
///
/// The watchdog ([`Activity::expired`]) is not told of every change: each request moves
/// the phase two or three times, and a wake-up each time polled the connection's task again
/// and set a new timer, two or three times a request. It looks at
/// the state at least once every [`Activity::tick`] instead, and sleeps no later than the
/// deadline it saw. Every change but one sets a deadline at least a tick away, or none, so
/// the watchdog's next look comes before that deadline whenever the change was made; the
/// one that brings a deadline forward (a body out of time) tells it.
#[derive(Debug)]
pub struct Activity {
    limits: Limits,
    state: Mutex<State>,
    /// Told when a deadline is brought forward.
    brought_forward: Notify,
}

impl Activity {
    /// A connection just accepted: its first request's headers are due.
    pub fn new(limits: Limits) -> Arc<Self> {
        let state = State {
            phase: Phase::Headers,
            in_flight: 0,
            deadline: Some(Instant::now() + limits.header_timeout),
        };
        Arc::new(Self { limits, state: Mutex::new(state), brought_forward: Notify::new() })
    }

    /// The longest the watchdog sleeps between two looks at the state: no change but a
    /// body's timeout sets a deadline closer than this.
    fn tick(&self) -> Duration {
        let Limits { header_timeout, idle_timeout, .. } = self.limits;
        header_timeout.min(idle_timeout).max(Duration::from_millis(1))
    }

    /// Changes the state; the watchdog sees it at its next look (see [`Activity`]).
    fn update(&self, change: impl FnOnce(&mut State, &Limits)) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        change(&mut state, &self.limits);
    }

    /// Bytes arrived: on an idle connection, a new request has begun.
    fn on_read(&self) {
        self.update(|state, limits| {
            if state.phase == Phase::Idle {
                state.phase = Phase::Headers;
                state.deadline = Some(Instant::now() + limits.header_timeout);
            }
        });
    }

    /// A request's headers are in and it goes to the handlers; the guard ends it.
    pub fn begin_request(self: &Arc<Self>) -> RequestGuard {
        self.update(|state, _| {
            state.in_flight += 1;
            if state.phase != Phase::Body {
                state.phase = Phase::Busy;
                state.deadline = None;
            }
        });
        RequestGuard(Arc::clone(self))
    }

    fn end_request(&self) {
        self.update(|state, limits| {
            state.in_flight = state.in_flight.saturating_sub(1);
            if state.in_flight == 0 && state.phase == Phase::Busy {
                state.phase = Phase::Idle;
                state.deadline = Some(Instant::now() + limits.idle_timeout);
            }
        });
    }

    /// A request body ran out of time: the connection closes now.
    fn body_timed_out(&self) {
        self.update(|state, _| {
            state.phase = Phase::Body;
            state.deadline = Some(Instant::now());
        });
        self.brought_forward.notify_one();
    }

    /// Resolves with the phase that ran out of time, when one does.
    pub async fn expired(&self) -> Phase {
        loop {
            let brought_forward = self.brought_forward.notified();
            let (phase, deadline) = {
                let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
                (state.phase, state.deadline)
            };
            let now = Instant::now();
            let next_look = now + self.tick();
            let wake = match deadline {
                Some(deadline) if deadline <= now => return phase,
                Some(deadline) => deadline.min(next_look),
                None => next_look,
            };
            tokio::select! {
                () = tokio::time::sleep_until(wake) => {}
                () = brought_forward => {}
            }
        }
    }

    /// The request's body, to arrive within the body timeout from now, and the
    /// connection's hold on what the handlers leave of it (none for a request without one).
    pub fn time_body(
        self: &Arc<Self>,
        headers: &HeaderMap,
        body: Body,
    ) -> (Body, Option<KeptBody>) {
        if !may_have_body(headers) {
            return (body, None);
        }
        let deadline = Instant::now() + self.limits.body_timeout;
        let timed = BoxBody::new(TimedBody {
            inner: body.into(),
            deadline: Box::pin(tokio::time::sleep_until(deadline)),
            activity: Arc::clone(self),
        });
        let (unread, held) = KeptBody::hold(timed);
        (Body::from(BoxBody::new(held)), Some(unread))
    }
}

/// Whether a request announces a body (HTTP/1.1's framing).
fn may_have_body(headers: &HeaderMap) -> bool {
    use poem::http::header::{CONTENT_LENGTH, TRANSFER_ENCODING};
    headers.contains_key(TRANSFER_ENCODING)
        || headers.get(CONTENT_LENGTH).is_some_and(|length| length.as_bytes() != b"0")
}

/// Ends a request's part in its connection's phase when dropped, even if the request's
/// future is cancelled.
#[derive(Debug)]
pub struct RequestGuard(Arc<Activity>);

impl Drop for RequestGuard {
    fn drop(&mut self) {
        self.0.end_request();
    }
}

/// A request body that closes its connection when it has not arrived by its deadline.
struct TimedBody {
    inner: BoxBody<Bytes, io::Error>,
    deadline: Pin<Box<Sleep>>,
    activity: Arc<Activity>,
}

impl http_body::Body for TimedBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(frame);
        }
        ready!(self.deadline.as_mut().poll(cx));
        // No answer: the connection's watchdog closes it now, with the request unanswered.
        self.activity.body_timed_out();
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A socket that tells its connection's [`Activity`] when bytes arrive, and shows them to
/// its [`HeadScan`].
pub struct Watched<IO> {
    io: IO,
    activity: Arc<Activity>,
    scan: HeadScan,
}

impl<IO> Watched<IO> {
    /// `io`, reporting to `activity` and `scan`.
    pub fn new(io: IO, activity: Arc<Activity>, scan: HeadScan) -> Self {
        Self { io, activity, scan }
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Watched<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        ready!(Pin::new(&mut self.io).poll_read(cx, buf))?;
        if buf.filled().len() > before {
            self.activity.on_read();
            self.scan.read(&buf.filled()[before..]);
        }
        Poll::Ready(Ok(()))
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Watched<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADERS: Duration = Duration::from_secs(10);
    const IDLE: Duration = Duration::from_secs(60);

    fn activity() -> Arc<Activity> {
        Activity::new(Limits { header_timeout: HEADERS, idle_timeout: IDLE, ..Limits::default() })
    }

    /// The watchdog of `activity`, answering the phase that ran out and when.
    fn watch(activity: &Arc<Activity>) -> tokio::task::JoinHandle<(Phase, Instant)> {
        let activity = Arc::clone(activity);
        tokio::spawn(async move { (activity.expired().await, Instant::now()) })
    }

    /// Asserts that `watchdog` closes its connection for `phase`, `after` past `start` (to
    /// the timer's millisecond).
    async fn closes(
        watchdog: tokio::task::JoinHandle<(Phase, Instant)>,
        start: Instant,
        (phase, after): (Phase, Duration),
    ) {
        let (ran_out, at) = watchdog.await.expect("the watchdog");
        assert_eq!(ran_out, phase);
        let elapsed = at - start;
        let on_time = elapsed >= after && elapsed < after + Duration::from_millis(5);
        assert!(on_time, "closed {elapsed:?} in, not {after:?}");
    }

    /// Requests that come and go move the deadline on without telling the watchdog: the
    /// connection closes at the idle deadline of the last one, neither before nor later.
    #[tokio::test(start_paused = true)]
    async fn an_idle_connection_closes_at_its_last_requests_idle_deadline() {
        let activity = activity();
        let start = Instant::now();
        let watchdog = watch(&activity);
        for _ in 0..3 {
            activity.on_read();
            drop(activity.begin_request());
            tokio::time::advance(Duration::from_secs(45)).await;
        }
        closes(watchdog, start, (Phase::Idle, Duration::from_secs(90) + IDLE)).await;
    }

    /// A request whose headers began on an idle connection and never completed closes it at
    /// the header timeout, though the watchdog last looked while the connection was idle.
    #[tokio::test(start_paused = true)]
    async fn headers_that_stall_close_the_connection_at_the_header_timeout() {
        let activity = activity();
        let start = Instant::now();
        let watchdog = watch(&activity);
        drop(activity.begin_request());
        tokio::time::advance(Duration::from_secs(33)).await;
        activity.on_read();
        closes(watchdog, start, (Phase::Headers, Duration::from_secs(33) + HEADERS)).await;
    }

    /// A body out of time closes the connection at once, however far off the next look.
    #[tokio::test(start_paused = true)]
    async fn a_body_out_of_time_closes_the_connection_at_once() {
        let activity = activity();
        let _request = activity.begin_request();
        let start = Instant::now();
        let watchdog = watch(&activity);
        tokio::time::advance(Duration::from_secs(3)).await;
        activity.body_timed_out();
        closes(watchdog, start, (Phase::Body, Duration::from_secs(3))).await;
    }
}
