//! The `cursor` of `listPets`: opaque to clients, so that what it carries can change.

use animal_store_domain::PetId;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::error::ApiError;

/// Cursors are opaque to clients so that their content can change; today they carry the id
/// the next page starts after.
const CURSOR_PREFIX: &str = "after:";

pub fn encode_cursor(after: PetId) -> String {
    URL_SAFE_NO_PAD.encode(format!("{CURSOR_PREFIX}{after}"))
}

pub fn decode_cursor(cursor: &str) -> Result<PetId, ApiError> {
    URL_SAFE_NO_PAD
        .decode(cursor)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| text.strip_prefix(CURSOR_PREFIX)?.parse::<i64>().ok())
        .map(PetId::new)
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
            assert_eq!(decode_cursor(&encode_cursor(PetId::new(id))).unwrap(), PetId::new(id));
        }
        for bad in ["", "!!!", "YWZ0ZXI6", "Zm9vOjE", "YWZ0ZXI6eA"] {
            assert_eq!(decode_cursor(bad).unwrap_err().code(), ErrorCode::InvalidRequest, "{bad}");
        }
    }
}
