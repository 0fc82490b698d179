//! Requests whose body a proxy could delimit otherwise than this server: `Content-Length`
//! together with `Transfer-Encoding`, and a `Transfer-Encoding` other than one `chunked`.
//!
//! A proxy in front that reads such a request's body by the other rule sees it end
//! elsewhere, and takes what follows for the next request: bytes the proxy never checked
//! reach the service as a request of their own (request smuggling). RFC 9112 §6.3 lets a
//! server refuse both forms and says the first "ought to be handled as an error"; this
//! server answers them `400 invalid_request` with `Connection: close` from the outermost
//! layer: no operation runs, no body is read, and what was pipelined behind them is never
//! read (`docs/security.md#what-the-service-defends`).
//!
//! hyper hides the first form: it reads the body as chunked and leaves `Content-Length` out
//! of the headers it hands on. So the socket shows each request head it reads to a
//! [`HeadScan`], and marks the connection when one holds both fields. hyper itself refuses a
//! `Transfer-Encoding` whose last coding is not `chunked` (`gzip`, `chunked, gzip`), with a
//! bare `400` and the close; other lists and repeated headers reach [`refused`].

use poem::http::HeaderMap;
use poem::http::header::{CONTENT_LENGTH, TRANSFER_ENCODING};

/// Why a request with both framing fields is refused.
const BOTH: &str = "the request gives both Content-Length and Transfer-Encoding, which a proxy \
                    and this server could read two ways; send one of them";

/// Why a request with another `Transfer-Encoding` is refused.
const NOT_CHUNKED: &str = "Transfer-Encoding must be chunked, given once, or left out: send \
                           Content-Length or Transfer-Encoding: chunked alone";

/// The field names looked for, with their colon: a field name ends there (RFC 9112 §5).
const CONTENT_LENGTH_LINE: &[u8] = b"content-length:";
const TRANSFER_ENCODING_LINE: &[u8] = b"transfer-encoding:";
/// The bytes of a line kept: enough for the longer name.
const KEPT: usize = TRANSFER_ENCODING_LINE.len();

/// One request head's lines, read for its framing fields up to the empty line that ends it.
/// Only the first bytes of a line are kept, however long it is.
#[derive(Debug, Default)]
pub struct HeadScan {
    /// The first bytes of the current line, and how many of them are filled.
    start: [u8; KEPT],
    kept: usize,
    /// How long the current line is so far, in bytes.
    length: usize,
    /// The head's lines so far, blank lines before it aside.
    lines: usize,
    /// The head has ended.
    ended: bool,
    content_length: bool,
    transfer_encoding: bool,
}

impl HeadScan {
    /// Reads the next bytes of the head; whether it has shown both framing fields.
    pub fn read(&mut self, bytes: &[u8]) -> bool {
        for piece in bytes.split_inclusive(|&b| b == b'\n') {
            if self.ended {
                break;
            }
            let line = piece.strip_suffix(b"\n").unwrap_or(piece);
            let take = line.len().min(KEPT - self.kept);
            self.start[self.kept..self.kept + take].copy_from_slice(&line[..take]);
            self.kept += take;
            self.length = self.length.saturating_add(line.len());
            if line.len() < piece.len() {
                self.end_line();
            }
        }
        self.content_length && self.transfer_encoding
    }

    fn end_line(&mut self) {
        let line = &self.start[..self.kept];
        // A line ends with CRLF, or a bare LF, which hyper accepts too.
        if self.length == 0 || (self.length == 1 && line == b"\r") {
            self.ended = self.lines > 0;
        } else {
            self.lines += 1;
            self.content_length |= starts_with_name(line, CONTENT_LENGTH_LINE);
            self.transfer_encoding |= starts_with_name(line, TRANSFER_ENCODING_LINE);
        }
        self.kept = 0;
        self.length = 0;
    }
}

/// Whether `line` starts with the field name `name` (lowercase), in any case.
fn starts_with_name(line: &[u8], name: &[u8]) -> bool {
    line.get(..name.len()).is_some_and(|start| start.eq_ignore_ascii_case(name))
}

/// Why a request is refused for its framing, if it is: `headers` are those hyper hands on,
/// `ambiguous` whether its socket saw a head with both framing fields.
pub fn refused(headers: &HeaderMap, ambiguous: bool) -> Option<&'static str> {
    let mut codings = headers.get_all(TRANSFER_ENCODING).iter();
    let first = codings.next()?;
    // hyper keeps `Transfer-Encoding` and drops `Content-Length` when both are sent.
    if ambiguous || headers.contains_key(CONTENT_LENGTH) {
        return Some(BOTH);
    }
    let chunked = first.as_bytes().trim_ascii().eq_ignore_ascii_case(b"chunked");
    (!chunked || codings.next().is_some()).then_some(NOT_CHUNKED)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `stream`, read in pieces of `piece` bytes, marks its connection.
    fn marks(stream: &str, piece: usize) -> bool {
        let mut scan = HeadScan::default();
        stream.as_bytes().chunks(piece).any(|part| scan.read(part))
    }

    #[test]
    fn a_head_with_both_fields_marks_the_connection_however_it_is_cut() {
        let both = "POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\
                    transfer-ENCODING: chunked\r\n\r\n0\r\n\r\n";
        let reversed = "POST /v1/pets HTTP/1.1\nTransfer-Encoding: chunked\nCONTENT-LENGTH: 5\n\n";
        for piece in [1, 2, 7, 1000] {
            assert!(marks(both, piece), "{piece}");
            assert!(marks(reversed, piece), "{piece}");
        }
        let long = format!("GET / HTTP/1.1\r\nX-Long: {}\r\n{both}", "a".repeat(100_000));
        assert!(marks(&long, 4096));
    }

    #[test]
    fn fields_after_the_head_or_in_values_do_not() {
        let apart = "POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n\
                     POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
        let in_values =
            "GET / HTTP/1.1\r\nX-A: Content-Length: 1\r\nX-B: Transfer-Encoding: x\r\n\r\n";
        let body = "POST / HTTP/1.1\r\nContent-Length: 38\r\n\r\n\
                    {\"name\":\"Transfer-Encoding: chunked\"}";
        for piece in [1, 3, 1000] {
            assert!(!marks(apart, piece), "{piece}");
            assert!(!marks(in_values, piece), "{piece}");
            assert!(!marks(body, piece), "{piece}");
        }
    }

    fn headers(fields: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in fields {
            headers.append(*name, poem::http::HeaderValue::from_static(value));
        }
        headers
    }

    #[test]
    fn only_one_plain_chunked_coding_passes() {
        let unmarked = false;
        for fine in
            [&[][..], &[("transfer-encoding", "chunked")], &[("transfer-encoding", "Chunked ")]]
        {
            assert_eq!(refused(&headers(fine), unmarked), None, "{fine:?}");
        }
        assert_eq!(refused(&headers(&[("content-length", "5")]), unmarked), None);
        for other in [
            &[("transfer-encoding", "chunked, chunked")][..],
            &[("transfer-encoding", "gzip, chunked")],
            &[("transfer-encoding", "chunked"), ("transfer-encoding", "chunked")],
        ] {
            assert_eq!(refused(&headers(other), unmarked), Some(NOT_CHUNKED), "{other:?}");
        }
        let both = [("transfer-encoding", "chunked"), ("content-length", "5")];
        assert_eq!(refused(&headers(&both), unmarked), Some(BOTH));
    }

    #[test]
    fn a_marked_connection_refuses_its_chunked_request_only() {
        let marked = true;
        assert_eq!(refused(&headers(&[("transfer-encoding", "chunked")]), marked), Some(BOTH));
        assert_eq!(refused(&headers(&[("content-length", "5")]), marked), None);
        assert_eq!(refused(&headers(&[]), marked), None);
    }
}
