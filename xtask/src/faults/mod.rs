//! `cargo xtask faults`: the service under every fault its stores can have, each held longer
//! than every cache and window, with clients that check what a user would see.
//!
//! Each fault gets a fresh database and a fresh service (the release binary; with
//! `--short`, the test build, whose clock a file sets), and the four clients of
//! [`traffic`]. The clients run before the fault, through it, and after it; then the run
//! checks, and prints as a table: no 500; no 429 for a key under its quota; no broken
//! connection (while the service runs); every 503 with `Retry-After`; every write answered
//! 201 stored; every client's first 2xx within 5 s of the fault's end.
//!
//! A full run holds each fault for 90 s, longer than the key cache (900 ms) and a rate-limit
//! minute, and writes its table into `docs/operations.md`. `--short` holds each for 5 s and
//! moves the service's clock a minute ahead every second of it, so the key cache and the
//! windows turn over as in a long fault, with a per-address quota of 10 a minute, which the
//! clients of an address would exceed within a second if their requests counted against
//! it; `cargo xtask ci` runs it.

mod options;
mod report;
mod stage;
pub mod traffic;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};

use crate::cmd;
use crate::postgres::Postgres;
use crate::redis::Redis;
use options::{Fault, Options, Store, USAGE, parse};
use report::{Row, table, write_docs};
use stage::{Launch, Relay, Service, SmallDisk};
use traffic::{Client, Seen, Traffic};

/// How long a client may take to see a 2xx again once a fault has ended.
const RECOVERY: Duration = Duration::from_secs(5);
/// How late the slow PostgreSQL answers.
const SLOW: Duration = Duration::from_secs(2);

/// `cargo xtask faults ARGS`.
pub fn run(root: &Path, args: &[OsString]) -> Result<ExitCode> {
    let options = match parse(args) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("error: {message} ({USAGE})");
            return Ok(ExitCode::from(crate::USAGE_ERROR));
        }
    };
    let binary = if options.short { test_build(root)? } else { crate::load::build_server(root)? };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("could not start a runtime")?;
    let rows = runtime.block_on(matrix(&binary, &options))?;
    let table = table(&rows);
    cmd::header("faults");
    println!("{table}");
    if !options.short && options.faults == Fault::ALL {
        write_docs(root, &table)?;
    }
    let failed: Vec<_> =
        rows.iter().filter(|row| !row.passed()).map(|row| row.fault.name()).collect();
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("error: faults that failed a check: {}", failed.join(", "));
        Ok(ExitCode::FAILURE)
    }
}

/// The test build of the server, whose clock a file can set: the binary the workspace's
/// tests run (built with them, so that after `cargo xtask ci`'s tests nothing is built).
fn test_build(root: &Path) -> Result<PathBuf> {
    cmd::header("cargo build --workspace --tests");
    cmd::run(cmd::cargo(root).args(["build", "--workspace", "--tests"]))?;
    Ok(root.join("target/debug/animal-store"))
}

/// The stores the faults share, started when a fault first needs them. Fields drop in
/// order: each server stops before its disk goes, and the directory goes last.
struct Stores {
    postgres: Option<(Postgres, SmallDisk, Relay)>,
    sqlite_disk: Option<SmallDisk>,
    redis: Option<Redis>,
    dir: tempfile::TempDir,
}

async fn matrix(binary: &Path, options: &Options) -> Result<Vec<Row>> {
    let dir = tempfile::Builder::new().prefix("animal-store-faults-").tempdir()?;
    let mut stores = Stores { dir, postgres: None, sqlite_disk: None, redis: None };
    let mut rows = Vec::new();
    for (index, fault) in options.faults.iter().enumerate() {
        cmd::header(&format!("fault {}: {}", fault.name(), fault.description()));
        let row = one(binary, &mut stores, *fault, index, options)
            .await
            .with_context(|| format!("fault {}", fault.name()))?;
        println!("{}", table(std::slice::from_ref(&row)));
        rows.push(row);
    }
    Ok(rows)
}

/// Runs one fault and judges what the clients saw.
async fn one(
    binary: &Path,
    stores: &mut Stores,
    fault: Fault,
    index: usize,
    options: &Options,
) -> Result<Row> {
    let port = crate::system::free_port()?;
    let dir = stores.dir.path().join(fault.name());
    std::fs::create_dir_all(&dir)?;
    let mut flags = vec!["--trusted-proxy".to_owned(), traffic::PROXY.to_owned()];
    let clock = dir.join("clock");
    if options.short {
        std::fs::write(&clock, unix_now().to_string())?;
        flags.extend(["--clock-file".to_owned(), clock.display().to_string()]);
        // A minute of the clock lasts a second: a tenth of the default quota is what an
        // address's clients would spend of it in a real minute.
        flags.extend(["--per-address-per-minute".to_owned(), "10".to_owned()]);
    }
    let database_url = match fault.store() {
        Store::Postgres => {
            if stores.postgres.is_none() {
                let disk = SmallDisk::mount(stores.dir.path().join("pg-disk"), 256)?;
                let postgres = Postgres::start_in(disk.path())?;
                let relay = Relay::to(postgres.port()).await?;
                stores.postgres = Some((postgres, disk, relay));
            }
            let (postgres, _, relay) = stores.postgres.as_ref().context("PostgreSQL")?;
            let database = format!("fault{index}");
            postgres.psql("postgres", &format!("CREATE DATABASE {database}"))?;
            format!("postgres://animal@127.0.0.1:{}/{database}", relay.port)
        }
        Store::SqliteOnSmallDisk => {
            if stores.sqlite_disk.is_none() {
                stores.sqlite_disk =
                    Some(SmallDisk::mount(stores.dir.path().join("sqlite-disk"), 32)?);
            }
            let disk = stores.sqlite_disk.as_ref().context("the small disk")?;
            format!("sqlite://{}/fault{index}.db", disk.path().display())
        }
        Store::SqliteAndRedis => {
            if stores.redis.is_none() {
                stores.redis = Some(Redis::start()?);
            }
            let redis = stores.redis.as_ref().context("Redis")?;
            flags.extend(["--rate-limiter".into(), "redis".into(), "--redis-url".into()]);
            flags.push(redis.url());
            format!("sqlite://{}/fault{index}.db", dir.display())
        }
    };
    let launch = Launch { binary: binary.to_owned(), database_url, port, dir, flags };
    let unlimited = ["--plan", "enterprise", "--per-minute", "1000000", "--per-day", "100000000"];
    let clients = vec![
        client(
            "direct-enterprise",
            cmd::issue_key(binary, &launch.database_url, &unlimited)?,
            false,
            false,
        ),
        client(
            "direct-pro",
            cmd::issue_key(binary, &launch.database_url, &["--plan", "pro"])?,
            true,
            false,
        ),
        client(
            "proxied-enterprise",
            cmd::issue_key(binary, &launch.database_url, &unlimited)?,
            false,
            true,
        ),
        client(
            "proxied-pro",
            cmd::issue_key(binary, &launch.database_url, &["--plan", "pro"])?,
            true,
            true,
        ),
    ];
    let mut service = Service::start(launch)?;
    let base = service.base();
    let traffic = Traffic::start(&base, &clients)?;
    tokio::time::sleep(Duration::from_secs(1)).await;

    let began = Instant::now();
    let mut down = Vec::new();
    inject(fault, stores, &mut service, options, &clock, &mut down).await?;
    let ended = Instant::now();
    if !service.is_running() {
        let from = Instant::now();
        service.start_again(Duration::from_secs(30))?;
        down.push((from, Instant::now()));
    }
    let seen = after(traffic, ended).await;
    let listed = traffic::stored(&base, &clients[0].key).await.context("listing the pets")?;
    drop(service);
    Ok(Row::judge(fault, ended - began, &clients, &seen, &listed, ended, &down))
}

fn client(name: &'static str, key: String, quota_binds: bool, proxied: bool) -> Client {
    // The pro keys' 300 a minute is never reached: 150 a minute at most.
    let pace = if quota_binds { Duration::from_millis(400) } else { Duration::from_millis(50) };
    Client { name, key, proxied, pace, orders: false }
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Brings `fault` about, holds it for the run's time, and ends it. `down` gets the spans
/// in which the service was not running.
async fn inject(
    fault: Fault,
    stores: &mut Stores,
    service: &mut Service,
    options: &Options,
    clock: &Path,
    down: &mut Vec<(Instant, Instant)>,
) -> Result<()> {
    match fault {
        Fault::PostgresStopped => postgres(stores)?.0.stop_now()?,
        Fault::PostgresDiskFull => postgres(stores)?.1.fill()?,
        Fault::PostgresTerminated => {}
        Fault::PostgresSlow => postgres(stores)?.2.set_delay(SLOW),
        Fault::SqliteDiskFull | Fault::KillOnFullDisk => small_disk(stores)?.fill()?,
        Fault::RedisStopped => redis(stores)?.kill(),
        Fault::RedisPaused => {
            let ms = (options.hold.as_millis() + 500).to_string();
            redis(stores)?.cli(&["CLIENT", "PAUSE", &ms])?;
        }
        Fault::RedisFull => {
            let redis = redis(stores)?;
            redis.cli(&["CONFIG", "SET", "maxmemory-policy", "noeviction"])?;
            redis.cli(&["CONFIG", "SET", "maxmemory", "1"])?;
        }
    }
    let began = Instant::now();
    let mut killed: Option<Instant> = None;
    while began.elapsed() < options.hold {
        tokio::time::sleep(Duration::from_secs(1)).await;
        if options.short {
            // A minute a second: the key cache and the windows turn over as in a long fault.
            let now: u64 = std::fs::read_to_string(clock)?.trim().parse()?;
            std::fs::write(clock, (now + 61).to_string())?;
        }
        match fault {
            Fault::PostgresTerminated => {
                let (postgres, _, _) = postgres(stores)?;
                postgres.psql(
                    "postgres",
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                     WHERE datname LIKE 'fault%' AND pid <> pg_backend_pid()",
                )?;
            }
            Fault::KillOnFullDisk if killed.is_none() && began.elapsed() >= options.hold / 2 => {
                killed = Some(Instant::now());
                service.kill();
            }
            Fault::KillOnFullDisk if killed.is_some() && !service.is_running() => {
                // An operator's supervisor restarts it; on a full disk it may not come up.
                if service.start_again(Duration::from_secs(5)).is_ok()
                    && let Some(from) = killed.take()
                {
                    down.push((from, Instant::now()));
                }
            }
            _ => {}
        }
    }
    if let Some(from) = killed {
        down.push((from, Instant::now() + Duration::from_secs(30)));
    }
    match fault {
        Fault::PostgresStopped => postgres(stores)?.0.start_again()?,
        Fault::PostgresDiskFull => {
            let (postgres, disk, _) = postgres(stores)?;
            disk.empty()?;
            postgres.start_again()?;
        }
        Fault::PostgresTerminated => {}
        Fault::PostgresSlow => postgres(stores)?.2.set_delay(Duration::ZERO),
        Fault::SqliteDiskFull | Fault::KillOnFullDisk => small_disk(stores)?.empty()?,
        Fault::RedisStopped => redis(stores)?.restart()?,
        Fault::RedisPaused => {
            redis(stores)?.cli(&["CLIENT", "UNPAUSE"])?;
        }
        Fault::RedisFull => {
            redis(stores)?.cli(&["CONFIG", "SET", "maxmemory", "0"])?;
        }
    }
    Ok(())
}

fn postgres(stores: &mut Stores) -> Result<&mut (Postgres, SmallDisk, Relay)> {
    stores.postgres.as_mut().context("PostgreSQL is not running")
}

fn small_disk(stores: &mut Stores) -> Result<&mut SmallDisk> {
    stores.sqlite_disk.as_mut().context("the small disk is not mounted")
}

fn redis(stores: &mut Stores) -> Result<&mut Redis> {
    stores.redis.as_mut().context("Redis is not running")
}

/// Lets the clients go on until each has had a 2xx since `ended`, or the recovery time is
/// over, and half a second more; returns what they saw.
async fn after(traffic: Traffic, ended: Instant) -> Vec<Seen> {
    while ended.elapsed() < RECOVERY && !traffic.recovered(ended).await {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    traffic.stop().await
}
