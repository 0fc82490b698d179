//! Content codings (RFC 9110 §8.4) and the choice of one by `Accept-Encoding` (§12.5.3).
//!
//! poem's `Compression` middleware chooses by a reading of the header that these answers
//! cannot use: it takes `gzip;q=0` as a choice of gzip when nothing else is listed, does not
//! know `zstd` by name, and never sees `identity;q=0`. The codings themselves are poem's
//! (`poem::web::Compress`, over async-compression); only the choice is made here.

use poem::http::{HeaderMap, header};
use poem::web::CompressionAlgo;

/// A content coding the service compresses with, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    /// Zstandard (RFC 8878).
    Zstd,
    /// Brotli (RFC 7932).
    Br,
    /// gzip (RFC 1952).
    Gzip,
}

impl Coding {
    /// Every coding, best first: the order that breaks a tie between equal q-values.
    pub const ALL: [Self; 3] = [Self::Zstd, Self::Br, Self::Gzip];

    /// Its name in `Accept-Encoding` and `Content-Encoding`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Zstd => "zstd",
            Self::Br => "br",
            Self::Gzip => "gzip",
        }
    }

    /// poem's compressor for it.
    pub fn algorithm(self) -> CompressionAlgo {
        match self {
            Self::Zstd => CompressionAlgo::ZSTD,
            Self::Br => CompressionAlgo::BR,
            Self::Gzip => CompressionAlgo::GZIP,
        }
    }
}

/// What a request's `Accept-Encoding` allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accepted {
    /// The best of `offered` with the highest q-value above 0; `None` when the request asks
    /// for none of them (no header at all means "no preference", and is answered unencoded).
    pub coding: Option<Coding>,
    /// Whether the request refuses an unencoded answer: `identity;q=0`, or `*;q=0` without an
    /// `identity` of its own.
    pub refuses_identity: bool,
}

/// Reads `Accept-Encoding` for the best of `offered` (in their order of preference). Elements
/// that are not `coding` or `coding;q=VALUE` (RFC 9110 §12.4.2: 0 to 1, at most three
/// decimals) are ignored, so that a malformed header asks for no coding rather than failing
/// the request.
pub fn accepted(headers: &HeaderMap, offered: &[Coding]) -> Accepted {
    let elements = || {
        headers
            .get_all(header::ACCEPT_ENCODING)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .filter_map(|element| element_weight(element.trim()))
    };
    // The weight the first element naming `name` gives it, else the first `*`'s.
    let weight_of = |name: &str| {
        let mut any = None;
        for (listed, weight) in elements() {
            if listed.eq_ignore_ascii_case(name) {
                return Some(weight);
            }
            if listed == "*" && any.is_none() {
                any = Some(weight);
            }
        }
        any
    };
    let coding = offered
        .iter()
        .filter_map(|&coding| Some((coding, weight_of(coding.name())?)))
        .filter(|&(_, weight)| weight > 0)
        // The highest weight; among equals, the first offered.
        .fold(None, |best: Option<(Coding, u16)>, (coding, weight)| match best {
            Some((_, best_weight)) if best_weight >= weight => best,
            _ => Some((coding, weight)),
        })
        .map(|(coding, _)| coding);
    Accepted { coding, refuses_identity: weight_of("identity") == Some(0) }
}

/// `coding` or `coding;q=VALUE`, as the coding's name and its weight in thousandths.
fn element_weight(element: &str) -> Option<(&str, u16)> {
    let mut parts = element.split(';').map(str::trim);
    let name = parts.next().filter(|name| is_token(name))?;
    let weight = match parts.next() {
        None => 1000,
        Some(parameter) => {
            let (key, value) = parameter.split_once('=')?;
            if !key.trim().eq_ignore_ascii_case("q") {
                return None;
            }
            qvalue(value.trim())?
        }
    };
    parts.next().is_none().then_some((name, weight))
}

/// An RFC 9110 `qvalue` (`0`, `0.5`, `1.000`...) in thousandths.
fn qvalue(text: &str) -> Option<u16> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if fraction.len() > 3 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let thousandths = fraction
        .bytes()
        .zip([100, 10, 1])
        .map(|(digit, place)| u16::from(digit - b'0') * place)
        .sum::<u16>();
    match whole {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

/// Whether `text` is an HTTP token (RFC 9110 §5.6.2).
fn is_token(text: &str) -> bool {
    !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

#[cfg(test)]
mod tests {
    use poem::http::HeaderValue;

    use super::*;

    fn accepted_by(values: &[&str]) -> Accepted {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(header::ACCEPT_ENCODING, HeaderValue::from_str(value).unwrap());
        }
        accepted(&headers, &Coding::ALL)
    }

    fn chosen(value: &str) -> Option<Coding> {
        accepted_by(&[value]).coding
    }

    #[test]
    fn the_best_coding_the_request_allows_is_chosen() {
        use Coding::{Br, Gzip, Zstd};
        assert_eq!(accepted_by(&[]).coding, None, "no header: no preference, no coding");
        assert_eq!(chosen("gzip"), Some(Gzip));
        assert_eq!(chosen("gzip, deflate, br"), Some(Br));
        assert_eq!(chosen("gzip, deflate, br, zstd"), Some(Zstd));
        assert_eq!(chosen("zstd;q=0.5, br;q=0.8, gzip"), Some(Gzip), "q-values first");
        assert_eq!(chosen("GZIP ; Q=0.3, br;q=0.2"), Some(Gzip), "case and spaces");
        assert_eq!(chosen("*"), Some(Zstd));
        assert_eq!(chosen("*;q=0.5, zstd;q=0"), Some(Br), "a coding refused by name");
        assert_eq!(chosen("gzip;q=0"), None);
        assert_eq!(chosen("*;q=0"), None);
        assert_eq!(chosen("identity"), None);
        assert_eq!(chosen("deflate, compress"), None, "codings the service does not offer");
        assert_eq!(accepted_by(&["br;q=0.1", "gzip;q=0.2"]).coding, Some(Gzip), "two headers");
    }

    #[test]
    fn malformed_elements_are_ignored() {
        assert_eq!(chosen("gzip;q=2"), None);
        assert_eq!(chosen("gzip;q=0.5555"), None);
        assert_eq!(chosen("gzip;q=abc"), None);
        assert_eq!(chosen("gzip;level=1"), None);
        assert_eq!(chosen("gz ip"), None);
        assert_eq!(chosen(";q=1, , gzip;q=1.000"), Some(Coding::Gzip));
        assert_eq!(chosen("br;q=, gzip;q=1.0"), Some(Coding::Gzip));
    }

    #[test]
    fn a_refused_identity_is_told() {
        assert!(accepted_by(&["gzip, identity;q=0"]).refuses_identity);
        assert!(accepted_by(&["*;q=0"]).refuses_identity);
        assert!(!accepted_by(&["*;q=0, identity"]).refuses_identity);
        assert!(!accepted_by(&["gzip"]).refuses_identity);
        assert!(!accepted_by(&[]).refuses_identity);
    }
}
