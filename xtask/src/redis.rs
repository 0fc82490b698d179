//! A throwaway Redis server for tests, started from the system's `redis-server`.
//!
//! Tests that need a real Redis read its URL from [`URL_ENV`]; [`REQUIRE_ENV`] tells them to
//! fail rather than skip when it is missing. The server listens on a free port on 127.0.0.1
//! only, keeps nothing on disk (`--save ''`, no append-only file) and lives in a fresh
//! temporary directory; [`Redis`] stops it and deletes the directory when dropped.

use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::system;

/// Environment variable holding the test Redis URL.
pub const URL_ENV: &str = "ANIMAL_STORE_TEST_REDIS_URL";
/// Environment variable that makes Redis-backed tests mandatory.
pub const REQUIRE_ENV: &str = "ANIMAL_STORE_REQUIRE_REDIS";

/// Where Debian's `redis-server` package installs the server.
const SERVER: &str = "/usr/bin/redis-server";
/// How long to wait for the server to accept connections: 100 × 50 ms.
const CONNECT_ATTEMPTS: u32 = 100;
const CONNECT_INTERVAL: Duration = Duration::from_millis(50);

/// A running throwaway server; dropping it stops the server and deletes its files.
pub struct Redis {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Redis {
    /// Finds (or on Debian as root, installs) `redis-server`, then starts and checks it.
    pub fn start() -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("animal-store-redis-")
            .tempdir()
            .context("could not create a temporary directory for Redis")?;
        let port = system::free_port()?;
        let redis = Self { child: spawn(port, dir.path())?, port, dir };
        redis.wait_until_reachable()?;
        eprintln!("Redis ready at {} (files in {})", redis.url(), redis.dir.path().display());
        Ok(redis)
    }

    /// Kills the server, as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts the server again on its port, empty, after [`Self::kill`].
    pub fn restart(&mut self) -> Result<()> {
        self.kill();
        self.child = spawn(self.port, self.dir.path())?;
        self.wait_until_reachable()
    }

    /// Runs one command with `redis-cli` (`CLIENT PAUSE 5000`, `CONFIG SET ...`).
    pub fn cli(&self, args: &[&str]) -> Result<String> {
        let out = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(args)
            .output()
            .context("could not run redis-cli")?;
        let answer = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if !out.status.success() || answer.starts_with("ERR") {
            bail!("redis-cli {}: {answer}", args.join(" "));
        }
        Ok(answer)
    }

    /// The server's URL.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Points a command (usually a test run) at this server.
    pub fn apply_env(&self, command: &mut Command) {
        command.env(URL_ENV, self.url()).env(REQUIRE_ENV, "1");
    }

    fn wait_until_reachable(&self) -> Result<()> {
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        for _ in 0..CONNECT_ATTEMPTS {
            if TcpStream::connect_timeout(&address, CONNECT_INTERVAL).is_ok() {
                return Ok(());
            }
            thread::sleep(CONNECT_INTERVAL);
        }
        bail!("Redis did not accept connections on {address} within 5 s")
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        eprintln!("stopping Redis at 127.0.0.1:{}", self.port);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A throwaway `redis-server` on `port`, keeping its files in `dir`.
fn spawn(port: u16, dir: &std::path::Path) -> Result<Child> {
    let server = find_or_install()?;
    Command::new(&server)
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", ""])
        .args(["--appendonly", "no", "--daemonize", "no", "--protected-mode", "yes"])
        .arg("--dir")
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .with_context(|| format!("could not start {}", server.display()))
}

/// `redis-server` on the `PATH` or where Debian puts it; on Debian as root, installs the
/// `redis-server` package first if there is none.
fn find_or_install() -> Result<PathBuf> {
    if let Some(found) = find() {
        return Ok(found);
    }
    let as_root = system::is_root().context("could not tell whether we run as root")?;
    if !(as_root && system::is_debian()) {
        bail!("redis-server not found; install it with: sudo apt-get install -y redis-server");
    }
    eprintln!("redis-server not found; installing it with apt-get");
    system::apt_install(&["redis-server"])?;
    // The package starts a system-wide server on port 6379; the tests never use it.
    find().context("installed redis-server, but found no redis-server binary")
}

fn find() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths).map(|dir| dir.join("redis-server")).find(|p| p.is_file())
    });
    on_path.or_else(|| Some(PathBuf::from(SERVER)).filter(|p| p.is_file()))
}
