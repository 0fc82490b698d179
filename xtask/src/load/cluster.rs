//! `cargo xtask load --cluster`: what sharing the rate-limit counters in Redis costs.
//!
//! On the cluster of `cargo xtask cluster` (PostgreSQL, Redis, three instances, nginx), and a
//! fourth instance on the same database that counts in its own memory, wrk asks for the first
//! page of pets: from one instance with the Redis limiter, from the one with the in-process
//! limiter (alternated, ABAB, so that machine noise hits both), and through nginx across the
//! three. The table goes into docs/benchmarks.md between its own markers.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use super::wrk::{self, Figures};
use crate::cluster::Cluster;
use crate::cmd;
use crate::system::Process;

const BEGIN: &str = "<!-- xtask load --cluster: begin -->";
const END: &str = "<!-- xtask load --cluster: end -->";
/// Pets created before measuring: a full first page and more.
const PETS: usize = 100;
const PAGE: &str = "/v1/pets?limit=20";

/// Runs the measurement and writes its table.
pub fn run(root: &Path) -> Result<()> {
    let seconds = super::seconds();
    let server = super::build_server(root)?;
    cmd::header("starting the cluster");
    let cluster = Cluster::start(&server)?;
    let key = cluster.key(&server, &enterprise())?;
    let auth = format!("Authorization: Bearer {key}");
    seed(&cluster.address, &key)?;

    let dir = tempfile::tempdir()?;
    let ready = dir.path().join("ready.json");
    let local = Process(
        Command::new(&server)
            .args(["--database-url", &cluster.database_url, "serve", "--bind", "127.0.0.1:0"])
            .arg("--ready-file")
            .arg(&ready)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("could not start the in-process instance")?,
    );
    let local_base = crate::system::wait_until_ready(&ready)?;
    let shared_base = &cluster.instances[0];
    for base in [&local_base, shared_base, &cluster.address] {
        wrk::measure(&format!("{base}{PAGE}"), &auth, None, seconds.min(3))?;
    }

    let (mut shared, mut in_process) = (Vec::new(), Vec::new());
    for _ in 0..2 {
        cmd::header("one instance, in-process limiter");
        in_process.push(wrk::measure(&format!("{local_base}{PAGE}"), &auth, None, seconds)?);
        cmd::header("one instance, Redis limiter");
        shared.push(wrk::measure(&format!("{shared_base}{PAGE}"), &auth, None, seconds)?);
    }
    cmd::header("three instances behind nginx, Redis limiter");
    let through_nginx = wrk::measure(&format!("{}{PAGE}", cluster.address), &auth, None, seconds)?;
    drop(local);
    drop(cluster);

    let (shared, in_process) = (mean(&shared), mean(&in_process));
    let mut table = String::from(
        "| where | limiter | requests/s | of the in-process limiter | p50 | p99 |\n|---|---|---|---|---|---|\n",
    );
    for (place, limiter, figures) in [
        ("one instance", "in-process (`memory`)", in_process),
        ("one instance", "Redis", shared),
        ("3 instances behind nginx", "Redis", through_nginx),
    ] {
        writeln!(
            table,
            "| {place} | {limiter} | {:.0} | {:.2} | {:.2} ms | {:.2} ms |",
            figures.requests_per_second,
            figures.requests_per_second / in_process.requests_per_second,
            figures.p50_ms,
            figures.p99_ms
        )?;
    }
    cmd::header("summary");
    println!("{table}");
    write(root, &table)
}

fn enterprise() -> [&'static str; 6] {
    ["--plan", "enterprise", "--per-minute", "4000000000", "--per-day", "4000000000"]
}

/// Creates the pets through the cluster: plain HTTP/1.1 over a socket, one request each.
fn seed(base: &str, key: &str) -> Result<()> {
    use std::io::{Read as _, Write as _};
    let address = base.trim_start_matches("http://");
    for n in 0..PETS {
        let body = format!(r#"{{"name":"Pet {n}","categoryId":1}}"#);
        let request = format!(
            "POST /v1/pets HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {key}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let mut stream = std::net::TcpStream::connect(address)?;
        stream.write_all(request.as_bytes())?;
        let mut response = String::new();
        stream.read_to_string(&mut response)?;
        if !response.starts_with("HTTP/1.1 201") {
            bail!("creating a pet answered {}", response.lines().next().unwrap_or_default());
        }
    }
    Ok(())
}

fn mean(runs: &[Figures]) -> Figures {
    #[allow(clippy::cast_precision_loss, reason = "two runs")]
    let n = runs.len() as f64;
    Figures {
        requests_per_second: runs.iter().map(|f| f.requests_per_second).sum::<f64>() / n,
        p50_ms: runs.iter().map(|f| f.p50_ms).sum::<f64>() / n,
        p99_ms: runs.iter().map(|f| f.p99_ms).sum::<f64>() / n,
        cpu_us: runs.iter().map(|f| f.cpu_us).sum::<f64>() / n,
    }
}

fn write(root: &Path, table: &str) -> Result<()> {
    let path = root.join("docs/benchmarks.md");
    let doc = std::fs::read_to_string(&path)?;
    let (before, rest) =
        doc.split_once(BEGIN).context("docs/benchmarks.md has no cluster markers")?;
    let (_, after) =
        rest.split_once(END).context("docs/benchmarks.md has no cluster end marker")?;
    let section = format!(
        "{BEGIN}\nMeasured by `cargo xtask load --cluster` {}.\n\n{table}{END}",
        super::report::machine()
    );
    std::fs::write(&path, format!("{before}{section}{after}"))?;
    println!("written to docs/benchmarks.md");
    Ok(())
}
