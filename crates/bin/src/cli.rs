//! The command line: every setting is a flag with an environment variable beside it.

use animal_store_domain::Environment;
use clap::parser::ValueSource;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

/// The Animal Store server and its administration commands.
#[derive(Debug, Clone, Parser)]
#[command(name = "animal-store", version, about)]
pub struct Cli {
    /// The database: `sqlite://PATH` (created if missing), `postgres://USER:PASSWORD@HOST:PORT/DB`,
    /// or `memory://` (nothing is kept; for demos and tests).
    #[arg(
        long,
        env = "DATABASE_URL",
        default_value = "sqlite://animal-store.db",
        global = true
    )]
    pub database_url: String,

    /// The environment whose keys are issued and accepted: `production` (keys `as_live_...`)
    /// or `staging` (keys `as_test_...`).
    #[arg(
        long,
        env = "ANIMAL_STORE_ENVIRONMENT",
        default_value = "production",
        global = true
    )]
    pub environment: Environment,

    /// What to do; `serve` when omitted.
    #[command(subcommand)]
    pub command: Option<Command>,

    /// The settings of `serve`, when no command is given (`animal-store --bind ...`).
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// The commands.
#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    /// Serve the HTTP API (the default).
    Serve(ServeArgs),
    /// Issue, list and revoke API keys.
    Keys {
        /// The key command.
        #[command(subcommand)]
        command: KeysCommand,
    },
    /// Apply pending database migrations, then exit.
    Migrate,
    /// Print the OpenAPI document.
    Openapi,
}

/// The settings of `serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// The address to listen on; port 0 picks a free port (the log says which).
    #[arg(long, env = "ANIMAL_STORE_BIND", default_value = "127.0.0.1:8080")]
    pub bind: String,

    /// The production address, `/v1` included, listed in the OpenAPI document.
    #[arg(
        long,
        env = "ANIMAL_STORE_PRODUCTION_URL",
        default_value = "https://api.animal-store.example/v1"
    )]
    pub production_url: String,

    /// The staging address, `/v1` included, listed in the OpenAPI document.
    #[arg(
        long,
        env = "ANIMAL_STORE_STAGING_URL",
        default_value = "https://staging.api.animal-store.example/v1"
    )]
    pub staging_url: String,

    /// Seconds in-flight requests get to finish after SIGINT or SIGTERM.
    #[arg(long, env = "ANIMAL_STORE_SHUTDOWN_GRACE", default_value_t = 30)]
    pub shutdown_grace: u64,
}

/// The key commands.
#[derive(Debug, Clone, Subcommand)]
pub enum KeysCommand {
    /// Issue a key and print it, alone, on stdout. It is shown this once: only its digest is
    /// stored.
    Create {
        /// The plan that sets the key's quotas.
        #[arg(long, value_parser = ["free", "pro", "business", "enterprise"])]
        plan: String,
        /// A name to tell the key apart in `keys list`.
        #[arg(long)]
        name: Option<String>,
        /// Requests per UTC minute (enterprise only, with --per-day).
        #[arg(long)]
        per_minute: Option<u32>,
        /// Requests per UTC day (enterprise only, with --per-minute).
        #[arg(long)]
        per_day: Option<u32>,
    },
    /// List the keys, one per line, id first. Never shows a secret.
    List,
    /// Revoke a key by id; it stops working within a second.
    Revoke {
        /// The key id, as `keys list` shows it.
        id: String,
    },
}

/// The options of `serve` that can also stand before any command, for `animal-store --bind ...`.
const SERVE_OPTIONS: [(&str, &str); 4] = [
    ("bind", "--bind"),
    ("production_url", "--production-url"),
    ("staging_url", "--staging-url"),
    ("shutdown_grace", "--shutdown-grace"),
];

/// Parses the command line, exiting with clap's message and code 2 on a mistake. An option
/// of `serve` written before a command (`animal-store --bind X keys list`, or even
/// `... --bind X serve`) would be ignored, so it is refused instead.
pub fn parse() -> Cli {
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|err| err.exit());
    if matches.subcommand_name().is_some() {
        let misplaced = SERVE_OPTIONS
            .iter()
            .find(|(id, _)| matches.value_source(id) == Some(ValueSource::CommandLine));
        if let Some((_, flag)) = misplaced {
            Cli::command()
                .error(
                    clap::error::ErrorKind::ArgumentConflict,
                    format!(
                        "{flag} is an option of `serve`: write it after `serve`, or give no command"
                    ),
                )
                .exit();
        }
    }
    cli
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }
}
