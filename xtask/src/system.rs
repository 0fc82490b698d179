//! What the tasks need of the machine: whether they run as root on Debian, installing a
//! Debian package when a tool is missing, a free port on loopback, waiting for a port, and
//! child processes that stop when dropped.

use std::fs;
use std::net::{Ipv4Addr, TcpListener};
use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

use anyhow::{Context, Result, bail};

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

/// Installs Debian packages with `apt-get`, after updating the package lists.
pub fn apt_install(packages: &[&str]) -> Result<()> {
    let mut update = Command::new("apt-get");
    update.arg("update");
    cmd::header(&cmd::describe(&update));
    cmd::run(&mut update).context("could not update the apt package lists")?;

    let mut install = Command::new("apt-get");
    install.env("DEBIAN_FRONTEND", "noninteractive").args([
        "install",
        "-y",
        "--no-install-recommends",
    ]);
    install.args(packages);
    cmd::header(&format!("DEBIAN_FRONTEND=noninteractive {}", cmd::describe(&install)));
    cmd::run(&mut install).with_context(|| format!("could not install {}", packages.join(", ")))
}

/// Asks the OS for a currently free port. Another process could grab it before
/// PostgreSQL binds it, but that race is rare and fails loudly at start.
pub fn free_port() -> Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .context("could not bind 127.0.0.1:0 to find a free port")?;
    let port = listener.local_addr().context("could not read the bound port")?.port();
    Ok(port)
}

/// A child process, stopped when dropped: SIGTERM, so that nginx takes its workers down and
/// a server closes its database, then SIGKILL after 5 s.
pub struct Process(pub Child);

impl Drop for Process {
    fn drop(&mut self) {
        // Already stopped and waited for: nothing to signal.
        if matches!(self.0.try_wait(), Ok(Some(_))) {
            return;
        }
        let _ = Command::new("kill").args(["-TERM", &self.0.id().to_string()]).status();
        for _ in 0..100 {
            if matches!(self.0.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until something accepts connections on `port` of 127.0.0.1, at most `limit`.
pub fn wait_for_port(port: u16, limit: Duration) -> Result<()> {
    let step = Duration::from_millis(50);
    let started = std::time::Instant::now();
    while started.elapsed() < limit {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(step);
    }
    bail!("nothing listened on port {port} within {limit:?}")
}

/// The test build of the server (`target/debug/animal-store`) on `memory://` with `fixtures`,
/// in a directory of its own, once it listens on a free port of 127.0.0.1; stopped when
/// dropped.
pub struct MemoryServer {
    /// Its address, `http://127.0.0.1:PORT`.
    pub base: String,
    /// Its ready file: the address and the run's keys.
    pub ready: serde_json::Value,
    _process: Process,
    _dir: tempfile::TempDir,
}

impl MemoryServer {
    /// Starts it and waits for its ready file.
    pub fn start(root: &Path, fixtures: &str) -> Result<Self> {
        let server = root.join("target/debug/animal-store");
        let dir = tempfile::tempdir()?;
        let fixtures_file = dir.path().join("fixtures.json");
        fs::write(&fixtures_file, fixtures)?;
        let ready_file = dir.path().join("ready.json");
        let process = Process(
            Command::new(&server)
                .args(["--database-url", "memory://", "serve", "--bind", "127.0.0.1:0"])
                .arg("--fixtures")
                .arg(&fixtures_file)
                .arg("--ready-file")
                .arg(&ready_file)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .with_context(|| format!("could not start {}", server.display()))?,
        );
        let base = wait_until_ready(&ready_file)?;
        let ready = serde_json::from_str(&fs::read_to_string(&ready_file)?)?;
        Ok(Self { base, ready, _process: process, _dir: dir })
    }

    /// The key the ready file names `name`.
    pub fn key(&self, name: &str) -> Result<String> {
        self.ready["keys"][name]
            .as_str()
            .map(str::to_owned)
            .with_context(|| format!("no key {name}"))
    }
}

/// Waits for a server's `--ready-file`, up to 60 s, and returns the address it listens on.
pub fn wait_until_ready(ready_file: &Path) -> Result<String> {
    for _ in 0..600 {
        if let Ok(text) = std::fs::read_to_string(ready_file) {
            let ready: serde_json::Value =
                serde_json::from_str(&text).context("the ready file is not JSON")?;
            return ready["address"]
                .as_str()
                .map(str::to_owned)
                .context("the ready file has no address");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    bail!("the server did not listen within 60 s")
}
