//! A throwaway PostgreSQL server for tests, started from the system's server binaries.
//!
//! Tests that need a real PostgreSQL read its URL from [`URL_ENV`]; [`REQUIRE_ENV`]
//! tells them to fail rather than skip when it is missing, so CI cannot silently
//! pass without ever touching PostgreSQL.
//!
//! The server lives in a fresh temporary directory, listens on a free port on
//! 127.0.0.1 only, trusts every local connection, and skips fsync: it is fast and
//! isolated, and must never hold data anyone cares about. [`Postgres`] stops it and
//! deletes the directory when dropped. If xtask is killed before that can happen
//! (e.g. Ctrl-C: `pg_ctl` detaches the server from the terminal, so it survives),
//! the next start reaps the leftovers (see [`reap_stale`]).

mod binaries;

use std::fs;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};

use crate::{cmd, system};
use binaries::find_or_install_binaries;

/// Environment variable holding the test database URL.
pub const URL_ENV: &str = "ANIMAL_STORE_TEST_POSTGRES_URL";
/// Environment variable that makes PostgreSQL-backed tests mandatory.
pub const REQUIRE_ENV: &str = "ANIMAL_STORE_REQUIRE_POSTGRES";

/// Database superuser created by `initdb`; it needs no password (`--auth=trust`).
const SUPERUSER: &str = "animal";
/// The OS user that owns the cluster when we run as root: PostgreSQL refuses to
/// run as root, and Debian's `postgresql` package creates this user.
const OS_USER: &str = "postgres";
/// Prefix of our temporary directories, also how [`reap_stale`] recognises them.
const DIR_PREFIX: &str = "animal-store-pg-";
/// How long to keep trying to reach the server over TCP after `pg_ctl` says it is
/// up: 50 × 100 ms.
const CONNECT_ATTEMPTS: u32 = 50;
const CONNECT_INTERVAL: Duration = Duration::from_millis(100);

/// A running throwaway server; dropping it stops the server and deletes its files.
pub struct Postgres {
    bin: PathBuf,
    as_root: bool,
    data: PathBuf,
    port: u16,
    // Fields drop after `Postgres::drop` has stopped the server, so the files are
    // never deleted from under a running server.
    dir: TempDir,
}

impl Postgres {
    /// Finds (or on Debian as root, installs) the server binaries, then creates,
    /// starts and checks a fresh cluster.
    pub fn start() -> Result<Self> {
        Self::start_in(&std::env::temp_dir())
    }

    /// [`Self::start`], with the cluster's files in a new directory under `parent` (a
    /// small file system, for a fault run that fills it).
    pub fn start_in(parent: &Path) -> Result<Self> {
        let as_root = system::is_root().context("could not tell whether we run as root")?;
        let (version, bin) = find_or_install_binaries(as_root)?;
        reap_stale(&bin, as_root);

        let dir = TempDir::create_in(parent)?;
        let data = dir.path().join("data");
        fs::create_dir(&data).with_context(|| format!("could not create {}", data.display()))?;
        if as_root {
            let mut chown = Command::new("chown");
            chown.arg("-R").arg(format!("{OS_USER}:{OS_USER}")).arg(dir.path());
            cmd::run_quiet(&mut chown).with_context(|| {
                format!("could not hand {} to the `{OS_USER}` OS user", dir.path().display())
            })?;
        }
        let port = system::free_port()?;

        // From here on, dropping `server` cleans up whatever was started.
        let server = Self { bin, as_root, data, port, dir };
        server.init_db()?;
        server.start_server()?;
        server.wait_until_reachable()?;
        eprintln!(
            "PostgreSQL {version} ready at {} (files in {})",
            server.url(),
            server.dir.path().display()
        );
        Ok(server)
    }

    /// The connection URL for the superuser's default database.
    pub fn url(&self) -> String {
        format!("postgres://{SUPERUSER}@127.0.0.1:{}/postgres", self.port)
    }

    /// Points a command (usually a test run) at this server.
    pub fn apply_env(&self, command: &mut Command) {
        command.env(URL_ENV, self.url()).env(REQUIRE_ENV, "1");
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops the server at once, as a crash or an operator's stop would, connections and all.
    pub fn stop_now(&self) -> Result<()> {
        let mut stop = pg_tool(&self.bin, "pg_ctl", self.as_root, self.dir.path());
        stop.arg("-D").arg(&self.data).args(["-m", "immediate", "-w", "stop"]);
        cmd::run_quiet(&mut stop).context("pg_ctl stop failed")?;
        Ok(())
    }

    /// Starts the server again after [`Self::stop_now`], or after it stopped by itself,
    /// unless it runs.
    pub fn start_again(&self) -> Result<()> {
        let mut status = pg_tool(&self.bin, "pg_ctl", self.as_root, self.dir.path());
        status.arg("-D").arg(&self.data).arg("status");
        if cmd::run_quiet(&mut status).is_ok() {
            return Ok(());
        }
        self.start_server()?;
        self.wait_until_reachable()
    }

    /// Runs one SQL statement with `psql` on `database`, as the superuser.
    pub fn psql(&self, database: &str, sql: &str) -> Result<String> {
        let mut psql = Command::new(self.bin.join("psql"));
        psql.args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", SUPERUSER])
            .args(["-d", database, "-X", "-q", "-t", "-A", "-c", sql]);
        let out = cmd::run_quiet(&mut psql).with_context(|| format!("psql: {sql}"))?;
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    fn init_db(&self) -> Result<()> {
        let mut init_db = pg_tool(&self.bin, "initdb", self.as_root, self.dir.path());
        init_db.arg("-D").arg(&self.data).args([
            "-U",
            SUPERUSER,
            "--auth=trust",
            "--encoding=UTF8",
            "--no-sync",
        ]);
        // initdb is chatty when it works; its output only matters when it fails.
        cmd::run_quiet(&mut init_db).context("initdb failed")?;
        Ok(())
    }

    fn start_server(&self) -> Result<()> {
        let dir = self.dir.path();
        // pg_ctl hands `-o` to a shell, so the socket directory must be quoted.
        let socket_dir = shell_quote(&dir.to_string_lossy())?;
        let options =
            format!("-p {} -k {socket_dir} -c listen_addresses=127.0.0.1 -c fsync=off", self.port);
        let mut start = pg_tool(&self.bin, "pg_ctl", self.as_root, dir);
        start
            .arg("-D")
            .arg(&self.data)
            .arg("-l")
            .arg(self.log_path())
            .arg("-o")
            .arg(options)
            .args(["-w", "-t", "60", "start"]);
        let result = cmd::run_quiet(&mut start);
        if result.is_err() {
            self.print_log();
        }
        result.context("pg_ctl start failed")?;
        Ok(())
    }

    /// `pg_ctl -w` already waited for the server, but only over the Unix socket;
    /// tests connect over TCP, so check that path too.
    fn wait_until_reachable(&self) -> Result<()> {
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        let mut last_error = None;
        for _ in 0..CONNECT_ATTEMPTS {
            match TcpStream::connect_timeout(&address, CONNECT_INTERVAL) {
                Ok(_) => return Ok(()),
                Err(err) => last_error = Some(err),
            }
            thread::sleep(CONNECT_INTERVAL);
        }
        self.print_log();
        let waited = CONNECT_INTERVAL * CONNECT_ATTEMPTS;
        match last_error {
            Some(err) => Err(err).with_context(|| {
                format!("PostgreSQL did not accept TCP connections on {address} within {waited:?}")
            }),
            None => bail!("PostgreSQL did not accept TCP connections on {address}"),
        }
    }

    fn stop(&self) -> Result<()> {
        let mut stop = pg_tool(&self.bin, "pg_ctl", self.as_root, self.dir.path());
        stop.arg("-D").arg(&self.data).args(["-m", "fast", "-w", "stop"]);
        cmd::run_quiet(&mut stop).context("pg_ctl stop failed")?;
        Ok(())
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("postgres.log")
    }

    fn print_log(&self) {
        let path = self.log_path();
        match fs::read_to_string(&path) {
            Ok(log) => eprintln!("--- {} ---\n{log}--- end of server log ---", path.display()),
            Err(err) => eprintln!("(could not read server log {}: {err})", path.display()),
        }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // No pid file means the server never started (or already stopped), and
        // pg_ctl would only complain.
        if !self.data.join("postmaster.pid").exists() {
            return;
        }
        eprintln!("stopping PostgreSQL at 127.0.0.1:{}", self.port);
        if let Err(err) = self.stop() {
            cmd::print_error("warning", &err);
            // Deleting the files of a server that may still run would leave an
            // unkillable-by-pg_ctl orphan on the port, so keep them for a human.
            eprintln!(
                "warning: leaving {} in place; stop the server with `pg_ctl -D {} stop`",
                self.dir.path().display(),
                self.data.display()
            );
            self.dir.keep();
        }
    }
}

/// A uniquely named directory under the system temp dir, deleted on drop.
struct TempDir {
    path: PathBuf,
    keep: bool,
}

impl TempDir {
    fn create_in(parent: &Path) -> Result<Self> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .context("system clock is before 1970")?
            .as_nanos();
        // The pid lets `reap_stale` tell whether the owner is still alive.
        let name = format!("{DIR_PREFIX}{}-{nanos}", std::process::id());
        let path = parent.join(name);
        // `create_dir`, not `create_dir_all`: failing on an existing path
        // guarantees nobody else's files end up in (and deleted with) our cluster.
        fs::create_dir(&path)
            .with_context(|| format!("could not create temporary directory {}", path.display()))?;
        Ok(Self { path, keep: false })
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn keep(&mut self) {
        self.keep = true;
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        if let Err(err) = fs::remove_dir_all(&self.path) {
            eprintln!("warning: could not remove {}: {err}", self.path.display());
        }
    }
}

/// A PostgreSQL tool, run as the `postgres` OS user when we are root (the server
/// and initdb refuse to run as root).
///
/// It runs in `cwd` because after `runuser` our own working directory may not be
/// readable by that user, which makes initdb fail.
fn pg_tool(bin: &Path, tool: &str, as_root: bool, cwd: &Path) -> Command {
    let program = bin.join(tool);
    let mut command = if as_root {
        let mut runuser = Command::new("runuser");
        runuser.args(["-u", OS_USER, "--"]).arg(program);
        runuser
    } else {
        Command::new(program)
    };
    command.current_dir(cwd);
    command
}

/// Single-quotes a string for `sh`, the only quoting `pg_ctl`'s `-o` goes through.
fn shell_quote(text: &str) -> Result<String> {
    if text.contains('\'') {
        bail!(
            "cannot use a path containing a single quote as PostgreSQL's socket directory: {text}"
        );
    }
    Ok(format!("'{text}'"))
}

/// Stops servers and deletes directories left behind by xtask runs that were
/// killed before their cleanup ran. Best effort: problems are only reported.
///
/// A directory is stale when the process named in it no longer exists; that needs
/// procfs, so without it nothing is reaped.
fn reap_stale(bin: &Path, as_root: bool) {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return;
    }
    let temp = std::env::temp_dir();
    let Ok(entries) = fs::read_dir(&temp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(DIR_PREFIX)
            .and_then(|rest| rest.split('-').next())
            .filter(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        if proc.join(pid).exists() {
            continue;
        }
        let dir = entry.path();
        let data = dir.join("data");
        if data.join("postmaster.pid").exists() {
            // Nothing worth a clean shutdown in a throwaway cluster.
            let mut stop = pg_tool(bin, "pg_ctl", as_root, &dir);
            stop.arg("-D").arg(&data).args(["-m", "immediate", "-w", "stop"]);
            if let Err(err) = cmd::run_quiet(&mut stop) {
                let err =
                    err.context(format!("could not stop stale PostgreSQL in {}", dir.display()));
                cmd::print_error("warning", &err);
                continue;
            }
        }
        match fs::remove_dir_all(&dir) {
            Ok(()) => eprintln!("removed stale throwaway PostgreSQL {}", dir.display()),
            Err(err) => eprintln!("warning: could not remove {}: {err}", dir.display()),
        }
    }
}
