//! Database URLs, whose passwords never reach a log line or a message.

/// A database URL. Its password, if any, never shows: `Debug` and `Display` print
/// `postgres://user:***@host/db`; only [`DatabaseUrl::expose`] gives the whole URL, to
/// connect with.
#[derive(Clone, PartialEq, Eq)]
pub struct DatabaseUrl(String);

impl DatabaseUrl {
    /// The whole URL, password included: for opening the database, never for printing.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether this is `memory://` (with or without options), which keeps nothing.
    pub fn is_memory(&self) -> bool {
        self.0.starts_with("memory://")
    }
}

impl std::str::FromStr for DatabaseUrl {
    type Err = std::convert::Infallible;

    fn from_str(url: &str) -> Result<Self, Self::Err> {
        Ok(Self(url.to_owned()))
    }
}

impl std::fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&redact(&self.0))
    }
}

impl std::fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DatabaseUrl({:?})", redact(&self.0))
    }
}

/// The URL without its password, for messages.
fn redact(url: &str) -> String {
    animal_store_infra::redact::redact(url).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(redact("postgres://u:secret@h:5432/db"), "postgres://u:***@h:5432/db");
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(redact("sqlite://a.db"), "sqlite://a.db");
    }

    #[test]
    fn the_database_password_never_shows() {
        let url: DatabaseUrl = "postgres://u:secret@h:5432/db".parse().unwrap();
        assert_eq!(url.to_string(), "postgres://u:***@h:5432/db");
        assert!(!format!("{url:?}").contains("secret"));
        let cli = crate::cli::Cli::try_parse_from(["animal-store", "--database-url", url.expose()])
            .unwrap();
        assert!(!format!("{cli:?}").contains("secret"), "{cli:?}");
        assert_eq!(cli.database_url.expose(), "postgres://u:secret@h:5432/db");
    }
}
