//! The probes of the real binary: readiness follows the database, and SIGTERM turns it to
//! 503 at once while the API keeps serving for `--drain-secs`, closing each connection after
//! its answer.

use std::time::{Duration, Instant};

use sea_orm::ConnectionTrait;

use crate::harness::{Client, Db, Server};

#[tokio::test]
async fn sigterm_turns_readiness_off_then_drains_then_stops() {
    let db = Db::sqlite();
    let key = db.key("free");
    let server = Server::start(&db.url, db.path().to_path_buf(), &["--drain-secs", "2"]);
    let http = reqwest::Client::new();
    let readyz = || http.get(server.url("/readyz")).send();
    assert_eq!(readyz().await.expect("an answer").status(), 200);

    let signalled = Instant::now();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &server.pid().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let draining = readyz().await.expect("still answering");
    assert_eq!(draining.status(), 503, "readiness turns off at once");
    let client = Client::new(&key);
    let listed = client.get(&server.url("/v1/pets")).await;
    assert_eq!(listed.status(), 200, "the API serves on");
    let connection = listed.headers().get("connection").and_then(|v| v.to_str().ok());
    assert_eq!(connection, Some("close"), "each answer closes its connection meanwhile");
    assert_eq!(http.get(server.url("/livez")).send().await.expect("an answer").status(), 200);

    assert!(server.wait(), "the server then exits cleanly");
    assert!(signalled.elapsed() >= Duration::from_secs(2), "it served for --drain-secs first");
}

#[tokio::test]
async fn readiness_names_a_database_that_went_away() {
    let Some(db) = Db::postgres().await else {
        return;
    };
    let server = db.start();
    let http = reqwest::Client::new();
    assert_eq!(http.get(server.url("/readyz")).send().await.expect("an answer").status(), 200);

    let (base, name) = db.url.rsplit_once('/').expect("a database name");
    let admin = sea_orm::Database::connect(format!("{base}/postgres")).await.expect("connect");
    admin
        .execute_unprepared(&format!("DROP DATABASE {name} WITH (FORCE)"))
        .await
        .expect("drop the server's database");
    let began = Instant::now();
    let resp = http.get(server.url("/readyz")).send().await.expect("an answer");
    assert!(began.elapsed() < Duration::from_secs(7), "answered within the pool's wait");
    assert_eq!(resp.status(), 503);
    let body: serde_json::Value = resp.json().await.expect("the Error body");
    assert_eq!(body["code"], "service_unavailable");
    assert!(body["message"].as_str().unwrap().starts_with("database is not ready"), "{body}");
    assert_eq!(http.get(server.url("/livez")).send().await.expect("an answer").status(), 200);
}

#[tokio::test]
async fn a_second_sigterm_ends_the_drain_at_once() {
    let db = Db::sqlite();
    let server = Server::start(&db.url, db.path().to_path_buf(), &["--drain-secs", "10"]);
    let term = || {
        let status = std::process::Command::new("kill")
            .args(["-TERM", &server.pid().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
    };
    term();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let began = Instant::now();
    assert!(!server.stop(), "a second signal exits with a failure status");
    assert!(began.elapsed() < Duration::from_secs(3), "without waiting for the drain");
}
