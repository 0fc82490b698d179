//! Deprecated operations and their sunset (`docs/api.md#versioning`).
//!
//! A deprecated operation stays `deprecated: true` in the document, and every response of it
//! carries `Deprecation` (RFC 9745), `Sunset` (RFC 8594) and a `Link` to its successor. From
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
}

/// `getPet`: announced on 2026-01-01, removed on 5 December 2030; `listPets` replaces it.
pub const GET_PET: Deprecation = Deprecation {
    operation_id: "getPet",
    announced: 1_767_225_600,
    sunset: 1_922_659_200,
    successor: "/v1/pets",
};

/// Every deprecated operation.
pub const DEPRECATIONS: &[Deprecation] = &[GET_PET];

impl Deprecation {
    /// The deprecation of the operation `operation_id`, if it is deprecated.
    pub fn of(operation_id: &str) -> Option<&'static Self> {
        DEPRECATIONS.iter().find(|d| d.operation_id == operation_id)
    }

    /// The sunset as an instant.
    pub fn sunset_instant(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(self.sunset)
    }

    /// Whether `now` is at or past the sunset.
    pub fn is_past_sunset(&self, now: SystemTime) -> bool {
        now >= self.sunset_instant()
    }

    /// The headers every response of the operation carries: those of the operations in
    /// [`DEPRECATIONS`] written once, as they go on each of their responses.
    pub fn headers(&self) -> [(HeaderName, HeaderValue); 3] {
        static WRITTEN: OnceLock<Vec<[(HeaderName, HeaderValue); 3]>> = OnceLock::new();
        let written = WRITTEN.get_or_init(|| DEPRECATIONS.iter().map(Self::write).collect());
        DEPRECATIONS
            .iter()
            .position(|deprecation| deprecation == self)
            .map_or_else(|| self.write(), |index| written[index].clone())
    }

    fn write(&self) -> [(HeaderName, HeaderValue); 3] {
        let value =
            |s: String| HeaderValue::try_from(s).unwrap_or_else(|_| HeaderValue::from_static(""));
        [
            (HeaderName::from_static("deprecation"), value(format!("@{}", self.announced))),
            (
                HeaderName::from_static("sunset"),
                value(httpdate::fmt_http_date(self.sunset_instant())),
            ),
            (header::LINK, value(format!("<{}>; rel=\"successor-version\"", self.successor))),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_pet_headers_spell_the_contract_dates() {
        let headers = GET_PET.headers();
        assert_eq!(headers[0].1, "@1767225600");
        assert_eq!(headers[1].1, "Thu, 05 Dec 2030 00:00:00 GMT");
        assert_eq!(headers[2].1, "</v1/pets>; rel=\"successor-version\"");
    }

    /// One outside the list is written when asked, not taken for one of the list.
    #[test]
    fn an_unlisted_deprecation_spells_its_own_headers() {
        let other = Deprecation { operation_id: "other", announced: 0, sunset: 0, ..GET_PET };
        let headers = other.headers();
        assert_eq!(headers[0].1, "@0");
        assert_eq!(headers[1].1, "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(GET_PET.headers(), GET_PET.headers(), "written once, the same each time");
    }

    #[test]
    fn the_sunset_starts_at_its_instant() {
        let sunset = GET_PET.sunset_instant();
        assert!(!GET_PET.is_past_sunset(sunset - Duration::from_secs(1)));
        assert!(GET_PET.is_past_sunset(sunset));
    }
}
