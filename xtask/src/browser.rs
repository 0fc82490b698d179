//! Headless Chromium and `chromedriver`, for the black-box test of the docs page in a real
//! browser (`tests/blackbox/browser.rs`). On Debian as root, the `chromium` and
//! `chromium-driver` packages are installed when missing; elsewhere a missing browser stops
//! the task with the command that installs it.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::system;

/// Tells the browser test to fail rather than skip when the browser is missing.
pub const REQUIRE_ENV: &str = "ANIMAL_STORE_REQUIRE_BROWSER";

const BINARIES: [(&str, &str); 2] =
    [("/usr/bin/chromium", "chromium"), ("/usr/bin/chromedriver", "chromium-driver")];

/// Makes sure Chromium and `chromedriver` are installed.
pub fn ensure() -> Result<()> {
    let missing: Vec<&str> = BINARIES
        .iter()
        .filter(|(binary, _)| !Path::new(binary).exists())
        .map(|&(_, package)| package)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let as_root = system::is_root().context("could not tell whether we run as root")?;
    if !(as_root && system::is_debian()) {
        bail!("Chromium not found; install it with: sudo apt-get install -y {}", missing.join(" "));
    }
    eprintln!("{} not found; installing with apt-get", missing.join(", "));
    system::apt_install(&missing)
}

/// Sets the variable that makes the browser test required.
pub fn apply_env(command: &mut Command) {
    command.env(REQUIRE_ENV, "1");
}
