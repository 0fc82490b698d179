//! The command line: every setting is a flag with an environment variable beside it.

use std::time::Duration;

use animal_store_api::{DEFAULT_PRODUCTION_URL, DEFAULT_STAGING_URL};

mod database_url;
mod keys;
mod values;
mod webhooks;

use animal_store_domain::Environment;
use clap::parser::ValueSource;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
pub use database_url::DatabaseUrl;
pub use keys::KeysCommand;
use values::parse_network;
pub use values::{
    ForwardedHeaderName, LimiterFailureMode, LogFormat, RateLimiterKind, parse_duration,
};
pub use webhooks::WebhooksCommand;

/// The Animal Store server and its administration commands.
#[derive(Debug, Clone, Parser)]
#[command(name = "animal-store", version, about)]
pub struct Cli {
    /// The database: `sqlite://PATH` (created if missing), `postgres://USER:PASSWORD@HOST:PORT/DB`,
    /// or `memory://` (nothing is kept; for demos and tests). `memory://` takes faults for
    /// harnesses, joined by `&` (docs/testing.md names the operations each counts):
    /// `?latency-ms=N` (every request that reads or writes data waits N ms), `fail-every=N`
    /// (every Nth such request gets 503), `internal-error-every=N` (every Nth gets 500),
    /// `key-store-unavailable-every=N` (every Nth request with a key gets 503: its key
    /// cannot be checked), `drop-answer-every=N` (every Nth stored write is not answered,
    /// its connection closed), `stored-then-unavailable-every=N` (every Nth stored write is
    /// answered 503), `latency-after-store-ms=N` (every stored write's answer waits N ms).
    #[arg(long, env = "DATABASE_URL", default_value = "sqlite://animal-store.db", global = true)]
    pub database_url: DatabaseUrl,

    /// The environment whose keys are issued and accepted: `production` (keys `as_live_...`)
    /// or `staging` (keys `as_test_...`).
    #[arg(long, env = "ANIMAL_STORE_ENVIRONMENT", default_value = "production", global = true)]
    pub environment: Environment,

    /// SQLite only: the most pages (4 KiB each) the database file may hold. Past it, writes
    /// fail as on a full disk: for rehearsing a full disk, and for tests.
    #[arg(long, env = "ANIMAL_STORE_SQLITE_MAX_PAGES", global = true, hide = true, value_parser = clap::value_parser!(u32).range(1..))]
    pub sqlite_max_pages: Option<u32>,

    /// SQLite only: the most memory, in MiB, the read cache takes (the pets and pages asked
    /// again, answered from memory until the next write); 0 turns it off.
    #[arg(long, env = "ANIMAL_STORE_READ_CACHE_MIB", default_value_t = animal_store_infra::DEFAULT_READ_CACHE_MIB, global = true, value_parser = clap::value_parser!(u32).range(0..=4096))]
    pub read_cache_mib: u32,

    /// How log lines are written to stderr: `text`, or `json` (one object per line, with the
    /// fields of the request's span).
    #[arg(long, env = "ANIMAL_STORE_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, global = true)]
    pub log_format: LogFormat,

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
    /// List every owner's webhook endpoints, and disable one for good.
    Webhooks {
        /// The webhook command.
        #[command(subcommand)]
        command: WebhooksCommand,
    },
    /// Apply pending database migrations, then exit.
    Migrate(MigrateArgs),
    /// Print every setting of `serve`, its value and where it came from, with passwords
    /// masked; exit 2 when one is invalid. For checking a configuration before deploying.
    Config(ServeArgs),
    /// Copy the SQLite database, consistently, while the server runs.
    Backup {
        /// Where the copy goes: a new file in an existing directory.
        path: std::path::PathBuf,
    },
    /// Print the OpenAPI document.
    Openapi(DocumentArgs),
}

/// The settings of `migrate`.
#[derive(Debug, Clone, Args)]
pub struct MigrateArgs {
    /// List the migrations that would be applied, and apply none.
    #[arg(long)]
    pub dry_run: bool,
}

/// What `serve` does with a database that lacks migrations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MigrationPolicy {
    /// Apply them, then serve: for a single server (the default SQLite start).
    Auto,
    /// Apply nothing, and refuse to start when one is missing: for several servers on one
    /// database, migrated by `animal-store migrate` before they are deployed.
    Never,
}

/// The settings that show in the OpenAPI document.
#[derive(Debug, Clone, Args)]
pub struct DocumentArgs {
    /// The production address, `/v1` included, listed in the OpenAPI document.
    #[arg(long, env = "ANIMAL_STORE_PRODUCTION_URL", default_value = DEFAULT_PRODUCTION_URL)]
    pub production_url: String,

    /// The staging address, `/v1` included, listed in the OpenAPI document.
    #[arg(long, env = "ANIMAL_STORE_STAGING_URL", default_value = DEFAULT_STAGING_URL)]
    pub staging_url: String,

    /// Turn the experimental operations off: they answer 404 and the document leaves them
    /// out. Beta and stable operations are served either way.
    #[arg(long, env = "ANIMAL_STORE_DISABLE_EXPERIMENTAL")]
    pub disable_experimental: bool,
}

/// The settings of `serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// The address to listen on; port 0 picks a free port (the log says which).
    #[arg(long, env = "ANIMAL_STORE_BIND", default_value = "127.0.0.1:8080")]
    pub bind: String,

    /// The addresses the OpenAPI document lists.
    #[command(flatten)]
    pub document: DocumentArgs,

    /// Once listening, write JSON `{"address": "http://HOST:PORT", "keys": {NAME: KEY}}` to
    /// this file, whole: where the server listens and the keys issued for this run. For
    /// harnesses and scripts, whatever `RUST_LOG` says. Removed at start, before anything
    /// else, and at a clean stop.
    #[arg(long, env = "ANIMAL_STORE_READY_FILE")]
    pub ready_file: Option<std::path::PathBuf>,

    /// Keys, pets and orders a `memory://` run starts with (JSON; see docs/testing.md).
    /// Refused with any other database.
    #[arg(long, env = "ANIMAL_STORE_FIXTURES")]
    pub fixtures: Option<std::path::PathBuf>,

    /// What to do with a database that lacks migrations this version needs: `auto` applies
    /// them at start (one server at a time takes the database's migration lock); `never`
    /// applies nothing and refuses to start, naming what is missing (run `animal-store
    /// migrate` first). See docs/operations.md.
    #[arg(long = "migrate", env = "ANIMAL_STORE_MIGRATE", value_enum, default_value_t = MigrationPolicy::Auto)]
    pub migrate: MigrationPolicy,

    /// Seconds of normal service after SIGINT or SIGTERM, while `/readyz` already answers 503
    /// so that a load balancer moves traffic away; then the graceful stop begins.
    #[arg(long, env = "ANIMAL_STORE_DRAIN_SECS", default_value_t = 0)]
    pub drain_secs: u64,

    /// Seconds in-flight requests get to finish after SIGINT or SIGTERM.
    #[arg(long, env = "ANIMAL_STORE_SHUTDOWN_GRACE", default_value_t = 30)]
    pub shutdown_grace: u64,

    /// Serve Prometheus metrics at `/metrics` (`true`), or answer 404 there and record
    /// nothing (`false`).
    #[arg(long, env = "ANIMAL_STORE_METRICS", default_value_t = true, action = clap::ArgAction::Set)]
    pub metrics: bool,

    /// How long clients may take, and how many connections they may hold.
    #[command(flatten)]
    pub connections: ConnectionArgs,

    /// A key refused more than this many times after its first 429, while limited, is
    /// suspended.
    #[arg(long, env = "ANIMAL_STORE_SUSPEND_AFTER", default_value_t = 30)]
    pub suspend_after: u32,

    /// How long a suspension lasts, in seconds.
    #[arg(long, env = "ANIMAL_STORE_SUSPENSION_SECS", default_value_t = 900, value_parser = clap::value_parser!(u64).range(1..))]
    pub suspension_secs: u64,

    /// Requests per minute from one client address without a valid key.
    #[arg(long, env = "ANIMAL_STORE_PER_ADDRESS_PER_MINUTE", default_value_t = 60, value_parser = clap::value_parser!(u32).range(1..))]
    pub per_address_per_minute: u32,

    /// A proxy (address or CIDR network) whose `X-Forwarded-For` is believed; repeat the
    /// option, or separate with commas in the variable.
    #[arg(long = "trusted-proxy", env = "ANIMAL_STORE_TRUSTED_PROXIES", value_delimiter = ',', value_parser = parse_network)]
    pub trusted_proxies: Vec<ipnet::IpNet>,

    /// The header the trusted proxies write the client into: `x-forwarded-for`, or
    /// `forwarded` (RFC 7239). The other one is ignored.
    #[arg(long, env = "ANIMAL_STORE_FORWARDED_HEADER", value_enum, default_value_t = ForwardedHeaderName::XForwardedFor)]
    pub forwarded_header: ForwardedHeaderName,

    /// Requests without a valid key from IPv6 clients are counted per network of this prefix
    /// length (one host commonly holds a /64); 128 counts each address.
    #[arg(long, env = "ANIMAL_STORE_IPV6_PREFIX", default_value_t = 64, value_parser = clap::value_parser!(u8).range(1..=128))]
    pub ipv6_prefix: u8,

    /// Where request counters are kept: `moka` (moka caches in this process; `memory` is
    /// another name for it), or `redis`, shared by every instance that names the same
    /// `--redis-url`.
    #[arg(long, env = "ANIMAL_STORE_RATE_LIMITER", value_enum, default_value_t = RateLimiterKind::Moka)]
    pub rate_limiter: RateLimiterKind,

    /// The Redis server of `--rate-limiter redis`: `redis://[:PASSWORD@]HOST:PORT[/DB]`.
    #[arg(long, env = "REDIS_URL")]
    pub redis_url: Option<String>,

    /// How long a rate-limit decision waits for Redis before `--limiter-failure` applies:
    /// `50ms`, `1s`...
    #[arg(long, env = "ANIMAL_STORE_LIMITER_TIMEOUT", default_value = "50ms", value_parser = parse_duration)]
    pub limiter_timeout: Duration,

    /// What a rate-limit decision does when Redis does not answer in time or fails: `local`
    /// counts in this instance meanwhile (a key may get its quota from each instance),
    /// `open` admits every request, `closed` answers 503.
    #[arg(long, env = "ANIMAL_STORE_LIMITER_FAILURE", value_enum, default_value_t = LimiterFailureMode::Local)]
    pub limiter_failure: LimiterFailureMode,

    /// The most subjects (keys and client addresses) whose counters are kept in memory.
    #[arg(long, env = "ANIMAL_STORE_LIMITER_CAPACITY", default_value_t = 2_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub limiter_capacity: u64,

    /// How long events are kept (listEvents, getEvent): `30d`, `72h`... Older ones are
    /// removed in the background every ten minutes (every second on memory://).
    #[arg(long, env = "ANIMAL_STORE_EVENT_RETENTION", default_value = "30d", value_parser = parse_duration)]
    pub event_retention: Duration,

    /// Let webhook endpoints be `http` and at any address, loopback and private ones
    /// included: for tests and local development only, never in production (logged at
    /// start).
    #[arg(long, env = "ANIMAL_STORE_WEBHOOKS_ALLOW_PRIVATE")]
    pub webhooks_allow_private: bool,

    /// How long one delivery attempt waits for a webhook receiver's answer before it counts
    /// as failed (and is retried on the schedule).
    #[arg(long, env = "ANIMAL_STORE_WEBHOOK_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub webhook_timeout: Duration,

    /// What one second of the webhook retry schedule lasts (`1s`): tests shorten it.
    #[arg(long, env = "ANIMAL_STORE_WEBHOOK_RETRY_UNIT", default_value = "1s", value_parser = parse_duration, hide = true)]
    pub webhook_retry_unit: Duration,

    /// Read the time from this file (whole Unix seconds, read at every request) instead of
    /// the system clock, for tests that must cross a minute, a day or a sunset without
    /// waiting. With memory:// only.
    #[arg(long, env = "ANIMAL_STORE_CLOCK_FILE")]
    pub clock_file: Option<std::path::PathBuf>,
}

/// The limits that keep slow and broken clients from holding the server. Durations are
/// `500ms`, `10s`, `2m`..., or a bare number of seconds.
#[derive(Debug, Clone, Args)]
pub struct ConnectionArgs {
    /// A request's headers must be complete within this time of its first byte.
    #[arg(long, env = "ANIMAL_STORE_HEADER_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub header_timeout: Duration,

    /// A request's body must be complete within this time of its headers, or the
    /// connection is closed.
    #[arg(long, env = "ANIMAL_STORE_BODY_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub body_timeout: Duration,

    /// A keep-alive connection with no request in flight is closed after this time.
    #[arg(long, env = "ANIMAL_STORE_IDLE_TIMEOUT", default_value = "60s", value_parser = parse_duration)]
    pub idle_timeout: Duration,

    /// A request not answered within this time is answered 503 `service_unavailable`.
    #[arg(long, env = "ANIMAL_STORE_REQUEST_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub request_timeout: Duration,

    /// The most connections served at once; more are answered 503 and closed. By default
    /// 10,000, or less when the limit on open file descriptors is lower: that limit less 64.
    #[arg(long, env = "ANIMAL_STORE_MAX_CONNECTIONS", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: Option<u32>,
}

/// What `--version` prints after the name: the version and the schema level (how many
/// migrations this binary knows), `1.0.0 (schema 9)`.
pub fn version() -> &'static str {
    static VERSION: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    VERSION.get_or_init(|| {
        let level = animal_store_infra::Database::schema_level();
        format!("{} (schema {level})", env!("CARGO_PKG_VERSION"))
    })
}

/// Parses the command line, exiting with clap's message and code 2 on a mistake. An option
/// of `serve` written before a command (`animal-store --bind X keys list`, or even
/// `... --bind X serve`) would be ignored, so it is refused instead.
pub fn parse() -> (Cli, clap::ArgMatches) {
    let matches = Cli::command().version(version()).get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|err| err.exit());
    if matches.subcommand_name().is_some() {
        // The options of `serve` that can also stand before any command, read off its
        // definition.
        let serve = ServeArgs::augment_args(clap::Command::new("serve"));
        let document = DocumentArgs::augment_args(clap::Command::new("openapi"));
        let misplaced = serve.get_arguments().find(|arg| {
            matches.try_get_raw(arg.get_id().as_str()).is_ok()
                && matches.value_source(arg.get_id().as_str()) == Some(ValueSource::CommandLine)
        });
        if let Some(arg) = misplaced {
            let flag = format!("--{}", arg.get_long().unwrap_or_default());
            let in_document = document.get_arguments().any(|a| a.get_id() == arg.get_id());
            let commands = if in_document { "`serve` or `openapi`" } else { "`serve`" };
            Cli::command()
                .error(
                    clap::error::ErrorKind::ArgumentConflict,
                    format!(
                        "{flag} is an option of {commands}: write it after the command, or give no command"
                    ),
                )
                .exit();
        }
    }
    (cli, matches)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn durations_take_a_unit_or_are_seconds() {
        assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("90d"), Ok(Duration::from_secs(90 * 86_400)));
        assert_eq!(parse_duration("1h 30m"), Ok(Duration::from_secs(5_400)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("soon").unwrap_err().contains("\"soon\" is not a duration"));
    }
}
