//! Project automation for the Animal Store workspace, run as `cargo xtask <task>`.
//!
//! Tasks live here rather than in shell scripts so they behave the same on every
//! developer machine and in CI, and so they are type-checked and linted like the
//! rest of the workspace. Run `cargo xtask help` for the list of tasks.

mod browser;
mod ci;
mod cluster;
mod cmd;
mod faults;
mod load;
mod openapi;
mod openapi_lint;
mod postgres;
mod python;
mod python_client;
mod receivers;
mod redbot;
mod redis;
mod schemathesis;
mod system;
mod tidy;
mod upgrade;

use std::ffi::OsString;
use std::process::{Command, ExitCode};

use anyhow::{Context, Result};

use crate::postgres::Postgres;
use crate::redis::Redis;

const USAGE: &str = "\
Usage: cargo xtask <task> [args...]

Tasks:
  ci                      cargo fmt --check, tidy, clippy, then all tests (and doc tests)
                          against a throwaway PostgreSQL server and a throwaway Redis
  postgres -- <cmd...>    run <cmd> with a throwaway PostgreSQL server; the command gets
                          ANIMAL_STORE_TEST_POSTGRES_URL and ANIMAL_STORE_REQUIRE_POSTGRES=1
  redis -- <cmd...>       run <cmd> with a throwaway Redis server; the command gets
                          ANIMAL_STORE_TEST_REDIS_URL and ANIMAL_STORE_REQUIRE_REDIS=1
  openapi [--check]       regenerate docs/openapi.json, or fail if it is out of date
  openapi --lint          validate docs/openapi.json (openapi-spec-validator) and lint it
                          (Spectral spectral:oas, Redocly recommended): any problem fails
  bench [args...]         cargo bench --workspace [args...]
  load                    the release server under wrk against a ceiling server, ABAB:
                          pages, getPet, adds and a mix at 10,000 and 1,000,000 pets, on
                          SQLite (and PostgreSQL under `postgres --`); writes the table
                          to docs/benchmarks.md and the chart to docs/load.svg
  load --cluster          listPets on one instance with the Redis limiter against one with
                          the in-process limiter (ABAB), and through nginx across the three
                          of `cluster`; writes the table to docs/benchmarks.md
  cluster                 PostgreSQL, Redis, 3 release servers sharing them and nginx in
                          front, on loopback; prints the address and a key; Ctrl-C stops
                          and removes everything
  faults [--short] [--secs N] [FAULT...]
                          the release server under each fault of its stores (PostgreSQL
                          stopped, full, terminating connections, 2 s late; SQLite full;
                          Redis stopped, paused, full; kill -9 on a full disk), each held
                          90 s, with clients that check for 500s, 429s under quota, broken
                          connections and lost writes; writes the table to
                          docs/operations.md. --short: 5 s each, on the test build
  upgrade-drill BASE      a rolling upgrade under load from the release binary of commit
                          BASE to the working tree's, then one instance rolled back and
                          forward again: 3 instances on PostgreSQL behind nginx; fails on
                          any failed request or lost write; writes the table to
                          docs/operations.md
  redbot                  REDbot (the HTTP linter, from PyPI) on the answers of a server on
                          memory://: any bad note or caching warning fails
  python-client           the Python client of docs/api.md (openapi-python-client, from
                          PyPI), generated from docs/openapi.json: ruff check and mypy
                          --strict on it, then its snippets in docs/api.md run against a
                          server on memory://
  schemathesis            schemathesis (from PyPI) with every check against the document a
                          server on memory:// serves, in a network namespace of its own
                          where the machine allows one: any failure fails
  receivers -- CMD...     run CMD with Standard Webhooks' Python and TypeScript libraries
                          (PyPI, npm) installed under target/tools/webhooks and their
                          paths in the environment the webhook receivers' tests read
  tidy                    require //! docs atop every .rs file and no placeholder macros
                          under crates/, xtask/ and tests/
  help                    show this message
";

/// Exit status for command-line misuse, the usual convention (clap, getopt tools).
const USAGE_ERROR: u8 = 2;

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(err) => {
            cmd::print_error("error", &err);
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<ExitCode> {
    // `args_os` so that `postgres -- <cmd>` can forward arguments that are not UTF-8.
    let mut args = std::env::args_os().skip(1);
    let Some(task) = args.next() else {
        return Ok(usage_error());
    };
    let rest: Vec<OsString> = args.collect();
    let root = cmd::workspace_root()?;

    match (task.to_str(), rest.as_slice()) {
        (Some("ci"), []) => Ok(ci::run(&root)),
        (Some("postgres"), _) => with_server("postgres", rest, |command| {
            let server =
                Postgres::start().context("could not start a throwaway PostgreSQL server")?;
            server.apply_env(command);
            Ok(Box::new(server))
        }),
        (Some("redis"), _) => with_server("redis", rest, |command| {
            let server = Redis::start().context("could not start a throwaway Redis server")?;
            server.apply_env(command);
            Ok(Box::new(server))
        }),
        (Some("openapi"), []) => openapi::run(&root, false),
        (Some("openapi"), [flag]) if flag == "--check" => openapi::run(&root, true),
        (Some("openapi"), [flag]) if flag == "--lint" => openapi_lint::validate(&root)
            .and_then(|()| openapi_lint::lint(&root))
            .map(|()| ExitCode::SUCCESS),
        (Some("bench"), _) => bench(&root, &rest),
        (Some("load"), []) => load::run(&root).map(|()| ExitCode::SUCCESS),
        (Some("load"), [flag]) if flag == "--cluster" => {
            load::cluster::run(&root).map(|()| ExitCode::SUCCESS)
        }
        (Some("cluster"), []) => cluster::run(&root).map(|()| ExitCode::SUCCESS),
        (Some("faults"), _) => faults::run(&root, &rest),
        (Some("upgrade-drill"), [base]) => {
            let base = base.to_str().context("BASE is not UTF-8")?;
            upgrade::run(&root, base).map(|()| ExitCode::SUCCESS)
        }
        (Some("redbot"), []) => redbot::run(&root).map(|()| ExitCode::SUCCESS),
        (Some("python-client"), []) => python_client::run(&root).map(|()| ExitCode::SUCCESS),
        (Some("schemathesis"), []) => schemathesis::run(&root).map(|()| ExitCode::SUCCESS),
        (Some("schemathesis"), [flag]) if flag == "--inside" => {
            schemathesis::run_inside(&root).map(|()| ExitCode::SUCCESS)
        }
        (Some("receivers"), [dashes, command @ ..]) if dashes == "--" && !command.is_empty() => {
            receivers::ensure(&root)?;
            let mut run = std::process::Command::new(&command[0]);
            run.args(&command[1..]);
            receivers::apply_env(&root, &mut run);
            Ok(cmd::exit_code(run.status().context("could not run the command")?))
        }
        (Some("tidy"), []) => {
            tidy::check(&root)?;
            Ok(ExitCode::SUCCESS)
        }
        (Some("help" | "-h" | "--help"), _) => {
            print!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        _ => {
            let words: Vec<_> =
                std::iter::once(&task).chain(&rest).map(|arg| arg.to_string_lossy()).collect();
            eprintln!("error: unknown task or arguments: {}\n", words.join(" "));
            Ok(usage_error())
        }
    }
}

fn usage_error() -> ExitCode {
    eprint!("{USAGE}");
    ExitCode::from(USAGE_ERROR)
}

/// `cargo xtask postgres -- <cmd...>` and `cargo xtask redis -- <cmd...>`: let developers
/// run a subset of tests (or `psql`, `redis-cli`) against the same kind of server CI uses.
/// `start` starts the server and points the command at it; the server stops when the
/// command ends.
fn with_server(
    task: &str,
    args: Vec<OsString>,
    start: impl FnOnce(&mut Command) -> Result<Box<dyn std::any::Any>>,
) -> Result<ExitCode> {
    let mut args = args.into_iter().peekable();
    // The `--` is optional: cargo's alias already consumed one, and people forget.
    if args.peek().is_some_and(|arg| arg == "--") {
        args.next();
    }
    let Some(program) = args.next() else {
        eprintln!("error: `cargo xtask {task}` needs a command to run\n");
        return Ok(usage_error());
    };

    let mut command = Command::new(&program);
    command.args(args);
    let server = start(&mut command)?;
    let description = cmd::describe(&command);
    cmd::header(&description);
    let status = command.status().with_context(|| format!("could not run `{description}`"))?;
    // Stop the server before exiting: `ExitCode` is returned, not `process::exit`ed,
    // but being explicit keeps the order of the log lines obvious.
    drop(server);
    Ok(cmd::exit_code(status))
}

/// `cargo xtask bench [args...]`: a thin wrapper so benches are discoverable next to
/// the other tasks.
fn bench(root: &std::path::Path, args: &[OsString]) -> Result<ExitCode> {
    let mut command = cmd::cargo(root);
    command.args(["bench", "--workspace"]).args(args);
    let description = cmd::describe(&command);
    cmd::header(&description);
    let status = command.status().with_context(|| format!("could not run `{description}`"))?;
    Ok(cmd::exit_code(status))
}
