//! Python for the tasks.
//!
//! - pytest, for the black-box test that runs the Python harness example of docs/testing.md
//!   (`docs/examples/conftest.py`, `tests/blackbox/harness_contract.rs`). On Debian as root,
//!   `python3-pytest` is installed when no Python on the machine has pytest; elsewhere a
//!   missing pytest stops the task with the command that installs it.
//! - [`tools`]: the virtual environments under `target/tools` that hold the tools the tasks
//!   install from the Python Package Index, pinned.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{cmd, system};

/// The virtual environment `target/tools/NAME`, with `packages` (each `name==version`):
/// made and filled on first use, and again when one of them is missing; its path.
pub fn tools(root: &Path, name: &str, packages: &[&str]) -> Result<PathBuf> {
    let venv = root.join("target/tools").join(name);
    let pip = venv.join("bin/pip");
    let installed = Command::new(&pip).arg("freeze").output().is_ok_and(|out| {
        let frozen = String::from_utf8_lossy(&out.stdout).to_lowercase();
        packages.iter().all(|package| frozen.lines().any(|line| line == *package))
    });
    if !installed {
        cmd::run(Command::new("python3").args(["-m", "venv"]).arg(&venv))
            .context("could not create a Python virtual environment (python3 -m venv)")?;
        cmd::run(Command::new(&pip).args(["install", "--quiet"]).args(packages))
            .with_context(|| format!("could not install {} from PyPI", packages.join(", ")))?;
    }
    Ok(venv)
}

/// Tells the Python example's test to fail rather than skip when pytest is missing.
pub const REQUIRE_ENV: &str = "ANIMAL_STORE_REQUIRE_PYTEST";

/// The interpreters the test tries, in order: the one on the PATH, then Debian's.
const PYTHONS: [&str; 2] = ["python3", "/usr/bin/python3"];

/// Whether some Python on the machine imports pytest.
fn has_pytest() -> bool {
    PYTHONS.iter().any(|python| {
        Command::new(python)
            .args(["-c", "import pytest"])
            .output()
            .is_ok_and(|out| out.status.success())
    })
}

/// Makes sure a Python with pytest is installed.
pub fn ensure() -> Result<()> {
    if has_pytest() {
        return Ok(());
    }
    let as_root = system::is_root().context("could not tell whether we run as root")?;
    if !(as_root && system::is_debian()) {
        bail!("pytest not found; install it with: sudo apt-get install -y python3-pytest");
    }
    eprintln!("pytest not found; installing python3-pytest with apt-get");
    system::apt_install(&["python3-pytest"])
}

/// Sets the variable that makes the Python example's test required.
pub fn apply_env(command: &mut Command) {
    command.env(REQUIRE_ENV, "1");
}
