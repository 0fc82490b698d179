//! Passwords out of messages: every URL in a text loses the password of its user part
//! (`postgres://alice:***@host/db`, `redis://:***@host`) and of its query
//! (`?password=***`), whatever its scheme. Applied to every message that may hold a URL:
//! the database URL's own `Display`, and each start-up error line as a whole, causes
//! included, since a driver may quote the URL it was given.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

/// `scheme://user:password@`: everything up to the colon is kept.
static USERINFO: LazyLock<Regex> = LazyLock::new(|| {
    // Up to the last `@` before a space: a password may hold `/`, `?`, `#` or `@` unescaped
    // in a malformed URL, and masking too much is harmless.
    Regex::new(r"(?i)\b([a-z][a-z0-9+.\-]*://[^\s/?#@:]*):\S*@").expect("a valid pattern")
});

/// A query parameter that carries a password.
static QUERY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)([?&;](?:password|passwd|pass|pwd|sslpassword|secret|token)=)[^&;#\s"']*"#)
        .expect("a valid pattern")
});

/// `text` with the passwords of every URL in it replaced by `***`.
pub fn redact(text: &str) -> Cow<'_, str> {
    match USERINFO.replace_all(text, "$1:***@") {
        Cow::Borrowed(text) => QUERY.replace_all(text, "$1***"),
        Cow::Owned(text) => Cow::Owned(QUERY.replace_all(&text, "$1***").into_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_in_urls_are_masked_whatever_the_scheme() {
        for (text, masked) in [
            ("postgres://u:secret@h:5432/db", "postgres://u:***@h:5432/db"),
            (
                "postgresql://u:s%40cret@h/db?sslmode=require",
                "postgresql://u:***@h/db?sslmode=require",
            ),
            ("mysql://root:hunter2@db/x", "mysql://root:***@db/x"),
            ("redis://:hunter2@cache:6379", "redis://:***@cache:6379"),
            ("postgres://u:p/ss?#x@h/db", "postgres://u:***@h/db"),
            ("postgres://u:p@ss@h/db", "postgres://u:***@h/db"),
            (
                "postgres://u@h/db?password=hunter2&sslmode=require",
                "postgres://u@h/db?password=***&sslmode=require",
            ),
            ("postgres://h/db?user=u&PASSWORD=hunter2", "postgres://h/db?user=u&PASSWORD=***"),
            ("URL \"redis://h?password=x\": bad", "URL \"redis://h?password=***\": bad"),
            (
                "cannot open postgres://a:b@h/db: error with postgres://c:d@h/db",
                "cannot open postgres://a:***@h/db: error with postgres://c:***@h/db",
            ),
        ] {
            assert_eq!(redact(text), masked, "{text}");
        }
        for untouched in ["postgres://u@h/db", "sqlite://a.db", "memory://?latency-ms=5", "no URL"]
        {
            assert_eq!(redact(untouched), untouched);
        }
    }
}
