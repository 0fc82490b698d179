//! The accept loop's troubles, each logged once when it begins and once when it ends,
//! however many connections it touches: a process out of file descriptors, and a server at
//! its connection limit.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpStream;

use crate::error::{ApiError, ErrorCode};
use crate::operations::telemetry::{ACCEPT_BACKOFFS, CONNECTIONS_REFUSED};

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

    /// The socket `accepted` holds, if any. Out of descriptors, it waits 100 ms first:
    /// retrying at once would spin a core while nothing can be accepted.
    pub async fn accepted(
        &mut self,
        accepted: io::Result<(TcpStream, SocketAddr)>,
    ) -> Option<(TcpStream, SocketAddr)> {
        let err = match accepted {
            Ok(socket) if std::mem::take(&mut self.exhausted) => {
                tracing::warn!("accepting connections again");
                return Some(socket);
            }
            Ok(socket) => return Some(socket),
            Err(err) => err,
        };
        let exhausted = [libc::EMFILE, libc::ENFILE, libc::ENOBUFS, libc::ENOMEM];
        if !err.raw_os_error().is_some_and(|code| exhausted.contains(&code)) {
            // A connection reset before it was accepted, and the like: that one only.
            tracing::debug!(error = %err, "a connection failed before it was accepted");
            return None;
        }
        if !std::mem::replace(&mut self.exhausted, true) {
            tracing::error!(
                error = %err,
                "cannot accept connections: the process is out of file descriptors or memory; retrying every 100 ms"
            );
        }
        metrics::counter!(ACCEPT_BACKOFFS).increment(1);
        tokio::time::sleep(Duration::from_millis(100)).await;
        None
    }

    /// Whether `socket` is served: it is when `within` the limit; over it, it is answered
    /// 503 if its buffer takes it, and closed.
    pub fn admits(&mut self, socket: &TcpStream, within: bool) -> bool {
        match (within, std::mem::replace(&mut self.full, !within)) {
            (true, true) => tracing::warn!("below the connection limit again"),
            (false, false) => tracing::warn!(
                "at the connection limit (--max-connections): new connections are refused"
            ),
            _ => {}
        }
        if !within {
            metrics::counter!(CONNECTIONS_REFUSED).increment(1);
            // Never waits: a client that does not read its refusal gets the close alone.
            let _ = socket.try_write(&self.refusal);
        }
        within
    }
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
