//! Entity tags (RFC 9110 §8.8.3): a strong validator of the exact bytes of an answer,
//! `If-None-Match` read as RFC 9110 §13.1.2 says (the weak comparison, `*`, lists), and
//! `If-Match` as §13.1.1 says (the strong comparison: a weak tag never matches).

use animal_store_domain::excerpt;
use poem::http::{HeaderMap, HeaderValue, header};
use sha2::{Digest, Sha256};

use crate::wire::encoding::Coding;

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

/// The tag of the representation in `coding` of the body whose unencoded tag is `plain`.
pub fn in_coding(plain: &str, coding: Coding) -> String {
    let hash = plain.strip_suffix('"').unwrap_or(plain);
    format!("{hash}-{}\"", coding.name())
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

/// Whether `If-None-Match` (its values `values`, none when it is absent) holds for the
/// current body `body` of a resource a write would change (RFC 9110 §13.1.2): it fails when
/// it is `*` (there is a current representation) or names one of its tags, weak ones
/// included.
pub fn none_match_holds(values: &[HeaderValue], body: &[u8]) -> bool {
    values.is_empty() || !representations(body).any(|tag| names(values, &tag))
}

/// The representations `of` tags for one body: the unencoded one and each coding's.
fn representations(body: &[u8]) -> impl Iterator<Item = String> {
    let plain = of(body, None);
    std::iter::once(plain.clone())
        .chain(Coding::ALL.into_iter().map(move |coding| in_coding(&plain, coding)))
}

/// What an `If-Match` header asks of the current representation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IfMatch {
    /// `*`: that there is one.
    Any,
    /// That one of these strong tags (quoted, as sent) is its tag; weak tags, which the
    /// strong comparison never matches, are left out.
    Tags(Vec<String>),
}

impl IfMatch {
    /// Whether the precondition holds for the body `body` (any of its representations'
    /// tags). `*` holds for any.
    pub fn holds_for(&self, body: &[u8]) -> bool {
        match self {
            Self::Any => true,
            Self::Tags(tags) => representations(body).any(|tag| tags.contains(&tag)),
        }
    }
}

/// Why an `If-Match` header is not one: the part that is not an entity tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotAnEntityTag(pub String);

/// Reads the `If-Match` headers: `None` without one; `*`, or a list of entity tags
/// (`"…"` or `W/"…"`, comma-separated, over one or more header lines).
///
/// # Errors
///
/// [`NotAnEntityTag`] for anything else: a bare word, a tag without its quotes, `*` in a
/// list, an empty header.
pub fn if_match(headers: &HeaderMap) -> Result<Option<IfMatch>, NotAnEntityTag> {
    let mut values = headers.get_all(header::IF_MATCH).iter().peekable();
    if values.peek().is_none() {
        return Ok(None);
    }
    let (mut any, mut listed, mut strong) = (false, 0_usize, Vec::new());
    for value in values {
        let text = value.to_str().map_err(|_| NotAnEntityTag("bytes that are not text".into()))?;
        let mut rest = text.trim_start_matches(SEPARATORS);
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix('*') {
                any = true;
                rest = after;
            } else {
                let (tag, weak, after) =
                    entity_tag(rest).ok_or_else(|| NotAnEntityTag(excerpt(rest)))?;
                listed += 1;
                if !weak {
                    strong.push(tag.to_owned());
                }
                rest = after;
            }
            if !(rest.is_empty() || rest.starts_with(SEPARATORS)) {
                return Err(NotAnEntityTag(excerpt(rest)));
            }
            rest = rest.trim_start_matches(SEPARATORS);
        }
    }
    match (any, listed) {
        (true, 0) => Ok(Some(IfMatch::Any)),
        (true, _) => Err(NotAnEntityTag("`*` among entity tags".into())),
        (false, 0) => Err(NotAnEntityTag("an empty header".into())),
        (false, _) => Ok(Some(IfMatch::Tags(strong))),
    }
}

/// What separates the members of a list.
const SEPARATORS: [char; 3] = [' ', '\t', ','];

/// The entity tag `text` starts with (RFC 9110 §8.8.3: `W/` for a weak one, then an opaque
/// tag, quoted), whether it is weak, and what follows it.
fn entity_tag(text: &str) -> Option<(&str, bool, &str)> {
    let (weak, quoted) = text.strip_prefix("W/").map_or((false, text), |quoted| (true, quoted));
    let end = quoted.strip_prefix('"')?.find('"')? + 2;
    let tag = &quoted[..end];
    let opaque =
        tag[1..end - 1].bytes().all(|b| b == 0x21 || (0x23..=0x7e).contains(&b) || b >= 0x80);
    opaque.then_some((tag, weak, &quoted[end..]))
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

    fn if_match_of(values: &[&str]) -> Result<Option<IfMatch>, NotAnEntityTag> {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(header::IF_MATCH, HeaderValue::from_str(value).unwrap());
        }
        if_match(&headers)
    }

    #[test]
    fn if_match_is_star_or_a_list_of_entity_tags() {
        let tags =
            |list: &[&str]| Ok(Some(IfMatch::Tags(list.iter().map(|t| (*t).to_owned()).collect())));
        assert_eq!(if_match_of(&[]), Ok(None));
        assert_eq!(if_match_of(&["*"]), Ok(Some(IfMatch::Any)));
        assert_eq!(if_match_of(&["\"a\""]), tags(&["\"a\""]));
        assert_eq!(if_match_of(&["\"a\", W/\"b\",\"c\""]), tags(&["\"a\"", "\"c\""]));
        assert_eq!(if_match_of(&["\"a\"", " \"b\" "]), tags(&["\"a\"", "\"b\""]));
        assert_eq!(if_match_of(&["W/\"only-weak\""]), tags(&[]), "weak tags never match");
        assert_eq!(if_match_of(&["\"\""]), tags(&["\"\""]), "an empty opaque tag is a tag");
        for bad in ["a", "\"a", "a\"", "\"a\"b", "*, \"a\"", "", " , ", "W/a", "\"a b\""] {
            assert!(if_match_of(&[bad]).is_err(), "{bad:?} is not an If-Match");
        }
    }

    #[test]
    fn if_match_compares_strongly_with_every_representation() {
        let body = b"{\"id\":1}";
        let plain = of(body, None);
        let gzip = of(body, Some(Coding::Gzip));
        assert!(IfMatch::Tags(vec![plain.clone()]).holds_for(body));
        assert!(IfMatch::Tags(vec!["\"x\"".into(), gzip]).holds_for(body));
        assert!(!IfMatch::Tags(vec![plain]).holds_for(b"{\"id\":2}"));
        assert!(!IfMatch::Tags(vec![]).holds_for(body));
        assert!(IfMatch::Any.holds_for(body));
    }
}
