//! The faults the matrix knows, and what the command line asks of it.

use std::ffi::OsString;
use std::time::Duration;

/// How long each fault is held in a full run: longer than a rate-limit minute.
pub(super) const FULL_SECS: u64 = 90;
/// How long each fault is held with `--short`.
const SHORT_SECS: u64 = 5;

/// A fault the matrix knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fault {
    PostgresStopped,
    PostgresDiskFull,
    PostgresTerminated,
    PostgresSlow,
    SqliteDiskFull,
    RedisStopped,
    RedisPaused,
    RedisFull,
    KillOnFullDisk,
}

impl Fault {
    pub(super) const ALL: [Self; 9] = [
        Self::PostgresStopped,
        Self::PostgresDiskFull,
        Self::PostgresTerminated,
        Self::PostgresSlow,
        Self::SqliteDiskFull,
        Self::RedisStopped,
        Self::RedisPaused,
        Self::RedisFull,
        Self::KillOnFullDisk,
    ];

    pub(super) fn name(self) -> &'static str {
        match self {
            Self::PostgresStopped => "postgres-stopped",
            Self::PostgresDiskFull => "postgres-disk-full",
            Self::PostgresTerminated => "postgres-terminated",
            Self::PostgresSlow => "postgres-slow",
            Self::SqliteDiskFull => "sqlite-disk-full",
            Self::RedisStopped => "redis-stopped",
            Self::RedisPaused => "redis-paused",
            Self::RedisFull => "redis-full",
            Self::KillOnFullDisk => "kill-on-full-disk",
        }
    }

    pub(super) fn description(self) -> &'static str {
        match self {
            Self::PostgresStopped => "PostgreSQL stopped (immediate), then started",
            Self::PostgresDiskFull => {
                "PostgreSQL's disk full, then room again (and PostgreSQL started if it stopped)"
            }
            Self::PostgresTerminated => {
                "PostgreSQL terminates the service's connections every second"
            }
            Self::PostgresSlow => "PostgreSQL answers 2 s late (a relay that delays)",
            Self::SqliteDiskFull => "SQLite's disk full, then room again",
            Self::RedisStopped => "Redis killed, then started again, empty",
            Self::RedisPaused => "Redis paused (CLIENT PAUSE)",
            Self::RedisFull => "Redis full (maxmemory with noeviction)",
            Self::KillOnFullDisk => {
                "kill -9 of the service while SQLite's disk is full, restarts while full, then room"
            }
        }
    }

    fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|fault| fault.name() == name)
    }

    pub(super) fn store(self) -> Store {
        match self {
            Self::PostgresStopped
            | Self::PostgresDiskFull
            | Self::PostgresTerminated
            | Self::PostgresSlow => Store::Postgres,
            Self::SqliteDiskFull | Self::KillOnFullDisk => Store::SqliteOnSmallDisk,
            Self::RedisStopped | Self::RedisPaused | Self::RedisFull => Store::SqliteAndRedis,
        }
    }
}

/// Where a fault's service keeps its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Store {
    Postgres,
    SqliteOnSmallDisk,
    SqliteAndRedis,
}

/// What the command line asked for.
#[derive(Debug)]
pub(super) struct Options {
    pub(super) hold: Duration,
    pub(super) short: bool,
    pub(super) faults: Vec<Fault>,
}

pub(super) const USAGE: &str = "usage: cargo xtask faults [--short] [--secs N] [FAULT...]";

pub(super) fn parse(args: &[OsString]) -> Result<Options, String> {
    let mut options = Options { hold: Duration::ZERO, short: false, faults: Vec::new() };
    let mut secs = None;
    let mut args = args.iter().map(|arg| arg.to_string_lossy().into_owned());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--short" => options.short = true,
            "--secs" => {
                let value = args.next().ok_or("--secs needs a number of seconds")?;
                let value: u64 = value.parse().map_err(|_| {
                    format!("--secs takes a whole number of seconds, got {value:?}")
                })?;
                if value == 0 {
                    return Err("--secs must be at least 1: a fault of 0 s tests nothing".into());
                }
                secs = Some(value);
            }
            name => {
                let Some(fault) = Fault::parse(name) else {
                    let known: Vec<_> = Fault::ALL.iter().map(|fault| fault.name()).collect();
                    return Err(format!(
                        "unknown fault {name:?}; the matrix knows {}",
                        known.join(", ")
                    ));
                };
                options.faults.push(fault);
            }
        }
    }
    let default = if options.short { SHORT_SECS } else { FULL_SECS };
    options.hold = Duration::from_secs(secs.unwrap_or(default));
    if options.faults.is_empty() {
        options.faults = Fault::ALL.to_vec();
    }
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(args: &[&str]) -> Result<Options, String> {
        parse(&args.iter().map(OsString::from).collect::<Vec<_>>())
    }

    #[test]
    fn faults_and_durations_are_read_and_bad_ones_refused_in_one_line() {
        let all = parsed(&[]).expect("the whole matrix");
        assert_eq!((all.faults.len(), all.hold, all.short), (9, Duration::from_secs(90), false));
        let some = parsed(&["--short", "redis-full", "--secs", "7"]).expect("one fault");
        assert_eq!(
            (some.faults, some.hold, some.short),
            (vec![Fault::RedisFull], Duration::from_secs(7), true)
        );
        for (args, says) in [
            (
                &["disk-on-fire"][..],
                "unknown fault \"disk-on-fire\"; the matrix knows postgres-stopped",
            ),
            (&["--secs", "0"], "--secs must be at least 1"),
            (&["--secs", "soon"], "whole number of seconds"),
            (&["--secs"], "needs a number"),
        ] {
            let message = parsed(args).expect_err("refused");
            assert!(message.contains(says) && !message.contains('\n'), "{args:?}: {message}");
        }
    }
}
