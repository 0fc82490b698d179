//! `cargo xtask openapi --lint`: checks `docs/openapi.json` with tools its readers use.
//!
//! - [`validate`]: `openapi-spec-validator`, from the Python Package Index, which checks the document against the
//!   OpenAPI 3.0 schema and its rules (unresolvable references, duplicate operation ids).
//!   `cargo xtask ci` runs it always: Python and pip are on every machine CI runs on, and a
//!   pinned version installs in seconds into a virtual environment under `target/tools`.
//! - [`lint`]: Spectral (`spectral:oas`) and Redocly CLI (`recommended`), the linters client
//!   generators and documentation sites run; any problem, a warning included, fails. They
//!   come from the npm registry, so `cargo xtask ci` runs them where npm is installed and
//!   says so where it is not.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::cmd;

const DOCUMENT: &str = "docs/openapi.json";
const VALIDATOR: &str = "openapi-spec-validator==0.7.2";
const LINTERS: [&str; 2] = ["@stoplight/spectral-cli@6.16.3", "@redocly/cli@2.77.0"];

fn tools(root: &Path, name: &str) -> PathBuf {
    root.join("target/tools").join(name)
}

/// Validates the document with `openapi-spec-validator`, installed on first use.
pub fn validate(root: &Path) -> Result<()> {
    let venv = crate::python::tools(root, "openapi-spec-validator", &[VALIDATOR])?;
    cmd::run(Command::new(venv.join("bin/openapi-spec-validator")).arg(root.join(DOCUMENT)))
}

/// Whether npm is installed.
pub fn has_npm() -> bool {
    Command::new("npm").arg("--version").output().is_ok_and(|out| out.status.success())
}

/// The document as a server serves it: the committed one with the server itself (`/v1`)
/// listed first (`tests/blackbox/docs_page.rs` checks that this is what servers serve).
fn served_copy(root: &Path, dir: &Path) -> Result<PathBuf> {
    let text = std::fs::read_to_string(root.join(DOCUMENT))?;
    let mut document: serde_json::Value = serde_json::from_str(&text)?;
    let this = serde_json::json!({"url": "/v1", "description": "This server: the one that served this document"});
    document["servers"].as_array_mut().context("the document lists no servers")?.insert(0, this);
    let path = dir.join("served-openapi.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&document)?)?;
    Ok(path)
}

/// Lints the document, and the document as servers serve it, with Spectral and Redocly CLI,
/// installed on first use; fails on any problem.
pub fn lint(root: &Path) -> Result<()> {
    let dir = tools(root, "openapi-lint");
    let bin = dir.join("node_modules/.bin");
    if !bin.join("spectral").exists() || !bin.join("redocly").exists() {
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("package.json"), r#"{"private": true}"#)?;
        cmd::run(Command::new("npm").current_dir(&dir).args(["install", "--silent"]).args(LINTERS))
            .context("could not install Spectral and Redocly CLI from the npm registry")?;
    }
    let ruleset = dir.join(".spectral.yaml");
    std::fs::write(&ruleset, "extends: [\"spectral:oas\"]\n")?;
    for document in [root.join(DOCUMENT), served_copy(root, &dir)?] {
        lint_one(&bin, &ruleset, &document)?;
    }
    Ok(())
}

fn lint_one(bin: &Path, ruleset: &Path, document: &Path) -> Result<()> {
    cmd::run(
        Command::new(bin.join("spectral"))
            .args(["lint", "--fail-severity=hint", "--ruleset"])
            .arg(ruleset)
            .arg(document),
    )?;
    let report = cmd::run_quiet(
        Command::new(bin.join("redocly"))
            .args(["lint", "--extends=recommended", "--format=json"])
            .arg(document),
    );
    let output = match report {
        Ok(output) => output.stdout,
        Err(err) => return Err(err.context("Redocly CLI found problems")),
    };
    let report: serde_json::Value =
        serde_json::from_slice(&output).context("Redocly CLI's report is not JSON")?;
    let totals = &report["totals"];
    match (totals["errors"].as_u64(), totals["warnings"].as_u64()) {
        (Some(0), Some(0)) => {
            eprintln!("Redocly CLI (recommended): no problems in {}", document.display());
            Ok(())
        }
        _ => bail!("Redocly CLI (recommended) found problems in {}: {totals}", document.display()),
    }
}
