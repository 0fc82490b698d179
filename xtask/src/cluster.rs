//! `cargo xtask cluster`: the multi-instance setup on loopback, in one command.
//!
//! A throwaway PostgreSQL and Redis, three instances of the release server sharing them
//! (`--rate-limiter redis`), and nginx in front as the load balancer and trusted proxy, so
//! that per-address limits see the real client. Prints the address and a key, and stops and
//! removes everything on Ctrl-C.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::cmd;
use crate::postgres::Postgres;
use crate::redis::Redis;
use crate::system::{self, Process};

/// How many instances the cluster runs.
pub const INSTANCES: usize = 3;

/// A running cluster; dropping it stops everything, the balancer first.
pub struct Cluster {
    /// `http://127.0.0.1:PORT`, the balancer.
    pub address: String,
    /// The servers behind it, `http://127.0.0.1:PORT` each.
    pub instances: Vec<String>,
    /// The database's URL.
    pub database_url: String,
    /// The Redis URL.
    pub redis_url: String,
    // Fields drop in order: the balancer, the instances, then the stores.
    _nginx: Process,
    _instances: Vec<Process>,
    _redis: Redis,
    _postgres: Postgres,
    _dir: tempfile::TempDir,
}

impl Cluster {
    /// Starts the stores, migrates, starts the instances of `server` and the balancer.
    pub fn start(server: &Path) -> Result<Self> {
        let postgres = Postgres::start().context("could not start PostgreSQL")?;
        let redis = Redis::start().context("could not start Redis")?;
        let dir = tempfile::Builder::new().prefix("animal-store-cluster-").tempdir()?;
        let database_url = postgres.url();
        let redis_url = redis.url();
        let migrate = Command::new(server)
            .args(["--database-url", &database_url, "migrate"])
            .output()
            .context("could not run the server's migrate")?;
        if !migrate.status.success() {
            bail!("migrate failed: {}", String::from_utf8_lossy(&migrate.stderr).trim());
        }
        let mut instances = Vec::new();
        let mut addresses = Vec::new();
        for index in 0..INSTANCES {
            let stores = InstanceStores { database_url: &database_url, redis_url: &redis_url };
            let (process, address) =
                start_instance(server, &stores, dir.path(), &format!("{index}"), &[])?;
            instances.push(process);
            addresses.push(address);
        }
        let port = system::free_port()?;
        let upstreams: Vec<&str> =
            addresses.iter().map(|a| a.trim_start_matches("http://")).collect();
        let config = nginx_config(dir.path(), port, &upstreams)?;
        let nginx = start_nginx(dir.path(), &config, port)?;
        Ok(Self {
            address: format!("http://127.0.0.1:{port}"),
            instances: addresses,
            database_url,
            redis_url,
            _nginx: nginx,
            _instances: instances,
            _redis: redis,
            _postgres: postgres,
            _dir: dir,
        })
    }

    /// Issues a key on the cluster's database with `args` (`--plan pro`, say).
    pub fn key(&self, server: &Path, args: &[&str]) -> Result<String> {
        cmd::issue_key(server, &self.database_url, args)
    }
}

/// What the instances of a cluster share.
pub struct InstanceStores<'a> {
    /// The PostgreSQL database.
    pub database_url: &'a str,
    /// The Redis of the rate-limit counters.
    pub redis_url: &'a str,
}

/// Starts an instance of `server` on `stores`, behind nginx on 127.0.0.1, with `extra`
/// options (`--bind 127.0.0.1:0` unless they give one), its ready file and log in `dir`
/// named for `name`; waits until it is ready and returns it with its base URL.
pub fn start_instance(
    server: &Path,
    stores: &InstanceStores<'_>,
    dir: &Path,
    name: &str,
    extra: &[&str],
) -> Result<(Process, String)> {
    let ready = dir.join(format!("ready-{name}.json"));
    let _ = std::fs::remove_file(&ready);
    let log = std::fs::File::create(dir.join(format!("instance-{name}.log")))?;
    let mut command = Command::new(server);
    // Migrations are the deployment's step, run before the instances start: a version that
    // reads this does not migrate at start, and one that predates it ignores it.
    command.env("ANIMAL_STORE_MIGRATE", "never");
    command.args(["--database-url", stores.database_url, "serve"]);
    if !extra.contains(&"--bind") {
        command.args(["--bind", "127.0.0.1:0"]);
    }
    let child = command
        .args(["--rate-limiter", "redis", "--redis-url", stores.redis_url])
        .args(["--trusted-proxy", "127.0.0.1"])
        .args(extra)
        .arg("--ready-file")
        .arg(&ready)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .context("could not start an instance")?;
    let process = Process(child);
    // The ready file gives the base URL, `http://127.0.0.1:PORT`.
    let address = crate::system::wait_until_ready(&ready)?;
    Ok((process, address))
}

/// `cargo xtask cluster`: starts a cluster, prints how to use it, waits for Ctrl-C.
pub fn run(root: &Path) -> Result<()> {
    let server = crate::load::build_server(root)?;
    let (stop, stopped) = std::sync::mpsc::channel();
    ctrlc::set_handler(move || {
        let _ = stop.send(());
    })
    .context("could not listen for Ctrl-C")?;
    cmd::header("starting PostgreSQL, Redis, 3 instances and nginx");
    let cluster = Cluster::start(&server)?;
    let key = cluster.key(&server, &["--plan", "pro"])?;
    println!();
    println!("Animal Store, {INSTANCES} instances behind nginx: {}", cluster.address);
    println!("  instances:  {}", cluster.instances.join(", "));
    println!("  PostgreSQL: {}", cluster.database_url);
    println!("  Redis:      {} (rate-limit counters, shared)", cluster.redis_url);
    println!("  a pro key:  {key}");
    println!();
    println!("  curl -H 'Authorization: Bearer {key}' {}/v1/pets", cluster.address);
    println!();
    println!("Ctrl-C stops and removes everything.");
    let _ = stopped.recv();
    cmd::header("stopping the cluster");
    drop(cluster);
    Ok(())
}

/// The balancer's part of nginx's configuration for `upstreams` (`127.0.0.1:PORT` each),
/// listening on `port`: the example docs/operations.md gives operators, checked by a test.
///
/// - Passive health checks: an instance that refused a connection or failed before answering
///   is left out for 2 s (`max_fails=1 fail_timeout=2s`).
/// - What is safe to send again goes to the next instance when one fails before answering
///   (`proxy_next_upstream error timeout`): any request nginx had not sent yet, and a read
///   (nginx's rule: it does not resend a POST or a PATCH it sent). A request with an
///   `Idempotency-Key` is safe to send again whatever its method: the instance that gets it
///   second answers with the first one's stored outcome, or with 409 while that one still
///   runs (`non_idempotent`, in `@keyed`).
pub fn balancer_config(port: u16, upstreams: &[&str]) -> String {
    let mut servers = String::new();
    for address in upstreams {
        let _ = writeln!(servers, "        server {address} max_fails=1 fail_timeout=2s;");
    }
    let proxy = "            proxy_pass http://animal_store;\n\
                 \x20           proxy_http_version 1.1;\n\
                 \x20           proxy_set_header Connection \"\";\n\
                 \x20           proxy_set_header Host $host;\n\
                 \x20           # The client as nginx saw it, replacing whatever the client sent.\n\
                 \x20           proxy_set_header X-Forwarded-For $remote_addr;\n";
    format!(
        "    upstream animal_store {{\n{servers}        keepalive 64;\n    }}\n\
         \x20   server {{\n\
         \x20       listen 127.0.0.1:{port};\n\
         \x20       error_page 418 = @keyed;\n\
         \x20       location / {{\n\
         \x20           if ($http_idempotency_key) {{\n\
         \x20               return 418;\n\
         \x20           }}\n\
         {proxy}\
         \x20           proxy_next_upstream error timeout;\n\
         \x20       }}\n\
         \x20       location @keyed {{\n\
         {proxy}\
         \x20           proxy_next_upstream error timeout non_idempotent;\n\
         \x20       }}\n\
         \x20   }}\n"
    )
}

/// Writes nginx's configuration, with its files in `dir`, and returns its path.
pub fn nginx_config(dir: &Path, port: u16, upstreams: &[&str]) -> Result<PathBuf> {
    let dir_text = dir.to_str().context("the temporary directory is not UTF-8")?;
    // As root, nginx's workers would switch to an unprivileged user that cannot write to
    // the temporary directory.
    let user = if system::is_root()? { "user root root;\n" } else { "" };
    let balancer = balancer_config(port, upstreams);
    let config = format!(
        "{user}worker_processes 1;\n\
         daemon off;\n\
         pid {dir_text}/nginx.pid;\n\
         error_log {dir_text}/nginx-error.log;\n\
         events {{ worker_connections 4096; }}\n\
         http {{\n\
         \x20   access_log off;\n\
         \x20   client_body_temp_path {dir_text}/body;\n\
         \x20   proxy_temp_path {dir_text}/proxy;\n\
         \x20   fastcgi_temp_path {dir_text}/fastcgi;\n\
         \x20   uwsgi_temp_path {dir_text}/uwsgi;\n\
         \x20   scgi_temp_path {dir_text}/scgi;\n\
         {balancer}\
         }}\n"
    );
    let path = dir.join("nginx.conf");
    std::fs::write(&path, config).context("could not write nginx.conf")?;
    Ok(path)
}

/// Starts nginx with the configuration at `config`, its files in `dir`, and waits until it
/// listens on `port`.
pub fn start_nginx(dir: &Path, config: &Path, port: u16) -> Result<Process> {
    let nginx = find_or_install_nginx()?;
    let process = Process(
        Command::new(nginx)
            .arg("-p")
            .arg(dir)
            .arg("-c")
            .arg(config)
            .arg("-e")
            .arg(dir.join("nginx-error.log"))
            .stdout(Stdio::null())
            .spawn()
            .context("could not start nginx")?,
    );
    system::wait_for_port(port, Duration::from_secs(5)).context("nginx did not start")?;
    Ok(process)
}

/// nginx on the `PATH` or where Debian puts it; on Debian as root, installs the `nginx`
/// package first if there is none.
fn find_or_install_nginx() -> Result<PathBuf> {
    let find =
        || ["/usr/sbin/nginx", "/usr/bin/nginx"].iter().map(PathBuf::from).find(|p| p.is_file());
    if let Some(found) = find() {
        return Ok(found);
    }
    if !(system::is_root()? && system::is_debian()) {
        bail!("nginx not found; install it with: sudo apt-get install -y nginx");
    }
    eprintln!("nginx not found; installing it with apt-get");
    system::apt_install(&["nginx"])?;
    find().context("installed nginx, but found no nginx binary")
}

#[cfg(test)]
mod tests {
    /// The example docs/operations.md gives operators is the configuration the cluster and the
    /// upgrade drill run.
    #[test]
    fn the_documented_balancer_is_the_one_the_drill_runs() {
        let example = super::balancer_config(8080, &["10.0.0.11:8080", "10.0.0.12:8080"]);
        let doc = include_str!("../../docs/operations.md");
        assert!(doc.contains(&example), "docs/operations.md lacks, verbatim:\n{example}");
    }
}
