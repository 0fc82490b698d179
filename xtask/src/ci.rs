//! `cargo xtask ci`: everything CI checks, runnable locally with one command.
//!
//! Every step runs even after an earlier one failed, so one run reports all the
//! problems at once; the exit status is non-zero if any step failed.

use std::path::Path;
use std::process::{Command, ExitCode, Stdio};

use anyhow::Result;

use crate::cmd;
use crate::postgres::Postgres;
use crate::redis::Redis;
use crate::tidy;
use crate::{browser, openapi_lint, python, python_client, receivers, redbot, schemathesis};

/// Names of the steps that failed so far.
#[derive(Default)]
struct Steps {
    failed: Vec<String>,
}

impl Steps {
    /// Announces a step, runs it, and records (rather than propagates) its failure.
    fn run(&mut self, name: &str, step: impl FnOnce() -> Result<()>) {
        cmd::header(name);
        if let Err(err) = step() {
            cmd::print_error("error", &err);
            self.failed.push(name.to_owned());
        }
    }

    fn command(&mut self, mut command: Command) {
        let name = cmd::describe(&command);
        self.run(&name, || cmd::run(&mut command));
    }
}

pub fn run(root: &Path) -> ExitCode {
    let mut steps = Steps::default();

    let mut fmt = cmd::cargo(root);
    fmt.args(["fmt", "--all", "--", "--check"]);
    steps.command(fmt);

    steps.run("tidy", || tidy::check(root));

    let mut clippy = cmd::cargo(root);
    clippy.args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]);
    steps.command(clippy);

    // Every intra-doc link resolves, and no doc comment breaks rustdoc's rules.
    let mut doc = cmd::cargo(root);
    doc.args(["doc", "--no-deps", "--workspace"]).env("RUSTDOCFLAGS", "-D warnings");
    steps.command(doc);

    steps.run("validate docs/openapi.json (openapi-spec-validator)", || {
        openapi_lint::validate(root)
    });
    if openapi_lint::has_npm() {
        steps.run("lint docs/openapi.json (Spectral, Redocly CLI)", || openapi_lint::lint(root));
    } else {
        cmd::header("lint docs/openapi.json: skipped, npm is not installed");
    }

    // The docs page's test needs a browser: installed here (as root), required below.
    steps.run("Chromium and ChromeDriver", browser::ensure);
    // The Python harness example's test needs pytest: the same.
    steps.run("pytest", python::ensure);
    // The webhook receivers' tests need Standard Webhooks' Python and TypeScript libraries.
    steps.run("Standard Webhooks for Python and TypeScript", || receivers::ensure(root));
    cmd::header("start throwaway PostgreSQL and Redis");
    match (Postgres::start(), Redis::start()) {
        (Ok(postgres), Ok(redis)) => {
            run_tests(
                root,
                &|command| {
                    postgres.apply_env(command);
                    redis.apply_env(command);
                    browser::apply_env(command);
                    python::apply_env(command);
                    receivers::apply_env(root, command);
                },
                &mut steps,
            );
            // Stop now rather than at the end of the function so the servers'
            // shutdown shows up before the summary line.
            drop((postgres, redis));
            // REDbot on the answers of the test build the tests above built.
            steps.run("cargo xtask redbot", || redbot::run(root));
            // schemathesis against the served document, on the same build.
            steps.run("cargo xtask schemathesis", || schemathesis::run(root));
            // The generated Python client of docs/api.md, and its snippets.
            steps.run("cargo xtask python-client", || python_client::run(root));
            // Faults of stores of its own, on the test build the tests above built.
            steps.run("cargo xtask faults --short", || {
                let mut faults = cmd::cargo(root);
                faults.args(["xtask", "faults", "--short"]);
                cmd::run(&mut faults)
            });
        }
        (postgres, redis) => {
            for err in [postgres.err(), redis.err()].into_iter().flatten() {
                cmd::print_error("error", &err);
            }
            eprintln!("error: skipping tests, they need PostgreSQL and Redis");
            steps.failed.push("start throwaway PostgreSQL and Redis".to_owned());
        }
    }

    if steps.failed.is_empty() {
        cmd::header("ci passed");
        ExitCode::SUCCESS
    } else {
        cmd::header(&format!("ci FAILED: {}", steps.failed.join("; ")));
        ExitCode::FAILURE
    }
}

fn run_tests(root: &Path, servers: &dyn Fn(&mut Command), steps: &mut Steps) {
    let nextest = has_nextest(root);

    // nextest does not run doc tests, so they go first, on their own; the main run comes
    // last so that its summary closes the output. Plain `cargo test` runs them itself.
    if nextest {
        let mut doc_tests = cmd::cargo(root);
        doc_tests.args(["test", "--workspace", "--doc"]);
        servers(&mut doc_tests);
        steps.command(doc_tests);
    }

    let mut tests = cmd::cargo(root);
    if nextest {
        tests.args(["nextest", "run", "--workspace", "--no-fail-fast"]);
    } else {
        tests.args(["test", "--workspace", "--no-fail-fast"]);
    }
    servers(&mut tests);
    steps.command(tests);

    // A user's crate outside the workspace, on the binary the tests above built.
    let outside = root.join("examples/outside-tester/Cargo.toml");
    let mut outside_fmt = cmd::cargo(root);
    outside_fmt.arg("fmt").arg("--manifest-path").arg(&outside).args(["--", "--check"]);
    steps.command(outside_fmt);
    let mut outside_tests = cmd::cargo(root);
    outside_tests
        .args(["test", "--locked", "--manifest-path"])
        .arg(&outside)
        .env("CARGO_TARGET_DIR", root.join("target"))
        .env("ANIMAL_STORE_BIN", root.join("target/debug/animal-store"));
    steps.command(outside_tests);
}

/// Whether `cargo nextest` is installed; it is faster and isolates tests in
/// separate processes, but CI must not depend on it being there.
fn has_nextest(root: &Path) -> bool {
    cmd::cargo(root)
        .args(["nextest", "--version"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}
