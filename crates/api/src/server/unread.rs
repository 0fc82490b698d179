//! What a request leaves of its body: read away after the answer, or the connection closes.
//!
//! Many answers come before a request's body is read: a 401 or a 429 of the guard, a 415, a
//! 413 after the first 16 KiB, a 503 of the request timeout. HTTP/1.1 cannot take the next
//! request on a connection until the last body has been read off it (RFC 9112 §9.6). hyper,
//! left alone, closes such a connection after the answer without saying so, and a client
//! that sends its next request on it meets a broken pipe instead of the answer's
//! `Retry-After`. So the handlers read the body through a [`BodyHandle`] while the
//! connection keeps the body itself: once the answer is ready, [`KeptBody::read_away`] reads
//! what is left, up to [`READ_AWAY_LIMIT`] bytes arriving within [`READ_AWAY_TIME`], and the
//! connection stays open; a longer or slower body gets the answer with `Connection: close`,
//! and the connection closes after it (`docs/operations.md#slow-and-broken-clients`).

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes};
use http_body::{Frame, SizeHint};
use http_body_util::BodyExt;
use http_body_util::combinators::BoxBody;
use poem::http::header::CONNECTION;
use poem::http::{HeaderMap, HeaderValue};

/// The most bytes of a body left unread that the server reads away to keep a connection.
pub const READ_AWAY_LIMIT: usize = 64 * 1024;
/// How long after the answer is ready the rest of a body may take to arrive.
pub const READ_AWAY_TIME: Duration = Duration::from_secs(1);

/// A request body, and whether it has been read to its end.
struct Body {
    inner: BoxBody<Bytes, io::Error>,
    finished: bool,
}

/// The connection's hold on a request's body, whoever reads it.
pub struct KeptBody(Arc<Mutex<Body>>);

/// The handlers' handle on a request's body: reads go to the body the connection holds.
pub struct BodyHandle(Arc<Mutex<Body>>);

impl KeptBody {
    /// Holds `body`, and gives the handle to hand the handlers.
    pub fn hold(body: BoxBody<Bytes, io::Error>) -> (Self, BodyHandle) {
        let shared = Arc::new(Mutex::new(Body { inner: body, finished: false }));
        (Self(Arc::clone(&shared)), BodyHandle(shared))
    }

    /// Reads away what the handlers left of the body before `headers` go out, or marks them
    /// `Connection: close` when the rest is too long or too slow to wait for.
    pub async fn read_away(self, headers: &mut HeaderMap) {
        let mut body = {
            let mut held = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            if held.finished || http_body::Body::is_end_stream(&held.inner) {
                return;
            }
            std::mem::take(&mut held.inner)
        };
        let read = tokio::time::timeout(READ_AWAY_TIME, async {
            let mut total = 0usize;
            while let Some(frame) = body.frame().await {
                let Ok(frame) = frame else { return false };
                if let Some(data) = frame.data_ref() {
                    total = total.saturating_add(data.remaining());
                    if total > READ_AWAY_LIMIT {
                        return false;
                    }
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
        let mut body = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let frame = Pin::new(&mut body.inner).poll_frame(cx);
        if let Poll::Ready(None) = frame {
            body.finished = true;
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        let body = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        body.finished || http_body::Body::is_end_stream(&body.inner)
    }

    fn size_hint(&self) -> SizeHint {
        http_body::Body::size_hint(&self.0.lock().unwrap_or_else(PoisonError::into_inner).inner)
    }
}
