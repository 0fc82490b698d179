//! `cargo xtask python-client`: the Python client docs/api.md tells clients to generate
//! (openapi-python-client, from the Python Package Index), generated from
//! `docs/openapi.json`, must pass `ruff check` with its default rules and `mypy --strict`;
//! then the Python snippets of docs/api.md that use it run against a `memory://` server.
//! Any failure fails the task.
//!
//! The tools are installed on first use into a virtual environment under `target/tools`, as
//! `redbot` is, at the versions docs/api.md names.

use std::path::Path;
use std::process::Command;

use anyhow::{Result, bail};

use crate::cmd;
use crate::system::MemoryServer;

/// The generator and the checkers, pinned.
const TOOLS: [&str; 3] = ["openapi-python-client==0.29.1", "ruff==0.17.6", "mypy==2.4.1"];

/// The package the generator writes, and its module.
const PACKAGE: &str = "animal-store-api-client";
const MODULE: &str = "animal_store_api_client";

/// The address the snippets of docs/api.md name, replaced by the server's.
const DOCUMENTED_BASE: &str = "http://127.0.0.1:8080/v1";

/// An unlimited key for the snippets.
const FIXTURES: &str = r#"{"keys": [{"name": "client", "plan": "enterprise",
    "perMinute": 100000, "perDay": 1000000}]}"#;

/// The Python snippets of docs/api.md that import the client, the one that makes `client`
/// first, the others in the order of the page, with the server's address and `key`.
fn snippets(root: &Path, base: &str, key: &str) -> Result<String> {
    let api = std::fs::read_to_string(root.join("docs/api.md"))?;
    let mut blocks: Vec<&str> = api
        .split("```python\n")
        .skip(1)
        .filter_map(|rest| rest.split_once("\n```").map(|(code, _)| code))
        .filter(|code| code.contains(MODULE))
        .collect();
    blocks.sort_by_key(|code| !code.contains("AuthenticatedClient("));
    if blocks.len() < 3 {
        bail!("docs/api.md has {} Python snippets of the client, not 3 or more", blocks.len());
    }
    let program = format!("KEY = {key:?}\n{}\n", blocks.join("\n"));
    Ok(program.replace(DOCUMENTED_BASE, &format!("{base}/v1")))
}

/// Generates the client, checks it, installs it, and runs the snippets against a server of
/// the test build (the binary the workspace's tests run).
pub fn run(root: &Path) -> Result<()> {
    let venv = crate::python::tools(root, "python-client", &TOOLS)?;
    let bin = venv.join("bin");
    let dir = tempfile::tempdir()?;
    // The generator formats its output with the `ruff` it finds on the PATH.
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    cmd::run(
        Command::new(bin.join("openapi-python-client"))
            .args(["generate", "--path"])
            .arg(root.join("docs/openapi.json"))
            .env("PATH", &path)
            .current_dir(dir.path()),
    )?;
    let package = dir.path().join(PACKAGE);
    cmd::run(Command::new(bin.join("ruff")).arg("check").arg(".").current_dir(&package))?;
    cmd::run(Command::new(bin.join("pip")).args(["install", "--quiet"]).arg(&package))?;
    cmd::run(Command::new(bin.join("mypy")).args(["--strict", MODULE]).current_dir(&package))?;
    cmd::header("cargo build --workspace --tests");
    cmd::run(cmd::cargo(root).args(["build", "--workspace", "--tests"]))?;
    let server = MemoryServer::start(root, FIXTURES)?;
    let program = snippets(root, &server.base, &server.key("client")?)?;
    cmd::header("the snippets of docs/api.md that use the client");
    cmd::run(Command::new(bin.join("python")).arg("-c").arg(&program).current_dir(dir.path()))?;
    println!("the generated client passes ruff and mypy --strict, and its snippets run");
    Ok(())
}
