//! Starting the server and running its commands.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use animal_store_infra::testing::databases::{SqliteFile, fresh_postgres_url};

pub const BIN: &str = env!("CARGO_BIN_EXE_animal-store");

/// A fresh database for one test: an SQLite file in a temporary directory, or a fresh
/// PostgreSQL database when asked for and available.
pub struct Db {
    pub dir: tempfile::TempDir,
    pub url: String,
}

impl Db {
    pub fn sqlite() -> Self {
        let SqliteFile { dir, url } = SqliteFile::new();
        Self { dir, url }
    }

    /// A fresh PostgreSQL database, or `None` when no server is configured (see
    /// `cargo xtask ci`).
    pub async fn postgres() -> Option<Self> {
        let url = fresh_postgres_url().await?;
        Some(Self { dir: tempfile::tempdir().expect("a temporary directory"), url })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Runs a command of the binary against this database.
    pub fn run(&self, args: &[&str]) -> Output {
        Command::new(BIN)
            .args(args)
            // Only what the test sets: no ANIMAL_STORE_* of the caller's shell.
            .env_clear()
            .env("DATABASE_URL", &self.url)
            .current_dir(self.path())
            .output()
            .expect("the binary runs")
    }

    /// Issues a key on `plan` and returns it.
    pub fn key(&self, plan: &str) -> String {
        let out = self.run(&["keys", "create", "--plan", plan]);
        assert!(out.status.success(), "keys create: {}", String::from_utf8_lossy(&out.stderr));
        let key = String::from_utf8(out.stdout).expect("utf-8").trim().to_owned();
        assert!(key.starts_with("as_live_"), "{key}");
        key
    }

    /// Issues an enterprise key whose quotas no test reaches, for tests that write hard.
    pub fn unlimited_key(&self) -> String {
        let out = self.run(&[
            "keys",
            "create",
            "--plan",
            "enterprise",
            "--per-minute",
            "1000000",
            "--per-day",
            "100000000",
        ]);
        assert!(out.status.success(), "keys create: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).expect("utf-8").trim().to_owned()
    }

    pub fn start(&self) -> Server {
        Server::start(&self.url, self.path().to_path_buf(), &[])
    }

    /// Starts a server whose clock is the returned file: tests set the time by writing Unix
    /// seconds into it, and never wait for a window to pass.
    pub fn start_at(&self, unix_seconds: u64) -> (Server, TestClock) {
        let clock = TestClock::at(self.path(), unix_seconds);
        (Server::start(&self.url, self.path().to_path_buf(), &clock.flag()), clock)
    }
}

/// The time a server started with [`Db::start_at`] reads.
pub struct TestClock(PathBuf);

impl TestClock {
    /// A clock file in `dir`, set to `unix_seconds`.
    pub fn at(dir: &Path, unix_seconds: u64) -> Self {
        let clock = Self(dir.join("clock"));
        clock.set(unix_seconds);
        clock
    }

    /// The flag that gives a server this clock.
    pub fn flag(&self) -> [&str; 2] {
        ["--clock-file", self.0.to_str().expect("a UTF-8 path")]
    }

    pub fn set(&self, unix_seconds: u64) {
        let tmp = self.0.with_extension("tmp");
        std::fs::write(&tmp, unix_seconds.to_string()).expect("write the clock");
        // Renamed into place, so the server never reads a half-written time.
        std::fs::rename(&tmp, &self.0).expect("move the clock");
    }
}

/// What runs the server: itself, or a shell that first limits its file descriptors or
/// gives it an `/etc/hosts` of its own.
enum Wrap {
    None,
    Descriptors(u32),
    Hosts(PathBuf),
}

/// Whether this machine lets a test give a server an `/etc/hosts` of its own (a mount
/// namespace: root, with `unshare` and `mount`).
pub fn private_hosts_supported() -> bool {
    Command::new("unshare")
        .args([
            "--mount",
            "--propagation",
            "private",
            "mount",
            "--bind",
            "/etc/hosts",
            "/etc/hosts",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// A running server.
pub struct Server {
    child: Child,
    pub base: String,
    /// The server's ready file: its address and the keys issued for the run.
    pub ready: serde_json::Value,
    /// Every line the server has written to stderr so far, read by a thread of its own.
    stderr: Arc<Mutex<Vec<String>>>,
    /// Where the server writes its port: apart from the database's directory, which tests
    /// inspect.
    _port_dir: tempfile::TempDir,
}

impl Server {
    /// Starts `animal-store serve` on a free port of 127.0.0.1 and waits until it listens:
    /// until it has written its `--ready-file`.
    pub fn start(database_url: &str, dir: PathBuf, extra: &[&str]) -> Self {
        Self::start_logging(database_url, dir, extra, "info")
    }

    /// [`Server::start`] with `RUST_LOG` set to `log`.
    pub fn start_logging(database_url: &str, dir: PathBuf, extra: &[&str], log: &str) -> Self {
        Self::start_with(database_url, dir, extra, log, Wrap::None)
    }

    /// [`Server::start`] in a mount namespace of its own in which `/etc/hosts` is the file
    /// `hosts`: the names the server resolves are those the test writes there, and change
    /// when it rewrites the file in place. Needs root (see [`private_hosts_supported`]).
    pub fn start_with_hosts(
        database_url: &str,
        dir: PathBuf,
        extra: &[&str],
        hosts: &Path,
    ) -> Self {
        Self::start_with(database_url, dir, extra, "info", Wrap::Hosts(hosts.to_path_buf()))
    }

    /// [`Server::start`] in a process whose limit on open file descriptors is `limit`
    /// (`ulimit -n`, soft and hard).
    pub fn start_with_descriptors(
        database_url: &str,
        dir: PathBuf,
        extra: &[&str],
        limit: u32,
    ) -> Self {
        Self::start_with(database_url, dir, extra, "info", Wrap::Descriptors(limit))
    }

    #[allow(clippy::zombie_processes, reason = "Drop kills and waits for the server")]
    fn start_with(database_url: &str, dir: PathBuf, extra: &[&str], log: &str, wrap: Wrap) -> Self {
        let port_dir = tempfile::tempdir().expect("a temporary directory");
        let ready_file = port_dir.path().join("ready.json");
        // A shell execs the server, which keeps its pid.
        let mut command = match wrap {
            Wrap::None => Command::new(BIN),
            Wrap::Descriptors(limit) => {
                let mut shell = Command::new("sh");
                shell.args(["-c", &format!("ulimit -n {limit} && exec \"$0\" \"$@\""), BIN]);
                shell
            }
            Wrap::Hosts(hosts) => {
                let mut shell = Command::new("unshare");
                let script = "mount --bind \"$1\" /etc/hosts && shift && exec \"$0\" \"$@\"";
                shell.args(["--mount", "--propagation", "private", "sh", "-c", script, BIN]);
                shell.arg(hosts);
                shell
            }
        };
        let mut child = command
            .args(["serve", "--bind", "127.0.0.1:0", "--ready-file"])
            .arg(&ready_file)
            .args(extra)
            .env_clear()
            .env("DATABASE_URL", database_url)
            .env("RUST_LOG", log)
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the server starts");
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let (lines, pipe) = (stderr.clone(), child.stderr.take().expect("stderr"));
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                lines.lock().expect("lock").push(line);
            }
        });
        for _ in 0..600 {
            if let Ok(text) = std::fs::read_to_string(&ready_file) {
                let ready: serde_json::Value = serde_json::from_str(&text).expect("JSON");
                let base = ready["address"].as_str().expect("an address").to_owned();
                return Self { child, base, ready, stderr, _port_dir: port_dir };
            }
            if let Some(status) = child.try_wait().expect("try_wait") {
                std::thread::sleep(Duration::from_millis(100));
                panic!("the server exited ({status}): {:#?}", stderr.lock().expect("lock"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the server did not listen within 30 s: {:#?}", stderr.lock().expect("lock"));
    }

    /// The first line of stderr that `find` accepts, waiting up to 5 s for it.
    pub fn stderr_line<T>(&self, find: impl Fn(&str) -> Option<T>) -> T {
        for _ in 0..100 {
            if let Some(found) = self.stderr.lock().expect("lock").iter().find_map(|l| find(l)) {
                return found;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("no such line on stderr: {:#?}", self.stderr.lock().expect("lock"));
    }

    /// Whether a line of stderr so far contains `text`.
    pub fn stderr_contains(&self, text: &str) -> bool {
        self.stderr_count(text) > 0
    }

    /// How many lines of stderr so far contain `text`.
    pub fn stderr_count(&self, text: &str) -> usize {
        self.stderr.lock().expect("lock").iter().filter(|line| line.contains(text)).count()
    }

    /// How many bytes the server has written to stderr so far, each line with its newline.
    pub fn stderr_bytes(&self) -> usize {
        self.stderr.lock().expect("lock").iter().map(|line| line.len() + 1).sum()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the server at once, as a power cut would.
    pub fn kill(mut self) {
        self.child.kill().expect("kill");
        self.child.wait().expect("wait");
    }

    /// Asks the server to stop (SIGTERM) and waits for it; returns whether it exited 0.
    pub fn stop(self) -> bool {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill -TERM");
        assert!(status.success());
        self.wait()
    }

    /// Waits for the server to exit by itself (after a signal the test sent), at most 15 s;
    /// returns whether it exited 0.
    pub fn wait(mut self) -> bool {
        for _ in 0..300 {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the server did not stop within 15 s of SIGTERM");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client with the key.
pub struct Client {
    http: reqwest::Client,
    key: String,
}

impl Client {
    pub fn new(key: &str) -> Self {
        Self { http: reqwest::Client::new(), key: key.to_owned() }
    }

    pub async fn get(&self, url: &str) -> reqwest::Response {
        self.http.get(url).bearer_auth(&self.key).send().await.expect("a response")
    }

    pub async fn post(&self, url: &str, body: &str) -> reqwest::Response {
        self.http
            .post(url)
            .bearer_auth(&self.key)
            .header("content-type", "application/json")
            .body(body.to_owned())
            .send()
            .await
            .expect("a response")
    }

    /// A POST of JSON with an `Idempotency-Key`.
    pub async fn post_keyed(
        &self,
        url: &str,
        body: &str,
        idempotency_key: &str,
    ) -> reqwest::Response {
        self.http
            .post(url)
            .bearer_auth(&self.key)
            .header("content-type", "application/json")
            .header("idempotency-key", idempotency_key)
            .body(body.to_owned())
            .send()
            .await
            .expect("a response")
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn raw(&self) -> &reqwest::Client {
        &self.http
    }
}

pub async fn json(resp: reqwest::Response) -> serde_json::Value {
    resp.json().await.expect("a JSON body")
}

/// Every pet the server lists, by id, following the `Link` header from page to page.
pub async fn list_all(
    client: &Client,
    server: &Server,
) -> std::collections::BTreeMap<i64, serde_json::Value> {
    let mut stored = std::collections::BTreeMap::new();
    let mut uri = server.url("/v1/pets?limit=100");
    for _ in 0..10_000 {
        let resp = client.get(&uri).await;
        assert_eq!(resp.status(), 200, "listing {uri}");
        let link = resp.headers().get("link").and_then(|v| v.to_str().ok()).map(str::to_owned);
        for pet in json(resp).await.as_array().expect("an array") {
            stored.insert(pet["id"].as_i64().expect("an id"), pet.clone());
        }
        match link {
            Some(link) => {
                uri = server.url(link.trim_start_matches('<').split('>').next().expect("a target"));
            }
            None => return stored,
        }
    }
    panic!("more than 10,000 pages");
}
