//! The `cursor` of the listings (`listPets`, `listOrders`): opaque to clients, so that what
//! it carries can change.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::error::ApiError;

/// Cursors are opaque to clients so that their content can change; today they carry the id
/// the next page starts after.
const CURSOR_PREFIX: &str = "after:";

/// The cursor of the page after the record with id `after`.
pub fn encode_cursor(after: i64) -> String {
    URL_SAFE_NO_PAD.encode(format!("{CURSOR_PREFIX}{after}"))
}

/// The id a cursor's page starts after.
pub fn decode_cursor(cursor: &str) -> Result<i64, ApiError> {
    URL_SAFE_NO_PAD
        .decode(cursor)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| text.strip_prefix(CURSOR_PREFIX)?.parse::<i64>().ok())
        .ok_or_else(|| {
            ApiError::invalid_request(
                "cursor is malformed: pass the cursor of a Link header unchanged",
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn cursors_round_trip_and_garbage_is_refused() {
        for id in [1, 42, i64::MAX] {
            assert_eq!(decode_cursor(&encode_cursor(id)).unwrap(), id);
        }
        for bad in ["", "!!!", "YWZ0ZXI6", "Zm9vOjE", "YWZ0ZXI6eA"] {
            assert_eq!(decode_cursor(bad).unwrap_err().code(), ErrorCode::InvalidRequest, "{bad}");
        }
    }
}
