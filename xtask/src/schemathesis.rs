//! `cargo xtask schemathesis`: schemathesis (from the Python Package Index) against the
//! document a server serves, with every check, on a `memory://` server started for it. Any
//! failure fails the task; `xtask/schemathesis.toml` says what it is told and why.
//!
//! Generated webhook endpoints may name any public address, and the server would deliver
//! events to them. So, where the machine allows it (root, `unshare` and `ip`), the server
//! and schemathesis run in a network namespace of their own, with the loopback alone; the
//! task runs itself there (`schemathesis --inside`). Elsewhere the two operations that
//! register addresses are left out, and the task says so.
//!
//! schemathesis is installed on first use into a virtual environment under `target/tools`,
//! as `redbot` is. The seed is fixed, so that a run repeats; `SCHEMATHESIS_SEED` changes it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::cmd;
use crate::system::MemoryServer;

const SCHEMATHESIS: &str = "schemathesis==4.32.5";

/// Test cases per operation: about a minute on two cores.
const MAX_EXAMPLES: &str = "100";

/// A key no run exhausts, and animals for the reads to find.
const FIXTURES: &str = r#"{
  "keys": [{"name": "fuzz", "plan": "enterprise", "perMinute": 1000000, "perDay": 100000000}],
  "pets": [{"name": "Rex", "categoryId": 1}, {"name": "Mia", "categoryId": 2},
           {"name": "Tom", "categoryId": 3, "status": "sold"}]
}"#;

/// The operations that register webhook addresses, left out without a namespace.
const REGISTERING: [&str; 2] = ["createWebhookEndpoint", "updateWebhookEndpoint"];

/// Installs schemathesis if needed and returns its command.
fn ensure(root: &Path) -> Result<PathBuf> {
    Ok(crate::python::tools(root, "schemathesis", &[SCHEMATHESIS])?.join("bin/schemathesis"))
}

/// Whether this machine gives a process a network namespace with its loopback up.
fn namespace_available() -> bool {
    Command::new("unshare")
        .args(["--net", "ip", "link", "set", "lo", "up"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Installs schemathesis, builds the test build of the server (the binary the workspace's
/// tests run, so that after `cargo xtask ci`'s tests nothing is built), and runs it against
/// the server, in a network namespace where the machine allows one.
pub fn run(root: &Path) -> Result<()> {
    ensure(root)?;
    cmd::header("cargo build --workspace --tests");
    cmd::run(cmd::cargo(root).args(["build", "--workspace", "--tests"]))?;
    if namespace_available() {
        let me = std::env::current_exe().context("no path to this task")?;
        let mut inside = Command::new("unshare");
        inside.arg("--net").arg(me).args(["schemathesis", "--inside"]).current_dir(root);
        cmd::run(&mut inside)
    } else {
        cmd::header(&format!(
            "no network namespace here (root, unshare and ip): {} left out, since the server \
             would deliver to the addresses they register",
            REGISTERING.join(" and ")
        ));
        check(root, &REGISTERING)
    }
}

/// In the network namespace: the loopback up, then the run.
pub fn run_inside(root: &Path) -> Result<()> {
    cmd::run(Command::new("ip").args(["link", "set", "lo", "up"]))?;
    check(root, &[])
}

/// Starts the server and runs schemathesis against its document, leaving out `excluded`.
fn check(root: &Path, excluded: &[&str]) -> Result<()> {
    let program = root.join("target/tools/schemathesis/bin/schemathesis");
    let server = MemoryServer::start(root, FIXTURES)?;
    let key = server.key("fuzz")?;
    // Its own directory, for what hypothesis keeps between runs.
    let dir = tempfile::tempdir()?;
    let seed = std::env::var("SCHEMATHESIS_SEED").unwrap_or_else(|_| "1".to_owned());
    let mut command = Command::new(&program);
    command
        .arg("--config-file")
        .arg(root.join("xtask/schemathesis.toml"))
        .arg("run")
        .arg(format!("{}/v1/openapi.json", server.base))
        .args(["--checks", "all", "--workers", "1", "--max-examples", MAX_EXAMPLES])
        .args(["--seed", &seed, "--no-color", "--header"])
        .arg(format!("Authorization: Bearer {key}"))
        .current_dir(dir.path());
    for operation in excluded {
        command.args(["--exclude-operation-id", operation]);
    }
    let status = command.status().context("could not run schemathesis")?;
    if !status.success() {
        bail!("schemathesis found failures (seed {seed}), listed above");
    }
    Ok(())
}
