//! What the tasks need of the machine: whether they run as root on Debian, installing a
//! Debian package when a tool is missing, a free port on loopback.

use std::fs;
use std::net::{Ipv4Addr, TcpListener};
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result};

use crate::cmd;

/// Whether the effective uid is 0, read from `/proc/self/status` (no libc needed),
/// falling back to `id -u` where there is no procfs.
pub fn is_root() -> Result<bool> {
    if let Ok(status) = fs::read_to_string("/proc/self/status") {
        // Format: `Uid:\t<real>\t<effective>\t<saved>\t<filesystem>`.
        let effective = status
            .lines()
            .find_map(|line| line.strip_prefix("Uid:"))
            .and_then(|uids| uids.split_whitespace().nth(1))
            .context("no effective uid in /proc/self/status")?;
        return Ok(effective == "0");
    }
    let output = cmd::run_quiet(Command::new("id").arg("-u"))?;
    Ok(String::from_utf8_lossy(&output.stdout).trim() == "0")
}

/// Whether this is Debian (or a derivative), whose packages the tasks install.
pub fn is_debian() -> bool {
    Path::new("/etc/debian_version").exists()
}

/// Installs a Debian package with `apt-get`, after updating the package lists.
pub fn apt_install(package: &str) -> Result<()> {
    let mut update = Command::new("apt-get");
    update.arg("update");
    cmd::header(&cmd::describe(&update));
    cmd::run(&mut update).context("could not update the apt package lists")?;

    let mut install = Command::new("apt-get");
    install.env("DEBIAN_FRONTEND", "noninteractive").args([
        "install",
        "-y",
        "--no-install-recommends",
        package,
    ]);
    cmd::header(&format!("DEBIAN_FRONTEND=noninteractive {}", cmd::describe(&install)));
    cmd::run(&mut install).with_context(|| format!("could not install the {package} package"))
}

/// Asks the OS for a currently free port. Another process could grab it before
/// PostgreSQL binds it, but that race is rare and fails loudly at start.
pub fn free_port() -> Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .context("could not bind 127.0.0.1:0 to find a free port")?;
    let port = listener.local_addr().context("could not read the bound port")?.port();
    Ok(port)
}
