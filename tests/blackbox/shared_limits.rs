//! Several instances of the binary with their rate-limit counters in one Redis: one quota
//! for all of them, and the start-up errors of the Redis settings.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use animal_store_infra::testing::databases::redis_url;

use crate::harness::{Client, Db, Server};

/// Three instances on one database (PostgreSQL when the run has one, as production does;
/// else one SQLite file, which WAL lets processes share) and one Redis.
async fn three_instances(redis: &str) -> (Db, [Server; 3]) {
    let db = match Db::postgres().await {
        Some(db) => db,
        None => Db::sqlite(),
    };
    // The schema first, so that three instances do not race to create it.
    assert!(db.run(&["migrate"]).status.success());
    let args = ["--rate-limiter", "redis", "--redis-url", redis];
    let start = || Server::start(&db.url, db.path().to_path_buf(), &args);
    let servers = [start(), start(), start()];
    (db, servers)
}

/// Waits, if need be, for the next minute of Redis's clock (this machine's: Redis runs on
/// 127.0.0.1), so that at least `room` is left of the minute: the requests that follow are
/// counted in one minute's window, not in two.
async fn with_room_in_the_minute(room: Duration) {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).expect("a clock after 1970");
    let into = u64::try_from(now.as_millis() % 60_000).expect("under a minute");
    let left = Duration::from_millis(60_000 - into);
    if left < room {
        tokio::time::sleep(left + Duration::from_millis(100)).await;
    }
}

fn key_id(key: &str) -> &str {
    key.split('_').nth(2).expect("a key id")
}

#[tokio::test]
async fn three_instances_share_one_quota_one_suspension_and_one_revocation() {
    let Some(redis) = redis_url() else { return };
    let (db, servers) = three_instances(&redis).await;
    let key = db.key("free");
    let client = Client::new(&key);

    // One quota across the three: requests spread round-robin, 60 admitted, then every
    // instance refuses. Redis numbers the minutes by its clock: the 63 requests and the 30
    // refusals after them fall in one minute (they take a second or two).
    with_room_in_the_minute(Duration::from_secs(20)).await;
    let mut admitted = 0;
    for i in 0..63 {
        let response = client.get(&servers[i % 3].url("/v1/pets?limit=1")).await;
        match response.status().as_u16() {
            200 => admitted += 1,
            429 => {
                assert!(i >= 60, "request {i} refused before the quota was spent");
                let body = crate::harness::json(response).await;
                assert_eq!(body["code"], "rate_limited");
            }
            other => panic!("request {i}: status {other}"),
        }
    }
    assert_eq!(admitted, 60, "60 admitted across the three instances");

    // One suspension: 30 further refusals through the first instance suspend the key on all.
    for _ in 0..30 {
        client.get(&servers[0].url("/v1/pets?limit=1")).await;
    }
    for server in &servers[1..] {
        let response = client.get(&server.url("/v1/pets?limit=1")).await;
        assert_eq!(response.status().as_u16(), 429);
        assert_eq!(crate::harness::json(response).await["code"], "api_key_suspended");
    }

    // One store: a pet created through one instance is read through another.
    let writer_key = db.unlimited_key();
    let writer = Client::new(&writer_key);
    let created =
        writer.post(&servers[0].url("/v1/pets"), r#"{"name":"Rex","categoryId":1}"#).await;
    assert_eq!(created.status().as_u16(), 201);
    let location = created.headers()["location"].to_str().expect("ascii").to_owned();
    let read = writer.get(&servers[2].url(&location)).await;
    assert_eq!(read.status().as_u16(), 200);
    assert_eq!(crate::harness::json(read).await["name"], "Rex");

    // One revocation: a key revoked through the command line is refused by all within a
    // second (and a little slack for a loaded machine).
    for server in &servers {
        assert_eq!(writer.get(&server.url("/v1/pets?limit=1")).await.status().as_u16(), 200);
    }
    assert!(db.run(&["keys", "revoke", key_id(&writer_key)]).status.success());
    let revoked_at = Instant::now();
    let mut refused = [false; 3];
    while revoked_at.elapsed() < Duration::from_millis(1_500) && refused.contains(&false) {
        for (server, refused) in servers.iter().zip(&mut refused) {
            *refused = writer.get(&server.url("/v1/pets?limit=1")).await.status().as_u16() == 401;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(refused, [true; 3], "refused by every instance within 1.5 s");
    for server in servers {
        assert!(server.stop(), "the server stops cleanly");
    }
}

#[test]
fn redis_without_a_url_or_with_a_bad_one_is_a_start_up_error() {
    let db = Db::sqlite();
    for (args, expected) in [
        (&["serve", "--rate-limiter", "redis"][..], "--rate-limiter redis needs --redis-url"),
        (
            &["serve", "--rate-limiter", "redis", "--redis-url", "http://nowhere"][..],
            "invalid Redis URL",
        ),
        (
            &[
                "serve",
                "--rate-limiter",
                "redis",
                "--redis-url",
                "redis://127.0.0.1:1",
                "--limiter-timeout",
                "0",
            ][..],
            "longer than zero",
        ),
        (
            &[
                "serve",
                "--rate-limiter",
                "redis",
                "--redis-url",
                "redis://:secret@127.0.0.1:1",
                "--limiter-failure",
                "closed",
            ][..],
            "cannot reach Redis",
        ),
    ] {
        let out = db.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        // The first line says it all (clap follows an invalid value with its usage).
        let first = stderr.lines().next().unwrap_or_default();
        assert!(first.starts_with("error: ") && first.contains(expected), "{args:?}: {stderr}");
        assert!(!stderr.contains("secret"), "{args:?}: the password is masked: {stderr}");
    }
}

/// A `redis-server` of this test's own, on a free port of 127.0.0.1, that the test can pause,
/// kill and start again.
struct OwnRedis {
    port: u16,
    child: Option<std::process::Child>,
    dir: tempfile::TempDir,
}

impl OwnRedis {
    fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let mut redis = Self { port, child: None, dir: tempfile::tempdir().expect("a directory") };
        redis.restart();
        redis
    }

    /// Starts the server (again) on its port, and waits until it listens.
    fn restart(&mut self) {
        let child = std::process::Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", ""])
            .args(["--appendonly", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server runs (cargo xtask ci installs it)");
        self.child = Some(child);
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("redis-server did not listen on {}", self.port);
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    async fn command(&self, args: &[&str]) {
        let client = redis::Client::open(self.url()).expect("a URL");
        let mut connection = client.get_multiplexed_async_connection().await.expect("Redis");
        let mut command = redis::cmd(args[0]);
        for arg in &args[1..] {
            command.arg(*arg);
        }
        let () = command.query_async(&mut connection).await.expect("the command");
    }

    /// Kills the server, as a crash would.
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().expect("kill");
            child.wait().expect("wait");
        }
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn ready_store(server: &Server) -> String {
    let body =
        crate::harness::json(reqwest::get(server.url("/readyz")).await.expect("an answer")).await;
    body["rateLimitStore"].as_str().unwrap_or_default().to_owned()
}

/// Sends `n` requests one after another and returns the slowest one's time; each must be
/// answered 200.
async fn slowest_of(client: &Client, server: &Server, n: usize) -> Duration {
    let mut slowest = Duration::ZERO;
    for i in 0..n {
        let started = Instant::now();
        let response = client.get(&server.url("/v1/pets?limit=1")).await;
        slowest = slowest.max(started.elapsed());
        assert_eq!(response.status().as_u16(), 200, "request {i}");
    }
    slowest
}

#[tokio::test]
async fn a_stalled_then_dead_redis_costs_no_request_more_than_the_timeout() {
    if redis_url().is_none() {
        return;
    }
    let mut redis = OwnRedis::start();
    let db = Db::sqlite();
    let key = db.unlimited_key();
    let url = redis.url();
    let server = Server::start(
        &db.url,
        db.path().to_path_buf(),
        &["--rate-limiter", "redis", "--redis-url", &url, "--limiter-timeout", "50ms"],
    );
    let client = Client::new(&key);
    assert_eq!(ready_store(&server).await, "shared");
    slowest_of(&client, &server, 5).await;

    // Stalled: Redis holds every client for 3 s.
    redis.command(&["CLIENT", "PAUSE", "3000", "ALL"]).await;
    let slowest = slowest_of(&client, &server, 30).await;
    assert!(slowest < Duration::from_millis(50 + 100), "a request waited {slowest:?}");
    // Dead.
    redis.kill();
    let slowest = slowest_of(&client, &server, 30).await;
    assert!(slowest < Duration::from_millis(50 + 100), "a request waited {slowest:?}");
    assert_eq!(ready_store(&server).await, "unreachable: counting in this instance");
    let metrics =
        reqwest::get(server.url("/metrics")).await.expect("metrics").text().await.expect("text");
    let fallbacks = metrics
        .lines()
        .find_map(|line| {
            line.strip_prefix("animal_store_rate_limit_store_fallbacks_total{mode=\"local\"} ")
        })
        .and_then(|value| value.parse::<f64>().ok())
        .unwrap_or_default();
    assert!(fallbacks >= 30.0, "{fallbacks} decisions counted as taken without Redis");

    // Back: shared counting resumes by itself, within a bounded wait.
    redis.restart();
    let mut resumed = false;
    for _ in 0..50 {
        slowest_of(&client, &server, 1).await;
        if ready_store(&server).await == "shared" && server.stderr_contains("Redis answers again") {
            resumed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(resumed, "shared counting resumed within 5 s");
    assert_eq!(
        server.stderr_count("rate-limit decisions fall back"),
        1,
        "the outage is logged once"
    );
    assert!(server.stop());
}

#[tokio::test]
async fn an_unreachable_redis_at_start_up_is_a_warning_under_the_local_fallback() {
    let db = Db::sqlite();
    let key = db.key("free");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let url = format!("redis://127.0.0.1:{port}");
    let server = Server::start(
        &db.url,
        db.path().to_path_buf(),
        &["--rate-limiter", "redis", "--redis-url", &url],
    );
    assert!(server.stderr_contains("Redis cannot be reached"), "the start-up warns");
    let response = Client::new(&key).get(&server.url("/v1/pets")).await;
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.headers()["x-ratelimit-remaining"], "59", "counted in the instance");
    assert_eq!(ready_store(&server).await, "unreachable: counting in this instance");
    assert!(server.stop());
}
