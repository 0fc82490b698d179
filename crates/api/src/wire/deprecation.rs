//! Deprecated operations and their sunset (`docs/api.md#versioning`).
//!
//! A deprecated operation stays `deprecated: true` in the document, and every response of it
//! carries `Deprecation` (RFC 9745), `Sunset` (RFC 8594) and a `Link` to its successor: the
//! address that answers the same request (getPet's `/v1/pets/7`: `</v1/pets?id=7>`). From
//! the sunset instant on, it answers 410 `gone`. The instants are compared with the clock
//! port, so tests can stand in 2031.

use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use poem::http::{HeaderName, HeaderValue, header};

/// One deprecated operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deprecation {
    /// The operation's id in the document.
    pub operation_id: &'static str,
    /// When the deprecation was announced, in Unix seconds.
    pub announced: u64,
    /// When the operation stops working, in Unix seconds.
    pub sunset: u64,
    /// The path of the operation that replaces it.
    pub successor: &'static str,
    /// The successor's query parameter that takes the id ending the deprecated operation's
    /// path, if it has one: getPet's `/v1/pets/7` is listPets' `/v1/pets?id=7`.
    pub successor_id: Option<&'static str>,
}

/// `getPet`: announced on 2026-01-01, removed on 5 December 2030; `listPets` with `id`
/// replaces it.
pub const GET_PET: Deprecation = Deprecation {
    operation_id: "getPet",
    announced: 1_767_225_600,
    sunset: 1_922_659_200,
    successor: "/v1/pets",
    successor_id: Some("id"),
};

/// Every deprecated operation.
pub const DEPRECATIONS: &[Deprecation] = &[GET_PET];

impl Deprecation {
    /// The sunset as an instant.
    pub fn sunset_instant(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(self.sunset)
    }

    /// Whether `now` is at or past the sunset.
    pub fn is_past_sunset(&self, now: SystemTime) -> bool {
        now >= self.sunset_instant()
    }

    /// The address that answers what a request for `id` (the last segment of its path)
    /// asked: the successor, with the id when the successor takes one and `id` is an int64
    /// integer.
    pub fn successor_of(&self, id: &str) -> String {
        match self.successor_id.zip(id.parse::<i64>().ok()) {
            Some((name, id)) => format!("{}?{name}={id}", self.successor),
            None => self.successor.to_owned(),
        }
    }

    /// The headers every response of the operation to `path` carries: `Deprecation` and
    /// `Sunset` of the operations in [`DEPRECATIONS`] written once, and the `Link` to the
    /// [successor](Self::successor_of) of `path`.
    pub fn headers(&self, path: &str) -> [(HeaderName, HeaderValue); 3] {
        static WRITTEN: OnceLock<Vec<[(HeaderName, HeaderValue); 2]>> = OnceLock::new();
        let written = WRITTEN.get_or_init(|| DEPRECATIONS.iter().map(Self::dates).collect());
        let [deprecation, sunset] = DEPRECATIONS
            .iter()
            .position(|deprecation| deprecation == self)
            .map_or_else(|| self.dates(), |index| written[index].clone());
        let id = path.rsplit('/').next().unwrap_or_default();
        let link = format!("<{}>; rel=\"successor-version\"", self.successor_of(id));
        [deprecation, sunset, (header::LINK, value(link))]
    }

    fn dates(&self) -> [(HeaderName, HeaderValue); 2] {
        [
            (HeaderName::from_static("deprecation"), value(format!("@{}", self.announced))),
            (
                HeaderName::from_static("sunset"),
                value(httpdate::fmt_http_date(self.sunset_instant())),
            ),
        ]
    }
}

/// `text` as a header value: what this module writes always is one.
fn value(text: String) -> HeaderValue {
    HeaderValue::try_from(text).unwrap_or_else(|_| HeaderValue::from_static(""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_pet_headers_spell_the_contract_dates() {
        let headers = GET_PET.headers("/v1/pets/7");
        assert_eq!(headers[0].1, "@1767225600");
        assert_eq!(headers[1].1, "Thu, 05 Dec 2030 00:00:00 GMT");
        assert_eq!(headers[2].1, "</v1/pets?id=7>; rel=\"successor-version\"");
    }

    /// The id is repeated as the number it is, never as the client spelled it.
    #[test]
    fn the_successor_takes_the_id_only_when_it_is_one() {
        assert_eq!(GET_PET.successor_of("7"), "/v1/pets?id=7");
        assert_eq!(GET_PET.successor_of("007"), "/v1/pets?id=7");
        assert_eq!(GET_PET.successor_of("one"), "/v1/pets");
        assert_eq!(GET_PET.successor_of("%3Cx%3E"), "/v1/pets");
        assert_eq!(GET_PET.successor_of(&"9".repeat(40)), "/v1/pets");
        assert_eq!(GET_PET.headers("/v1/pets/one")[2].1, "</v1/pets>; rel=\"successor-version\"");
    }

    /// One outside the list is written when asked, not taken for one of the list.
    #[test]
    fn an_unlisted_deprecation_spells_its_own_headers() {
        let other = Deprecation { operation_id: "other", announced: 0, sunset: 0, ..GET_PET };
        let headers = other.headers("/v1/pets/1");
        assert_eq!(headers[0].1, "@0");
        assert_eq!(headers[1].1, "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(GET_PET.headers("/"), GET_PET.headers("/"), "the same each time");
    }

    #[test]
    fn the_sunset_starts_at_its_instant() {
        let sunset = GET_PET.sunset_instant();
        assert!(!GET_PET.is_past_sunset(sunset - Duration::from_secs(1)));
        assert!(GET_PET.is_past_sunset(sunset));
    }
}
