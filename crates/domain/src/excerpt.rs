//! How much of a client's value the service repeats: the one bound for error messages and
//! log lines alike (`docs/security.md#what-the-service-defends`).
//!
//! A client chooses the length of what it sends: a 5,000-digit id, a 390,000-character
//! `Content-Type`, a 100 KB method. Quoted whole, such a value makes an answer or a log line
//! as large as the client likes, and carries what the client likes into them. Every message
//! and log field that repeats a client's value repeats its [`excerpt`] instead.

/// The most characters of a client's value that are repeated.
pub const EXCERPT_CHARS: usize = 32;

/// `text` itself when it has at most [`EXCERPT_CHARS`] characters; otherwise its first
/// [`EXCERPT_CHARS`] characters followed by how long it was, as in
/// `99999999999999999999999999999999... (5000 characters)`.
pub fn excerpt(text: &str) -> String {
    let mut chars = text.char_indices();
    let Some((end, _)) = chars.nth(EXCERPT_CHARS) else {
        return text.to_owned();
    };
    // Counted only past the cut, and only as far as a long value goes.
    let length = EXCERPT_CHARS + 1 + chars.count();
    format!("{}... ({length} characters)", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_value_is_cut_to_its_first_32_characters_and_its_length() {
        let long = "9".repeat(5_000);
        assert_eq!(excerpt(&long), format!("{}... (5000 characters)", "9".repeat(32)));
        assert_eq!(excerpt("available!"), "available!");
        assert_eq!(excerpt(""), "");
        let exact = "a".repeat(EXCERPT_CHARS);
        assert_eq!(excerpt(&exact), exact);
        let one_more = "a".repeat(EXCERPT_CHARS + 1);
        assert_eq!(excerpt(&one_more), format!("{exact}... (33 characters)"));
    }

    #[test]
    fn characters_not_bytes_are_counted_and_cut() {
        let wide = "é".repeat(40);
        assert_eq!(excerpt(&wide), format!("{}... (40 characters)", "é".repeat(32)));
        let script = "text/html; x=<script>alert(1)</script>";
        assert_eq!(excerpt(script), "text/html; x=<script>alert(1)</s... (38 characters)");
    }
}
