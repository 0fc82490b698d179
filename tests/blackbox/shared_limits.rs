//! Several instances of the binary with their rate-limit counters in one Redis: one quota
//! for all of them, and the start-up errors of the Redis settings.

use animal_store_infra::testing::databases::redis_url;

use crate::harness::{Client, Db, Server};

#[tokio::test]
async fn two_instances_on_one_redis_admit_a_free_key_its_quota_once() {
    let Some(redis) = redis_url() else { return };
    // Two instances on one SQLite file (WAL lets processes share it), as two replicas on
    // one PostgreSQL would; a fresh Redis database number keeps other tests' keys away.
    let db = Db::sqlite();
    let key = db.key("free");
    let args = ["--rate-limiter", "redis", "--redis-url", redis.as_str()];
    let servers = [
        Server::start(&db.url, db.path().to_path_buf(), &args),
        Server::start(&db.url, db.path().to_path_buf(), &args),
    ];
    let client = Client::new(&key);
    let mut admitted = 0;
    for i in 0..61 {
        let response = client.get(&servers[i % 2].url("/v1/pets?limit=1")).await;
        match response.status().as_u16() {
            200 => admitted += 1,
            429 => {
                assert_eq!(i, 60, "only the 61st request is refused");
                assert_eq!(response.headers()["x-ratelimit-remaining"], "0");
                assert!(response.headers().contains_key("retry-after"));
            }
            other => panic!("request {i}: status {other}"),
        }
    }
    assert_eq!(admitted, 60, "60 admitted across both instances");
    // The other instance refuses too, and a pet created on one is read on the other.
    let refused = client.get(&servers[0].url("/v1/pets?limit=1")).await;
    assert_eq!(refused.status().as_u16(), 429);
    let writer = Client::new(&db.unlimited_key());
    let created =
        writer.post(&servers[0].url("/v1/pets"), r#"{"name":"Rex","categoryId":1}"#).await;
    assert_eq!(created.status().as_u16(), 201);
    let location = created.headers()["location"].to_str().unwrap().to_owned();
    let read = writer.get(&servers[1].url(&location)).await;
    assert_eq!(read.status().as_u16(), 200);
    assert_eq!(crate::harness::json(read).await["name"], "Rex");
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
