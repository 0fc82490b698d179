//! The Standard Webhooks libraries the black-box tests verify deliveries with, written by
//! others: Python's from `PyPI`, in a virtual environment, and TypeScript's from npm, with the
//! TypeScript compiler, both under `target/tools/webhooks`. On Debian as root, a missing
//! `npm` is installed with apt-get; elsewhere a missing tool stops the task with the command
//! that installs it.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{cmd, openapi_lint, system};

/// The Python interpreter that imports `standardwebhooks`.
pub const PYTHON_ENV: &str = "ANIMAL_STORE_WEBHOOK_PYTHON";
/// The directory whose `node_modules` hold `standardwebhooks` and `typescript`.
pub const NODE_ENV: &str = "ANIMAL_STORE_WEBHOOK_NODE";
/// Tells the receivers' tests to fail rather than skip when the libraries are missing.
pub const REQUIRE_ENV: &str = "ANIMAL_STORE_REQUIRE_WEBHOOK_RECEIVERS";

const PYTHON_PACKAGE: &str = "standardwebhooks==1.1.0";
const NODE_PACKAGES: [&str; 3] = ["standardwebhooks@1.1.1", "typescript@5.9.3", "@types/node@20"];

fn dir(root: &Path) -> PathBuf {
    root.join("target/tools/webhooks")
}

fn python(root: &Path) -> PathBuf {
    dir(root).join("python/bin/python")
}

fn node(root: &Path) -> PathBuf {
    dir(root).join("node")
}

/// Installs both libraries where they are missing.
pub fn ensure(root: &Path) -> Result<()> {
    crate::python::tools(root, "webhooks/python", &[PYTHON_PACKAGE])?;
    if !openapi_lint::has_npm() {
        let as_root = system::is_root().context("could not tell whether we run as root")?;
        if !(as_root && system::is_debian()) {
            bail!("npm not found; install it with: sudo apt-get install -y nodejs npm");
        }
        eprintln!("npm not found; installing nodejs and npm with apt-get");
        system::apt_install(&["nodejs", "npm"])?;
    }
    let node = node(root);
    if !node.join("node_modules/standardwebhooks").exists()
        || !node.join("node_modules/typescript").exists()
    {
        std::fs::create_dir_all(&node).context("could not create the npm tools' directory")?;
        let mut install = Command::new("npm");
        install.current_dir(&node).args(["install", "--silent", "--no-audit", "--no-fund"]);
        cmd::run(install.args(NODE_PACKAGES))
            .with_context(|| format!("could not install {} from npm", NODE_PACKAGES.join(", ")))?;
    }
    Ok(())
}

/// Points the receivers' tests at the libraries, and makes them required.
pub fn apply_env(root: &Path, command: &mut Command) {
    command.env(PYTHON_ENV, python(root)).env(NODE_ENV, node(root)).env(REQUIRE_ENV, "1");
}
