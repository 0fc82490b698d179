//! `cargo xtask upgrade-drill BASE`: a rolling upgrade, and a way back, under load.
//!
//! Builds the release binary of commit `BASE` (in a git worktree) and of the working tree,
//! starts PostgreSQL, Redis, three instances of `BASE` and nginx in front (the configuration
//! docs/operations.md gives operators), and puts a steady mixed load through nginx: reads,
//! keyed creates and keyed orders. Then, as an operator would: the new version's `migrate`,
//! each instance replaced by the new binary in turn (SIGTERM, drain, exit, start, ready), one
//! instance rolled back to `BASE` and forward again. Prints a table of what the clients saw
//! in each phase and of the writes found afterwards, writes it to docs/operations.md, and
//! fails on any request that did not succeed and on any acknowledged write not found.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::cluster::{InstanceStores, nginx_config, start_instance, start_nginx};
use crate::faults::traffic::{self, Client, Outcome, Seen, Traffic};
use crate::postgres::Postgres;
use crate::redis::Redis;
use crate::system::{self, Process};
use crate::{cmd, load};

mod report;

use report::{Phase, Report, write_docs};

/// How many instances run behind nginx.
const INSTANCES: usize = 3;
/// Each instance's `--drain-secs`: longer than nginx's `fail_timeout`.
const DRAIN_SECS: &str = "3";
/// How long the load runs between two steps.
const SETTLE: Duration = Duration::from_secs(3);

/// `cargo xtask upgrade-drill BASE`.
pub fn run(root: &Path, base: &str) -> Result<()> {
    let commit = git(root, &["rev-parse", "--verify", &format!("{base}^{{commit}}")])
        .with_context(|| format!("{base} names no commit"))?;
    let short = git(root, &["rev-parse", "--short", &commit])?;
    let work = tempfile::Builder::new().prefix("animal-store-upgrade-").tempdir()?;
    let old = build_commit(root, &commit, work.path())?;
    let new = load::build_server(root)?;
    if std::fs::read(&old)? == std::fs::read(&new)? {
        bail!("{base} and the working tree built the same binary: nothing to upgrade");
    }
    let runtime = tokio::runtime::Runtime::new()?;
    let report = runtime.block_on(drill(&old, &new, work.path()))?;
    let table = report.table(&short);
    println!("\n{table}");
    write_docs(root, &table)?;
    if let Some(failure) = report.failure() {
        bail!("the upgrade drill failed: {failure}");
    }
    Ok(())
}

fn git(root: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git").current_dir(root).args(args).output().context("git")?;
    if !out.status.success() {
        bail!("git {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8(out.stdout)?.trim().to_owned())
}

/// Builds the release server of `commit` in a worktree kept under `target/upgrade-drill`,
/// with a target directory of its own there (so that a second drill from the same commit
/// builds nothing), and returns a copy of the binary in `work`.
///
/// Not in the workspace's target directory: cargo names a workspace's own crates by their
/// path from the workspace root, the same in both trees, so the two builds would take each
/// other's artifacts for their own.
fn build_commit(root: &Path, commit: &str, work: &Path) -> Result<PathBuf> {
    let drill = root.join("target/upgrade-drill");
    let tree = drill.join(commit);
    let tree_text = tree.to_str().context("the target directory is not UTF-8")?;
    git(root, &["worktree", "prune"])?;
    if !tree.join("Cargo.toml").is_file() {
        git(root, &["worktree", "add", "--detach", tree_text, commit])?;
    }
    cmd::header(&format!("cargo build --release -p animal-store (at {commit})"));
    let target = drill.join("target");
    cmd::run(
        Command::new("cargo")
            .current_dir(&tree)
            .env("CARGO_TARGET_DIR", &target)
            .args(["build", "--release", "--locked", "-p", "animal-store"])
            .args(["--bin", "animal-store"]),
    )?;
    let copy = work.join("animal-store-base");
    std::fs::copy(target.join("release/animal-store"), &copy)
        .context("could not copy the base binary")?;
    Ok(copy)
}

/// One instance behind nginx: its port and the process that serves it.
struct Instance {
    port: u16,
    process: Option<Process>,
}

/// What the instances share.
struct Shared {
    database_url: String,
    redis_url: String,
    dir: PathBuf,
}

impl Shared {
    /// Starts `binary` on `port` and waits until it is ready.
    fn start(&self, binary: &Path, port: u16, name: &str) -> Result<Process> {
        let stores =
            InstanceStores { database_url: &self.database_url, redis_url: &self.redis_url };
        let bind = format!("127.0.0.1:{port}");
        let extra = ["--bind", &bind, "--drain-secs", DRAIN_SECS];
        let (process, _) = start_instance(binary, &stores, &self.dir, name, &extra)?;
        Ok(process)
    }
}

/// Stops `process` as an orchestrator would (SIGTERM, then wait for it to drain and exit).
fn stop(mut process: Process) -> Result<()> {
    let pid = process.0.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().context("kill")?;
    for _ in 0..600 {
        if let Some(status) = process.0.try_wait()? {
            if !status.success() {
                bail!("an instance exited with {status} after SIGTERM");
            }
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("an instance did not exit within 30 s of SIGTERM")
}

async fn drill(old: &Path, new: &Path, work: &Path) -> Result<Report> {
    cmd::header("PostgreSQL, Redis, 3 instances of the base and nginx");
    let postgres = Postgres::start().context("could not start PostgreSQL")?;
    let redis = Redis::start().context("could not start Redis")?;
    let shared =
        Shared { database_url: postgres.url(), redis_url: redis.url(), dir: work.to_owned() };
    migrate(old, &shared.database_url)?;
    let mut instances = Vec::new();
    for index in 0..INSTANCES {
        let port = system::free_port()?;
        let process = shared.start(old, port, &format!("base-{index}"))?;
        instances.push(Instance { port, process: Some(process) });
    }
    let nginx_port = system::free_port()?;
    let upstreams: Vec<String> =
        instances.iter().map(|instance| format!("127.0.0.1:{}", instance.port)).collect();
    let upstreams: Vec<&str> = upstreams.iter().map(String::as_str).collect();
    let config = nginx_config(work, nginx_port, &upstreams)?;
    let nginx = start_nginx(work, &config, nginx_port)?;
    let address = format!("http://127.0.0.1:{nginx_port}");

    let unlimited = ["--plan", "enterprise", "--per-minute", "10000000", "--per-day", "1000000000"];
    let key = cmd::issue_key(old, &shared.database_url, &unlimited)?;
    let clients: Vec<Client> = ["a", "b", "c", "d"]
        .into_iter()
        .map(|name| Client {
            name,
            key: key.clone(),
            proxied: false,
            pace: Duration::from_millis(10),
            orders: true,
        })
        .collect();
    let load = Traffic::start(&address, &clients)?;
    let mut phases = Vec::new();
    let mut phase = |name: String| {
        cmd::header(&name);
        phases.push(Phase { name, began: Instant::now() });
    };

    phase("the base on every instance".to_owned());
    tokio::time::sleep(SETTLE).await;
    phase("the new version's migrate".to_owned());
    migrate(new, &shared.database_url)?;
    tokio::time::sleep(SETTLE).await;
    for (index, instance) in instances.iter_mut().enumerate() {
        phase(format!("instance {} replaced by the new version", index + 1));
        replace(&shared, instance, new, "new")?;
        tokio::time::sleep(SETTLE).await;
    }
    phase("instance 1 rolled back to the base".to_owned());
    replace(&shared, &mut instances[0], old, "base")?;
    tokio::time::sleep(SETTLE).await;
    phase("instance 1 forward to the new version again".to_owned());
    replace(&shared, &mut instances[0], new, "new")?;
    tokio::time::sleep(SETTLE).await;
    let seen = load.stop().await;

    cmd::header("reading back every acknowledged write");
    let (lost, found) = check_writes(&address, &key, &seen).await?;
    drop(nginx);
    drop(instances);
    drop((redis, postgres));
    Ok(Report { phases, seen, lost, found })
}

/// Runs `binary migrate` on the database.
fn migrate(binary: &Path, database_url: &str) -> Result<()> {
    let out = Command::new(binary)
        .env_clear()
        .args(["--database-url", database_url, "migrate"])
        .output()
        .context("could not run migrate")?;
    if !out.status.success() {
        bail!("migrate failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(())
}

/// Replaces the server of `instance` by `binary`: SIGTERM, drain, exit, then the new one
/// started on the same port and ready.
fn replace(
    shared: &Shared,
    instance: &mut Instance,
    binary: &Path,
    version: &'static str,
) -> Result<()> {
    if let Some(process) = instance.process.take() {
        stop(process)?;
    }
    let log = format!("{version}-{}-{}", instance.port, unix_now());
    instance.process = Some(shared.start(binary, instance.port, &log)?);
    Ok(())
}

fn unix_now() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos())
}

/// The acknowledged writes the service does not have, and how many it has.
async fn check_writes(address: &str, key: &str, seen: &[Seen]) -> Result<(Vec<String>, usize)> {
    let stored = traffic::stored(address, key).await.context("listing the pets")?;
    let http = reqwest::Client::new();
    let mut lost = Vec::new();
    let mut found = 0;
    let mut orders = BTreeSet::new();
    for one in seen {
        if let Outcome::Answer { added, placed, .. } = &one.outcome {
            if let Some((id, name)) = added {
                if stored.get(id) == Some(name) {
                    found += 1;
                } else {
                    lost.push(format!("pet {id} ({name})"));
                }
            }
            if let Some(order) = placed {
                orders.insert(*order);
            }
        }
    }
    for order in orders {
        let response = http
            .get(format!("{address}/v1/store/orders/{order}"))
            .bearer_auth(key)
            .send()
            .await
            .context("reading an order")?;
        if response.status() == 200 {
            found += 1;
        } else {
            lost.push(format!("order {order} ({})", response.status()));
        }
    }
    Ok((lost, found))
}
