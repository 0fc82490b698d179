//! Entity tags (RFC 9110 §8.8.3): a strong validator of the exact bytes of an answer, and
//! `If-None-Match` read as RFC 9110 §13.1.2 says (the weak comparison, `*`, lists).

use poem::http::{HeaderMap, HeaderValue, header};
use sha2::{Digest, Sha256};

use crate::encoding::Coding;

/// The header a conditional request names the tags it has in.
pub const IF_NONE_MATCH: &str = "If-None-Match";

/// The strong tag of `body` sent in `coding`: the first 16 bytes of the SHA-256 of the
/// unencoded body, then the coding's name if any (`"…-gzip"`), quoted. Each representation
/// has its own tag, as RFC 9110 asks of a strong validator, and a 304 needs no compression.
pub fn of(body: &[u8], coding: Option<Coding>) -> String {
    use base64::Engine as _;
    let digest = Sha256::digest(body);
    let hash = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&digest[..16]);
    match coding {
        Some(coding) => format!("\"{hash}-{}\"", coding.name()),
        None => format!("\"{hash}\""),
    }
}

/// Whether `If-None-Match` names `etag` (or `*`), weak tags included.
pub fn none_match_names(headers: &HeaderMap, etag: &str) -> bool {
    names(headers.get_all(header::IF_NONE_MATCH), etag)
}

/// Whether the `If-None-Match` values `values` name `etag` (see [`none_match_names`]).
pub fn names<'v>(values: impl IntoIterator<Item = &'v HeaderValue>, etag: &str) -> bool {
    values.into_iter().filter_map(|v| v.to_str().ok()).any(|value| {
        value
            .split(',')
            .map(str::trim)
            .any(|tag| tag == "*" || tag.trim_start_matches("W/") == etag)
    })
}

#[cfg(test)]
mod tests {
    use poem::http::HeaderValue;

    use super::*;

    #[test]
    fn a_tag_names_its_bytes_and_if_none_match_is_read_as_rfc_9110_says() {
        let tag = of(b"[]", None);
        assert_eq!(tag, of(b"[]", None));
        assert_ne!(tag, of(b"[ ]", None));
        assert!(tag.starts_with('"') && tag.ends_with('"') && tag.len() == 24, "{tag}");
        let gzip = of(b"[]", Some(Coding::Gzip));
        assert_eq!(gzip, format!("{}-gzip\"", &tag[..23]), "one tag per representation");
        let names = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::IF_NONE_MATCH, HeaderValue::from_str(value).unwrap());
            none_match_names(&headers, &tag)
        };
        assert!(names(&tag));
        assert!(names(&format!("W/{tag}")));
        assert!(names(&format!("\"other\", {tag}")));
        assert!(names("*"));
        assert!(!names("\"other\""));
        assert!(!none_match_names(&HeaderMap::new(), &tag));
    }
}
