//! Documents served unchanged for the life of the process: the OpenAPI document and the
//! docs page. Each is compressed once, when a client first asks for it gzipped (not at
//! start, which a harness restarting the server per test pays each time), and served with
//! an `ETag`, so that a browser that has it gets `304 Not Modified` and one that does not
//! gets it gzipped (the docs page is 1.6 MB as it is, 0.4 MB gzipped).

use std::io::Write as _;
use std::sync::OnceLock;

use bytes::Bytes;
use flate2::Compression;
use flate2::write::GzEncoder;
use poem::http::{HeaderName, HeaderValue, StatusCode, header};
use poem::{Request, Response};
use sha2::{Digest, Sha256};

use crate::wire::encoding::{self, Coding};

/// Where the document and the docs page are served. How long a cache may keep them is the
/// `envelope` layer's decision, as for every answer.
pub const PATHS: [&str; 2] = ["/v1/openapi.json", "/v1/docs"];

/// One document, in both encodings.
pub struct Published {
    identity: Bytes,
    /// Compressed on first use; empty if compressing failed.
    gzip: OnceLock<Bytes>,
    etag: String,
    content_type: &'static str,
    headers: Vec<(HeaderName, HeaderValue)>,
}

impl Published {
    /// `body`, served as `content_type` with `headers` besides the caching ones.
    pub fn new(
        body: String,
        content_type: &'static str,
        headers: Vec<(HeaderName, HeaderValue)>,
    ) -> Self {
        let digest = Sha256::digest(body.as_bytes());
        let etag = {
            use base64::Engine as _;
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&digest[..12])
        };
        Self { identity: Bytes::from(body), gzip: OnceLock::new(), etag, content_type, headers }
    }

    /// The body as text: it was built from a `String`, so it is always UTF-8.
    pub fn text(&self) -> &str {
        std::str::from_utf8(&self.identity).unwrap_or_default()
    }

    /// The document gzipped, compressed on the first call; empty if compressing failed.
    fn gzip(&self) -> &Bytes {
        self.gzip.get_or_init(|| {
            let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
            encoder
                .write_all(&self.identity)
                .and_then(|()| encoder.finish())
                .map(Bytes::from)
                // Writing to memory does not fail; if it did, the document goes uncompressed.
                .unwrap_or_default()
        })
    }

    /// The answer to `req`: 304 when it holds the current version, else the document,
    /// gzipped when the client accepts it.
    pub fn respond(&self, req: &Request) -> Response {
        let gzip = encoding::accepted(req.headers(), &[Coding::Gzip]).coding.is_some()
            && !self.gzip().is_empty();
        // One tag per representation, as RFC 9110 asks of strong validators.
        let etag =
            if gzip { format!("\"{}-gz\"", self.etag) } else { format!("\"{}\"", self.etag) };
        let mut response = if crate::wire::etag::none_match_names(req.headers(), &etag) {
            Response::builder().status(StatusCode::NOT_MODIFIED).finish()
        } else if gzip {
            Response::builder()
                .header(header::CONTENT_ENCODING, "gzip")
                .content_type(self.content_type)
                .body(self.gzip().clone())
        } else {
            Response::builder().content_type(self.content_type).body(self.identity.clone())
        };
        let headers = response.headers_mut();
        if let Ok(etag) = HeaderValue::from_str(&etag) {
            headers.insert(header::ETAG, etag);
        }
        for (name, value) in &self.headers {
            headers.insert(name.clone(), value.clone());
        }
        response
    }
}

/// The `Content-Security-Policy` of a page whose scripts are all inline: those scripts by
/// their SHA-256, and nothing else but its own origin and the API's `servers` (`origins`,
/// which its "Try it out" calls).
pub fn content_security_policy(page: &str, origins: &[String]) -> String {
    let scripts: Vec<String> = inline_scripts(page)
        .map(|script| {
            use base64::Engine as _;
            let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(script));
            format!("'sha256-{hash}'")
        })
        .collect();
    format!(
        "default-src 'none'; script-src {}; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
         font-src 'self' data:; connect-src 'self' {}; frame-ancestors 'none'; base-uri 'none'; \
         form-action 'none'",
        scripts.join(" "),
        origins.join(" ")
    )
}

/// The contents of the `<script>` elements of `page`.
fn inline_scripts(page: &str) -> impl Iterator<Item = &str> {
    let mut rest = page;
    std::iter::from_fn(move || {
        loop {
            let start = rest.find("<script")?;
            let after = &rest[start + "<script".len()..];
            // `<script>` or `<script charset="...">`, not a word that starts the same.
            if !after.starts_with(['>', ' ']) {
                rest = after;
                continue;
            }
            let open_end = after.find('>')? + 1;
            let body = &after[open_end..];
            let close = body.find("</script>")?;
            rest = &body[close + "</script>".len()..];
            return Some(&body[..close]);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(headers: &[(&str, &str)]) -> Request {
        let mut builder = Request::builder();
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder.finish()
    }

    #[test]
    fn a_published_document_is_gzipped_tagged_and_revalidated() {
        let doc = Published::new("x".repeat(10_000), "text/plain", Vec::new());
        let plain = doc.respond(&request(&[]));
        assert_eq!(plain.status(), StatusCode::OK);
        assert!(plain.headers().get(header::CONTENT_ENCODING).is_none());
        let etag = plain.headers()[header::ETAG].to_str().expect("a tag").to_owned();
        let zipped = doc.respond(&request(&[("accept-encoding", "br, gzip;q=0.8")]));
        assert_eq!(zipped.headers()[header::CONTENT_ENCODING], "gzip");
        assert_ne!(zipped.headers()[header::ETAG].to_str().expect("a tag"), etag);
        for refusing in ["gzip;q=0", "gzip;q=0, *", "*;q=0", "br"] {
            let refused = doc.respond(&request(&[("accept-encoding", refusing)]));
            assert!(refused.headers().get(header::CONTENT_ENCODING).is_none(), "{refusing}");
        }
        let any = doc.respond(&request(&[("accept-encoding", "*")]));
        assert_eq!(any.headers()[header::CONTENT_ENCODING], "gzip");
        let again = doc.respond(&request(&[("if-none-match", &etag)]));
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
        assert_eq!(again.headers()[header::ETAG].to_str().expect("a tag"), etag);
    }

    #[test]
    fn inline_scripts_are_found_whole() {
        let page = "<p>a</p><script>let a = '<script(?=x';</script><script charset=\"UTF-8\">b()</script><scripted>";
        let scripts: Vec<&str> = inline_scripts(page).collect();
        assert_eq!(scripts, ["let a = '<script(?=x';", "b()"]);
    }
}
