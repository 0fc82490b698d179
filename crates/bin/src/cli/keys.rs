//! The arguments of `animal-store keys`: issuing, listing, revoking and rotating API keys.

use std::time::Duration;

use clap::{Subcommand, ValueEnum};

use super::parse_duration;

/// The plans a key can be issued on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanName {
    /// 60 requests a minute, 1,000 a day.
    Free,
    /// 300 requests a minute, 10,000 a day.
    Pro,
    /// 1,000 requests a minute, 100,000 a day.
    Business,
    /// Quotas set per key with `--per-minute` and `--per-day`.
    Enterprise,
}

impl PlanName {
    /// The plan's name, as the domain knows it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Free => "free",
            Self::Pro => "pro",
            Self::Business => "business",
            Self::Enterprise => "enterprise",
        }
    }
}

/// What a key may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ScopeName {
    /// Only the operations that change nothing, and the rate-limit inquiry.
    Read,
    /// Every operation.
    #[default]
    Write,
}

impl From<ScopeName> for animal_store_domain::Scope {
    fn from(scope: ScopeName) -> Self {
        match scope {
            ScopeName::Read => Self::Read,
            ScopeName::Write => Self::Write,
        }
    }
}

/// The key commands.
#[derive(Debug, Clone, Subcommand)]
pub enum KeysCommand {
    /// Issue a key and print it, alone, on stdout. It is shown this once: only its digest is
    /// stored.
    Create {
        /// The plan that sets the key's quotas.
        #[arg(long, value_enum)]
        plan: PlanName,
        /// A name to tell the key apart in `keys list`.
        #[arg(long)]
        name: Option<String>,
        /// What the key may do: `read`, only the operations that change nothing (listing,
        /// getting, the inventory, the rate limit); `write`, every operation.
        #[arg(long, value_enum, default_value_t)]
        scope: ScopeName,
        /// Requests per UTC minute (enterprise only, with --per-day).
        #[arg(long)]
        per_minute: Option<u32>,
        /// Requests per UTC day (enterprise only, with --per-minute).
        #[arg(long)]
        per_day: Option<u32>,
        /// Make the key stop working this long after now: `90d`, `12h`... Without it, the
        /// key works until revoked.
        #[arg(long, value_parser = parse_duration)]
        expires_in: Option<Duration>,
    },
    /// List the keys, one per line, id first. Never shows a secret.
    List,
    /// Revoke a key by id; it stops working within a second.
    Revoke {
        /// The key id, as `keys list` shows it.
        id: String,
    },
    /// Replace a key by id: issue a key with its plan, quotas, scope, name and environment and
    /// print it, alone, on stdout; the old key keeps working for the grace period, and both
    /// count against one quota meanwhile.
    Rotate {
        /// The key id, as `keys list` shows it.
        id: String,
        /// How long the old key keeps working: `24h`, `30m`, `0s` (it stops now)...
        #[arg(long, default_value = "24h", value_parser = parse_grace)]
        grace: Duration,
        /// Make the new key stop working this long after now; without it, it works until
        /// revoked.
        #[arg(long, value_parser = parse_duration)]
        expires_in: Option<Duration>,
    },
}

/// A grace period: a duration as [`parse_duration`] reads it, zero allowed.
fn parse_grace(text: &str) -> Result<Duration, String> {
    match text.trim() {
        "0" | "0s" => Ok(Duration::ZERO),
        _ => parse_duration(text),
    }
}
