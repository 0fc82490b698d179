//! Rate limiting at the edge of the API (`docs/api.md#plans-and-rate-limits`).
//!
//! Every request under `/v1` is counted: against its API key when it carries a live one,
//! otherwise against its client address, so that keys cannot be guessed at speed. Every
//! response, errors and 401s included, carries the headers of the decision:
//!
//! - `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` (Unix seconds) for the
//!   binding window, the one with the fewest requests left (on a tie, the later reset);
//! - `RateLimit-Policy` and `RateLimit`, the IETF draft fields, describing both windows:
//!   `RateLimit-Policy: "minute";q=60;w=60, "day";q=1000;w=86400` and
//!   `RateLimit: "minute";r=59;t=41, "day";r=999;t=80000` (`t` in seconds from now).
//!
//! A refused request is answered 429 `rate_limited` or `api_key_suspended` with
//! `Retry-After` in whole seconds, and never reaches the operations.

use animal_store_domain::{Decision, Subject, Verdict};
use poem::Request;
use poem::http::{HeaderMap, HeaderName, HeaderValue, header};

use crate::error::{ApiError, ErrorCode};
use crate::operations::state::AppState;
use crate::wire::client_address::client_subject;

/// The id of the operation that reads the caller's rate limit without spending it.
pub const GET_RATE_LIMIT: &str = "getRateLimit";

/// A key's windows as the guard found them, without counting the request in them: what
/// `getRateLimit` answers.
#[derive(Debug, Clone, Copy)]
pub struct KeyWindows(pub Decision);

/// The client address of a request, as the subject requests without a valid key count
/// against.
pub fn address_subject(state: &AppState, req: &Request) -> Subject {
    client_subject(req, &state.config.clients)
}

/// The 429 for a refused request of `subject`.
pub fn refusal(subject: &Subject, decision: &Decision) -> Option<ApiError> {
    let (code, retry_after, message) = match decision.verdict {
        Verdict::Admitted => return None,
        Verdict::Limited { retry_after } => {
            let binding = decision.binding();
            let window = if binding.length == animal_store_domain::limits::model::DAY {
                "day"
            } else {
                "minute"
            };
            let warning = match subject {
                Subject::Key(_) => "; calling on while limited suspends the key",
                Subject::Address(_) | Subject::Named(_) | Subject::Inquiry(_) => "",
            };
            (
                ErrorCode::RateLimited,
                retry_after,
                format!(
                    "rate limit exceeded: {} requests per {window}; retry in {retry_after} s, backing off \
                     exponentially{warning}",
                    binding.limit
                ),
            )
        }
        Verdict::Unavailable { retry_after } => (
            ErrorCode::ServiceUnavailable,
            retry_after,
            "the rate limiter's store cannot be reached; retry shortly".to_owned(),
        ),
        Verdict::Suspended { retry_after, .. } => (
            ErrorCode::ApiKeySuspended,
            retry_after,
            format!(
                "the API key is suspended for calling on while rate limited; retry in {retry_after} s"
            ),
        ),
    };
    Some(
        ApiError::new(code, message)
            .with_header(header::RETRY_AFTER, HeaderValue::from(retry_after)),
    )
}

/// Writes the rate-limit headers of `decision`.
pub fn set_headers(headers: &mut HeaderMap, decision: &Decision) {
    let binding = decision.binding();
    // While a key is suspended nothing resets before the suspension ends.
    let suspended_until = match decision.verdict {
        Verdict::Suspended { until, .. } => Some(until),
        _ => None,
    };
    let reset = suspended_until.unwrap_or(binding.reset);
    let windows = [("minute", decision.minute), ("day", decision.day)];
    let (mut policy, mut state) = (Fields::default(), Fields::default());
    for (name, window) in windows {
        let window_reset = suspended_until.unwrap_or(window.reset);
        policy.item(name, [("q", u64::from(window.limit)), ("w", window.length)]);
        state.item(
            name,
            [("r", u64::from(window.remaining)), ("t", window_reset.saturating_sub(decision.at))],
        );
    }
    let mut set = |name: &'static str, value: HeaderValue| {
        headers.insert(HeaderName::from_static(name), value);
    };
    set("x-ratelimit-limit", HeaderValue::from(binding.limit));
    set("x-ratelimit-remaining", HeaderValue::from(binding.remaining));
    set("x-ratelimit-reset", HeaderValue::from(reset));
    if let Some(value) = policy.value() {
        set("ratelimit-policy", value);
    }
    if let Some(value) = state.value() {
        set("ratelimit", value);
    }
}

/// A structured field list of the IETF draft (`"minute";q=60;w=60, "day";q=1000;w=86400`),
/// written with `itoa` into a buffer on the stack rather than with `format!` into a growing
/// `Vec`: these two headers go on every response, and each then costs one allocation, the
/// header's own.
struct Fields {
    bytes: [u8; Fields::CAPACITY],
    len: usize,
}

impl Default for Fields {
    fn default() -> Self {
        Self { bytes: [0; Self::CAPACITY], len: 0 }
    }
}

impl Fields {
    /// Two items of two parameters each, their numbers up to `u64::MAX`, take 110 bytes.
    const CAPACITY: usize = 128;

    /// Appends the item `"name"` with its integer parameters.
    fn item(&mut self, name: &str, parameters: [(&str, u64); 2]) {
        if self.len > 0 {
            self.push(b", ");
        }
        self.push(b"\"");
        self.push(name.as_bytes());
        self.push(b"\"");
        for (key, value) in parameters {
            self.push(b";");
            self.push(key.as_bytes());
            self.push(b"=");
            self.push(itoa::Buffer::new().format(value).as_bytes());
        }
    }

    /// Appends `bytes`; never past the buffer, which the items of `set_headers` fit in.
    fn push(&mut self, bytes: &[u8]) {
        let end = self.len + bytes.len();
        if let Some(free) = self.bytes.get_mut(self.len..end) {
            free.copy_from_slice(bytes);
            self.len = end;
        }
    }

    fn value(&self) -> Option<HeaderValue> {
        HeaderValue::from_bytes(self.bytes.get(..self.len)?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use animal_store_domain::WindowUsage;

    #[test]
    fn the_headers_describe_both_windows() {
        let window =
            |limit, remaining, reset, length| WindowUsage { limit, remaining, reset, length };
        let decision = Decision {
            verdict: Verdict::Admitted,
            minute: window(60, 59, 1_060, 60),
            day: window(1_000, 999, 86_400, 86_400),
            at: 1_019,
        };
        let mut headers = HeaderMap::new();
        set_headers(&mut headers, &decision);
        let header =
            |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        assert_eq!(header("x-ratelimit-limit").as_deref(), Some("60"));
        assert_eq!(header("x-ratelimit-remaining").as_deref(), Some("59"));
        assert_eq!(header("x-ratelimit-reset").as_deref(), Some("1060"));
        assert_eq!(
            header("ratelimit-policy").as_deref(),
            Some(r#""minute";q=60;w=60, "day";q=1000;w=86400"#)
        );
        assert_eq!(
            header("ratelimit").as_deref(),
            Some(r#""minute";r=59;t=41, "day";r=999;t=85381"#)
        );
    }

    #[test]
    fn the_largest_numbers_fit_the_field_lists() {
        let mut policy = Fields::default();
        for name in ["minute", "day"] {
            policy.item(name, [("q", u64::MAX), ("w", u64::MAX)]);
        }
        let max = u64::MAX;
        let expected = format!(r#""minute";q={max};w={max}, "day";q={max};w={max}"#);
        assert_eq!(policy.value().and_then(|v| v.to_str().ok().map(str::to_owned)), Some(expected));
    }
}
