//! A request's body: due within the body timeout of its headers, else the handlers' read
//! fails and the connection closes unanswered; and read away after the answer.
//!
//! Many answers come before the body is read (a 401, a 429, a 413, a 503 of the request
//! timeout), and HTTP/1.1 cannot take the next request on a connection until the last body
//! is off it (RFC 9112 §9.6): hyper would close it silently, and a client's next request
//! would meet a broken pipe. So the handlers read through a [`BodyHandle`] while the
//! connection keeps the body, and [`KeptBody::read_away`] reads what is left, up to
//! [`READ_AWAY_LIMIT`] bytes within [`READ_AWAY_TIME`]; a longer or slower rest gets the
//! answer with `Connection: close` (`docs/operations.md#slow-and-broken-clients`).

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes};
use http_body::{Frame, SizeHint};
use http_body_util::BodyExt;
use http_body_util::combinators::BoxBody;
use poem::http::header::{CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING};
use poem::http::{HeaderMap, HeaderValue};
use tokio::time::Sleep;

/// The most bytes of a body left unread that the server reads away to keep a connection.
pub const READ_AWAY_LIMIT: usize = 64 * 1024;
/// How long after the answer is ready the rest of a body may take to arrive.
pub const READ_AWAY_TIME: Duration = Duration::from_secs(1);

/// A request body, its deadline, and how far it has been read.
struct Body {
    inner: BoxBody<Bytes, io::Error>,
    deadline: Pin<Box<Sleep>>,
    finished: bool,
    timed_out: bool,
}

/// The connection's hold on a request's body, whoever reads it.
pub struct KeptBody(Arc<Mutex<Body>>);

/// The handlers' handle on a request's body: reads go to the body the connection holds.
struct BodyHandle(Arc<Mutex<Body>>);

fn lock(body: &Mutex<Body>) -> MutexGuard<'_, Body> {
    body.lock().unwrap_or_else(PoisonError::into_inner)
}

impl KeptBody {
    /// Takes `req`'s body, if its framing announces one, to arrive within `timeout`, and
    /// hands the handlers a handle on it.
    pub fn take(req: &mut poem::Request, timeout: Duration) -> Option<Self> {
        let headers = req.headers();
        let announced = headers.contains_key(TRANSFER_ENCODING)
            || headers.get(CONTENT_LENGTH).is_some_and(|length| length.as_bytes() != b"0");
        if !announced {
            return None;
        }
        let body = Body {
            inner: req.take_body().into(),
            deadline: Box::pin(tokio::time::sleep(timeout)),
            finished: false,
            timed_out: false,
        };
        let kept = Arc::new(Mutex::new(body));
        req.set_body(poem::Body::from(BoxBody::new(BodyHandle(Arc::clone(&kept)))));
        Some(Self(kept))
    }

    /// Whether the body missed its deadline.
    pub fn timed_out(&self) -> bool {
        lock(&self.0).timed_out
    }

    /// Reads away what the handlers left of the body before `headers` go out, or marks them
    /// `Connection: close` when the rest is too long or too slow to wait for.
    pub async fn read_away(self, headers: &mut HeaderMap) {
        let mut body = {
            let mut kept = lock(&self.0);
            if kept.finished || http_body::Body::is_end_stream(&kept.inner) {
                return;
            }
            std::mem::take(&mut kept.inner)
        };
        let read = tokio::time::timeout(READ_AWAY_TIME, async {
            let mut total = 0usize;
            while let Some(frame) = body.frame().await {
                let Ok(frame) = frame else { return false };
                total = total.saturating_add(frame.data_ref().map_or(0, Buf::remaining));
                if total > READ_AWAY_LIMIT {
                    return false;
                }
            }
            true
        })
        .await;
        if read != Ok(true) {
            headers.insert(CONNECTION, HeaderValue::from_static("close"));
        }
    }
}

impl http_body::Body for BodyHandle {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let mut body = lock(&self.0);
        let body = &mut *body;
        match Pin::new(&mut body.inner).poll_frame(cx) {
            Poll::Ready(None) => {
                body.finished = true;
                Poll::Ready(None)
            }
            Poll::Pending if body.deadline.as_mut().poll(cx).is_ready() => {
                body.timed_out = true;
                let late = "the request body did not arrive within the body timeout";
                Poll::Ready(Some(Err(io::Error::new(io::ErrorKind::TimedOut, late))))
            }
            frame => frame,
        }
    }

    fn is_end_stream(&self) -> bool {
        let body = lock(&self.0);
        body.finished || http_body::Body::is_end_stream(&body.inner)
    }

    fn size_hint(&self) -> SizeHint {
        http_body::Body::size_hint(&lock(&self.0).inner)
    }
}
