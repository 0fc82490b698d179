//! The accept loop's troubles: a process out of file descriptors, and a server at its
//! connection limit. Each is logged once when it begins and once when it ends, however
//! many connections it touches.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpStream;

use crate::error::{ApiError, ErrorCode};
use crate::telemetry::{ACCEPT_BACKOFFS, CONNECTIONS_REFUSED};

/// How long the loop waits before accepting again when the process is out of descriptors:
/// retrying at once would spin a core while nothing can be accepted.
const EXHAUSTED_BACKOFF: Duration = Duration::from_millis(100);

/// The accept loop's state: which trouble it is in, and the answer to a connection over
/// the limit.
#[derive(Debug)]
pub struct Accepting {
    refusal: Vec<u8>,
    exhausted: bool,
    full: bool,
}

impl Accepting {
    /// For a server of at most `max_connections`.
    pub fn new(max_connections: usize) -> Self {
        Self { refusal: refusal(max_connections), exhausted: false, full: false }
    }

    /// The socket `accepted` holds, if any; out of descriptors, waits a little first.
    pub async fn accepted(
        &mut self,
        accepted: io::Result<(TcpStream, SocketAddr)>,
    ) -> Option<(TcpStream, SocketAddr)> {
        match accepted {
            Ok(socket) => {
                if std::mem::take(&mut self.exhausted) {
                    tracing::warn!("accepting connections again");
                }
                Some(socket)
            }
            Err(err) if is_exhaustion(&err) => {
                if !std::mem::replace(&mut self.exhausted, true) {
                    tracing::error!(
                        error = %err,
                        "cannot accept connections: the process is out of file descriptors or memory; retrying every 100 ms"
                    );
                }
                metrics::counter!(ACCEPT_BACKOFFS).increment(1);
                tokio::time::sleep(EXHAUSTED_BACKOFF).await;
                None
            }
            Err(err) => {
                // A connection reset before it was accepted, and the like: that one only.
                tracing::debug!(error = %err, "a connection failed before it was accepted");
                None
            }
        }
    }

    /// Refuses `socket`, one over the limit: a 503 if its buffer takes it, then the close.
    pub fn over_capacity(&mut self, socket: &TcpStream) {
        if !std::mem::replace(&mut self.full, true) {
            tracing::warn!(
                "at the connection limit (--max-connections): new connections are refused"
            );
        }
        metrics::counter!(CONNECTIONS_REFUSED).increment(1);
        // Never waits: a client that does not read its refusal gets the close alone.
        let _ = socket.try_write(&self.refusal);
    }

    /// A connection was accepted within the limit.
    pub fn under_capacity(&mut self) {
        if std::mem::take(&mut self.full) {
            tracing::warn!("below the connection limit again");
        }
    }
}

/// Whether an accept failed because the process or the system ran out of a resource,
/// rather than because of the one connection.
fn is_exhaustion(err: &io::Error) -> bool {
    matches!(err.raw_os_error(), Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM))
}

/// The whole HTTP/1.1 answer to a connection over the limit.
fn refusal(max_connections: usize) -> Vec<u8> {
    let error = ApiError::new(
        ErrorCode::ServiceUnavailable,
        format!("the server is at its limit of {max_connections} connections; retry later"),
    );
    let body = serde_json::to_vec(&poem_openapi::types::ToJSON::to_json(&error.body()))
        .unwrap_or_default();
    let mut answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: {}\r\nretry-after: 1\r\nx-content-type-options: nosniff\r\ncache-control: no-store\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    answer.extend_from_slice(&body);
    answer
}
