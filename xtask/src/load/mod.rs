//! `cargo xtask load`: the HTTP service under a real load generator, against a ceiling.
//!
//! Builds, in release: the server, the ceiling (`crates/api/examples/ceiling.rs`: a
//! poem-openapi server with bearer authentication that answers a fixed 20-pet array and
//! does nothing else) and the seeder (`crates/infra/examples/seed.rs`). For each database
//! (SQLite; and PostgreSQL when `ANIMAL_STORE_TEST_POSTGRES_URL` names a server, as under
//! `cargo xtask postgres -- cargo xtask load`) and each table size (10,000 and 1,000,000
//! pets; `LOAD_SIZES=10000` for a quick run), it seeds a fresh database, starts the server
//! with an enterprise key whose quota cannot bind, warms it and the ceiling up, and runs each
//! scenario with wrk (1 thread, 32 connections, `LOAD_SECONDS` seconds, 5 by default)
//! alternately on the ceiling and on the service, `LOAD_ROUNDS` times (5 by default; keyed
//! createPet four times as many, in runs two fifths as long), so that machine noise hits
//! both, then once more with wrk on 2 threads. Every figure is the median of its rounds, and
//! also given as the median of its ratios to the ceiling of the same round; a budget of
//! `budgets.rs` missed fails the task.
//!
//! The table is printed, and written to `docs/benchmarks.md` between its load markers, with
//! a chart (`docs/load.svg`). `LOAD_SCENARIOS` (names, comma-separated, e.g.
//! `createPet,keyed createPet`) and `LOAD_BACKENDS` (`SQLite`, `PostgreSQL`) narrow a run to
//! some rows; such a run prints its table and leaves the docs alone. On Debian as root, `wrk`
//! is installed when missing.

mod budgets;
pub mod cluster;
mod receiver;
mod report;
mod scenarios;
mod wrk;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::cmd;
use crate::postgres::URL_ENV;
use crate::system::Process;

/// The key the ceiling checks.
const CEILING_KEY: &str = "as_live_ceilingkey00_0123456789abcdefghijklmnopqrstuv";

/// Keyed createPet over the adds without a key run beside it on the same server in the same
/// round (before it in one round, after it in the next): each a median of the rounds' ratios.
#[derive(Debug, Clone, Copy)]
pub struct Paired {
    /// Over createPet as the table's createPet sends it (one request, built once).
    pub plain: f64,
    /// Over the same requests as the keyed ones, built per request with a fresh
    /// `X-Load-Sequence` (ignored by the service) in the key's place.
    pub built: f64,
    /// How many rounds the medians are of.
    pub rounds: usize,
}

/// One scenario's figures, in one configuration.
pub struct Row {
    pub backend: &'static str,
    pub pets: u64,
    pub scenario: &'static str,
    /// The medians of the rounds, wrk on one thread.
    pub service: wrk::Figures,
    /// The median of the rounds' ratios to the ceiling, wrk on one thread.
    pub ratio: f64,
    /// The lowest and the highest of those ratios.
    pub spread: (f64, f64),
    /// The median of the rounds' ratios of the server's CPU a request to the ceiling's.
    pub cpu_ratio: f64,
    /// The ratio of one more round, wrk on two threads.
    pub two_threads: f64,
    /// The budgets the row misses (`budgets.rs`).
    pub missed: Vec<String>,
    /// Keyed createPet, and createPet with one endpoint: the medians of its rounds' ratios to
    /// the adds run beside it on the same server (without a key; with no endpoint enabled).
    pub paired: Option<Paired>,
    /// createPet with one endpoint only: the deliveries a second its server then made to the
    /// local receiver, with no request beside them.
    pub delivered: Option<f64>,
    /// The server's anonymous resident memory after the scenario (`RssAnon`: the pages of
    /// the database file it maps are the kernel's cache, not the service's).
    pub rss_mib: f64,
}

pub fn run(root: &Path) -> Result<()> {
    wrk::ensure()?;
    for (package, target) in [
        ("animal-store", &["--bin", "animal-store"][..]),
        ("animal-store-api", &["--example", "ceiling"][..]),
        ("animal-store-infra", &["--example", "seed"][..]),
    ] {
        cmd::header(&format!("cargo build --release -p {package} {}", target.join(" ")));
        cmd::run(cmd::cargo(root).args(["build", "--release", "-p", package]).args(target))?;
    }
    let release = root.join("target/release");
    let bins = Bins {
        server: release.join("animal-store"),
        ceiling: release.join("examples/ceiling"),
        seed: release.join("examples/seed"),
    };
    let dir = std::env::temp_dir().join(format!("animal-store-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("could not create {}", dir.display()))?;
    let (seconds, rounds) = (seconds(), rounds());
    let result = load(&bins, &dir, (seconds, rounds)).and_then(|mut rows| {
        budgets::judge(&mut rows);
        if narrowed() {
            report::print(&rows);
        } else {
            report::write(root, &rows, (seconds, rounds))?;
        }
        let missed: usize = rows.iter().map(|row| row.missed.len()).sum();
        if missed > 0 {
            bail!("{missed} budget(s) missed in this run: see the rows marked in the table");
        }
        Ok(())
    });
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// Builds the release server and returns its path.
pub fn build_server(root: &Path) -> Result<PathBuf> {
    cmd::header("cargo build --release -p animal-store --bin animal-store");
    cmd::run(
        cmd::cargo(root)
            .args(["build", "--release", "-p", "animal-store"])
            .args(["--bin", "animal-store"]),
    )?;
    Ok(root.join("target/release/animal-store"))
}

struct Bins {
    server: PathBuf,
    ceiling: PathBuf,
    seed: PathBuf,
}

/// A setting from the environment, or `default`.
pub fn setting<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The names listed by the environment variable `name`, if it is set.
fn chosen(name: &str) -> Option<Vec<String>> {
    let list = std::env::var(name).ok()?;
    Some(list.split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect())
}

/// Whether `LOAD_SCENARIOS` or `LOAD_BACKENDS` leaves some rows out.
fn narrowed() -> bool {
    chosen("LOAD_SCENARIOS").is_some() || chosen("LOAD_BACKENDS").is_some()
}

/// Whether `value` is among the names of the environment variable `name` (all are when it
/// is not set).
fn is_chosen(name: &str, value: &str) -> bool {
    chosen(name).is_none_or(|names| names.iter().any(|n| n.eq_ignore_ascii_case(value)))
}

/// How many rounds each scenario alternates the ceiling and the service: `LOAD_ROUNDS`, 5 by
/// default.
fn rounds() -> u32 {
    setting("LOAD_ROUNDS", 5).max(1)
}

/// How long each run of wrk lasts: `LOAD_SECONDS`, 5 by default.
fn seconds() -> u32 {
    setting("LOAD_SECONDS", 5).max(1)
}

fn load(bins: &Bins, dir: &Path, (seconds, rounds): (u32, u32)) -> Result<Vec<Row>> {
    let sizes: Vec<u64> = std::env::var("LOAD_SIZES")
        .unwrap_or_else(|_| "10000,1000000".to_owned())
        .split(',')
        .map(|s| s.trim().parse().context("LOAD_SIZES holds numbers"))
        .collect::<Result<_>>()?;
    let ceiling_port = crate::system::free_port()?;
    let ceiling_address = format!("127.0.0.1:{ceiling_port}");
    let ceiling_process = Process(
        Command::new(&bins.ceiling)
            .args([ceiling_address.as_str(), CEILING_KEY])
            .stdout(Stdio::null())
            .spawn()
            .context("could not start the ceiling")?,
    );
    let ceiling = Target {
        base: format!("http://{ceiling_address}"),
        auth: format!("Authorization: Bearer {CEILING_KEY}"),
        pid: ceiling_process.0.id(),
    };
    crate::system::wait_for_port(ceiling_port, Duration::from_secs(30))?;

    let mut backends: Vec<(&'static str, DatabaseUrl<'_>)> = vec![(
        "SQLite",
        Box::new(|pets| format!("sqlite://{}", dir.join(format!("load-{pets}.db")).display())),
    )];
    if let Ok(base) = std::env::var(URL_ENV) {
        let (server, _) = base.rsplit_once('/').context("a PostgreSQL URL with a database")?;
        let server = server.to_owned();
        backends.push(("PostgreSQL", Box::new(move |pets| format!("{server}/load_{pets}"))));
    }
    backends.retain(|(backend, _)| is_chosen("LOAD_BACKENDS", backend));
    // Where each server's one webhook endpoint posts: on this machine, answering at once.
    let receiver = receiver::Receiver::start()?;
    let mut rows = Vec::new();
    for (backend, url) in &backends {
        rows.extend(scenarios::configuration(
            bins,
            dir,
            backend,
            url,
            &sizes,
            (&ceiling, &receiver),
            (seconds, rounds),
        )?);
    }
    Ok(rows)
}

/// The URL of a fresh database of a backend for a table of the given size.
type DatabaseUrl<'a> = Box<dyn Fn(u64) -> String + 'a>;

/// Where wrk sends its requests, and the header that authenticates them.
struct Target {
    base: String,
    auth: String,
    /// The server's process.
    pid: u32,
}

/// A server on a seeded database of one size.
struct Instance {
    pets: u64,
    service: Target,
    scripts: wrk::Scripts,
    server: Process,
    /// The address of its one webhook endpoint, disabled but for createPet with one
    /// endpoint.
    endpoint: String,
}

/// Seeds a database of `pets` pets, issues a key whose quota cannot bind, starts a server
/// on it, and registers one webhook endpoint at `receiver`, disabled.
fn start_instance(
    bins: &Bins,
    dir: &Path,
    backend: &str,
    (database, receiver): (&str, &str),
    pets: u64,
) -> Result<Instance> {
    cmd::header(&format!("{backend}, {pets} pets: seeding"));
    cmd::run_quiet(Command::new(&bins.seed).args([database, &pets.to_string()]))?;
    let key = cmd::run_quiet(Command::new(&bins.server).args([
        "--database-url",
        database,
        "keys",
        "create",
        "--plan",
        "enterprise",
        "--per-minute",
        "4000000000",
        "--per-day",
        "4000000000",
    ]))?;
    let key = String::from_utf8(key.stdout).context("the key is not UTF-8")?.trim().to_owned();
    let own = dir.join(format!("{backend}-{pets}"));
    std::fs::create_dir_all(&own)?;
    let ready = own.join("ready.json");
    let server = Process(
        Command::new(&bins.server)
            .args(["--database-url", database, "serve", "--bind", "127.0.0.1:0"])
            .arg("--webhooks-allow-private")
            .arg("--ready-file")
            .arg(&ready)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("could not start the server")?,
    );
    let base = crate::system::wait_until_ready(&ready)?;
    let registered = call(&base, &key, reqwest::Method::POST, "/v1/webhook_endpoints", receiver)?;
    let endpoint = format!("/v1/webhook_endpoints/{}", registered["id"]);
    let service = Target { base, auth: format!("Authorization: Bearer {key}"), pid: server.0.id() };
    let instance = Instance {
        pets,
        scripts: wrk::Scripts::write(&own, pets, &key)?,
        service,
        server,
        endpoint,
    };
    instance.endpoint_enabled(false)?;
    Ok(instance)
}

impl Instance {
    /// Enables or disables the instance's webhook endpoint.
    fn endpoint_enabled(&self, enabled: bool) -> Result<()> {
        let key = self.service.auth.trim_start_matches("Authorization: Bearer ");
        let status = if enabled { "enabled" } else { "disabled" };
        let base = &self.service.base;
        call(base, key, reqwest::Method::PATCH, &self.endpoint, status).map(drop)
    }
}

/// One request to the API at `base`: a POST registers an endpoint at `value`, a PATCH sets
/// the status `value`. Returns the body.
fn call(
    base: &str,
    key: &str,
    method: reqwest::Method,
    path: &str,
    value: &str,
) -> Result<serde_json::Value> {
    let body = if method == reqwest::Method::POST {
        serde_json::json!({"url": value, "events": ["pet.created"]})
    } else {
        serde_json::json!({"status": value})
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let response = reqwest::Client::new()
            .request(method, format!("{base}{path}"))
            .bearer_auth(key)
            .json(&body)
            .send()
            .await
            .with_context(|| format!("calling {path}"))?;
        let status = response.status();
        let answer: serde_json::Value = response.json().await.unwrap_or_default();
        if !status.is_success() {
            bail!("{path} answered {status}: {answer}");
        }
        Ok(answer)
    })
}

/// The anonymous resident memory of process `pid` (`RssAnon`), in MiB.
fn resident_mib(pid: u32) -> Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kib: f64 = status
        .lines()
        .find_map(|line| line.strip_prefix("RssAnon:"))
        .and_then(|rest| rest.split_whitespace().next())
        .context("no RssAnon")?
        .parse()?;
    Ok(kib / 1024.0)
}
