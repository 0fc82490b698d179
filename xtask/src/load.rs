//! `cargo xtask load`: the HTTP service under a real load generator.
//!
//! Builds the release binary, starts it on a fresh SQLite file on a free loopback port,
//! issues an enterprise key whose quota cannot bind, adds 1,000 animals, then runs `wrk`
//! (two threads, 32 connections, 10 s each) against four requests: the liveness probe, a page
//! of 20 animals, a page filtered by status, and adding an animal (durable writes,
//! group-committed). A second server on the same file runs with `--metrics false`, and the
//! page and the write are measured on both, alternately (on, off, then off, on), so that the cost
//! of the metrics shows as a ratio within one run. wrk's reports are printed as they are,
//! then a summary. On Debian as root, `wrk` is installed when missing.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::{cmd, system};

/// How long each scenario runs.
const DURATION: &str = "10s";

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn run(root: &Path) -> Result<()> {
    ensure_wrk()?;
    cmd::header("cargo build --release -p animal-store");
    cmd::run(cmd::cargo(root).args(["build", "--release", "-p", "animal-store"]))?;
    let bin = root.join("target/release/animal-store");
    let dir = std::env::temp_dir().join(format!("animal-store-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("could not create {}", dir.display()))?;
    let result = load(&bin, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn load(bin: &Path, dir: &Path) -> Result<()> {
    let database = format!("sqlite://{}", dir.join("load.db").display());
    let key_output = cmd::run_quiet(Command::new(bin).args([
        "--database-url",
        &database,
        "keys",
        "create",
        "--plan",
        "enterprise",
        "--per-minute",
        "4000000000",
        "--per-day",
        "4000000000",
    ]))?;
    let key =
        String::from_utf8(key_output.stdout).context("the key is not UTF-8")?.trim().to_owned();

    let (server, base) = start(bin, &database, &dir.join("ready.json"), &[])?;
    let (unmeasured, unmeasured_base) =
        start(bin, &database, &dir.join("ready-off.json"), &["--metrics", "false"])?;

    let auth = format!("Authorization: Bearer {key}");
    let post = dir.join("post.lua");
    std::fs::write(
        &post,
        "wrk.method = \"POST\"\nwrk.headers[\"Content-Type\"] = \"application/json\"\n\
         wrk.body = '{\"name\":\"Load test\",\"categoryId\":7,\"status\":\"pending\"}'\n",
    )
    .context("could not write the wrk script")?;

    cmd::header("adding 1,000 animals");
    let seed = dir.join("seed.lua");
    std::fs::write(&seed, std::fs::read_to_string(&post)?)?;
    wrk(&["-t1", "-c10", "-d2s", "-s", path(&seed)?, "-H", &auth, &format!("{base}/v1/pets")])?;

    let list = "/v1/pets?limit=20";
    // Both servers warm (connections open, pages cached) before anything is measured: the
    // first run on a cold server is slower, whichever it is.
    cmd::header("warming both servers up");
    for base in [&base, &unmeasured_base] {
        wrk(&["-t2", "-c32", "-d3s", "-H", &auth, &format!("{base}{list}")])?;
    }
    let mut figures = Vec::new();
    for (title, base, target, script) in [
        // What load balancers call most: it must cost less than any API call.
        ("GET /livez", &base, "/livez", None),
        ("GET /v1/pets?limit=20", &base, list, None),
        ("GET /v1/pets?limit=20, metrics off", &unmeasured_base, list, None),
        ("GET /v1/pets?status=pending&limit=20", &base, "/v1/pets?status=pending&limit=20", None),
        ("POST /v1/pets", &base, "/v1/pets", Some(&post)),
        ("POST /v1/pets, metrics off", &unmeasured_base, "/v1/pets", Some(&post)),
        // The second round in the other order (ABBA): a drift of the machine over the run
        // weighs on both sides alike.
        ("GET /v1/pets?limit=20, metrics off (again)", &unmeasured_base, list, None),
        ("GET /v1/pets?limit=20 (again)", &base, list, None),
        ("POST /v1/pets, metrics off (again)", &unmeasured_base, "/v1/pets", Some(&post)),
        ("POST /v1/pets (again)", &base, "/v1/pets", Some(&post)),
    ] {
        cmd::header(title);
        let url = format!("{base}{target}");
        let mut args = vec!["-t2", "-c32", "-d", DURATION, "--latency", "-H", &auth];
        if let Some(script) = script {
            args.extend(["-s", path(script)?]);
        }
        args.push(&url);
        let report = wrk(&args)?;
        print!("{report}");
        figures.push((title, Figures::read(&report)?));
    }
    std::thread::sleep(Duration::from_millis(100));
    drop(server);
    drop(unmeasured);
    summarize(&figures);
    Ok(())
}

/// Starts a server on `database` with `extra` options; returns it and its address.
fn start(
    bin: &Path,
    database: &str,
    ready_file: &Path,
    extra: &[&str],
) -> Result<(Server, String)> {
    let child = Command::new(bin)
        .args(["--database-url", database, "serve", "--bind", "127.0.0.1:0", "--ready-file"])
        .arg(ready_file)
        .args(extra)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .context("could not start the server")?;
    let mut server = Server(child);
    let base = wait_until_ready(&mut server, ready_file)?;
    Ok((server, base))
}

/// What one wrk run measured.
struct Figures {
    requests_per_second: f64,
    p99: String,
}

impl Figures {
    fn read(report: &str) -> Result<Self> {
        let field = |prefix: &str| {
            report
                .lines()
                .map(str::trim)
                .find_map(|line| line.strip_prefix(prefix))
                .map(str::trim)
                .with_context(|| format!("no {prefix:?} in wrk's report"))
        };
        let requests_per_second =
            field("Requests/sec:")?.parse().context("wrk's Requests/sec is not a number")?;
        Ok(Self { requests_per_second, p99: field("99%")?.to_owned() })
    }
}

/// The figures as a table, and what the metrics cost, as the ratio of the runs with them
/// to the runs without, both rounds together.
fn summarize(figures: &[(&str, Figures)]) {
    cmd::header("summary");
    println!("| request | req/s | p99 |\n|---|---|---|");
    for (title, figures) in figures {
        println!("| {title} | {:.0} | {} |", figures.requests_per_second, figures.p99);
    }
    let total = |predicate: &dyn Fn(&str) -> bool| -> f64 {
        figures.iter().filter(|(t, _)| predicate(t)).map(|(_, f)| f.requests_per_second).sum()
    };
    for request in ["GET /v1/pets?limit=20", "POST /v1/pets"] {
        let on = total(&|t: &str| t.starts_with(request) && !t.contains("metrics off"));
        let off = total(&|t: &str| t.starts_with(request) && t.contains("metrics off"));
        if off > 0.0 {
            println!("{request}: with metrics {:.3} of the throughput without", on / off);
        }
    }
}

fn path(p: &Path) -> Result<&str> {
    p.to_str().context("a temporary path is not UTF-8")
}

/// Runs wrk and returns its report.
fn wrk(args: &[&str]) -> Result<String> {
    let output = cmd::run_quiet(Command::new("wrk").args(args))?;
    String::from_utf8(output.stdout).context("wrk's report is not UTF-8")
}

/// The server's address, once it has written its ready file; bounded to 30 s.
fn wait_until_ready(server: &mut Server, ready_file: &Path) -> Result<String> {
    for _ in 0..300 {
        if let Ok(text) = std::fs::read_to_string(ready_file) {
            let ready: serde_json::Value =
                serde_json::from_str(&text).context("the ready file is not JSON")?;
            return ready["address"]
                .as_str()
                .map(str::to_owned)
                .context("the ready file has no address");
        }
        if let Some(status) = server.0.try_wait().context("waiting for the server")? {
            bail!("the server exited before listening: {status}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    bail!("the server did not listen within 30 s")
}

fn ensure_wrk() -> Result<()> {
    if Command::new("wrk").arg("-v").output().is_ok() {
        return Ok(());
    }
    if system::is_root()? && system::is_debian() {
        return system::apt_install("wrk");
    }
    bail!("wrk is not installed; install it with: sudo apt-get install -y wrk")
}
