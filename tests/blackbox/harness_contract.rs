//! The contract a harness in any language relies on: the ready file, fixtures on
//! `memory://`, fault options, and clear refusals of bad input before anything listens.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::harness::{BIN, Client, Server, json};

pub(crate) const FIXTURES: &str = r#"{
  "keys": [{"name": "tester", "plan": "enterprise", "perMinute": 3, "perDay": 100},
           {"name": "reader", "plan": "free"}],
  "pets": [{"name": "Rex", "categoryId": 1, "status": "sold"}, {"name": "Mia", "categoryId": 2}]
}"#;

pub(crate) fn fixtures_file(dir: &tempfile::TempDir, text: &str) -> String {
    let path = dir.path().join("fixtures.json");
    std::fs::write(&path, text).expect("write the fixtures");
    path.display().to_string()
}

/// With `RUST_LOG=warn`, a harness that knows only the ready file gets the fixtures' keys
/// and pets; the key with 3 a minute sees 200, 200, 200, 429; a restart gives the fixture
/// state back.
#[tokio::test]
async fn fixtures_and_the_ready_file_are_all_a_harness_needs() {
    let dir = tempfile::tempdir().expect("a directory");
    let fixtures = fixtures_file(&dir, FIXTURES);
    let start = || {
        Server::start_logging(
            "memory://",
            dir.path().to_path_buf(),
            &["--fixtures", &fixtures],
            "warn",
        )
    };
    let server = start();
    let keys = server.ready["keys"].as_object().expect("keys").clone();
    assert_eq!(
        keys.keys().map(String::as_str).collect::<Vec<_>>(),
        ["demo", "tester", "reader"],
        "the run's demo key, then the fixtures' keys in file order"
    );
    let tester = Client::new(keys["tester"].as_str().expect("a key"));
    let url = server.url("/v1/pets");
    let mut seen = Vec::new();
    for _ in 0..4 {
        seen.push(tester.get(&url).await.status().as_u16());
    }
    assert_eq!(seen, [200, 200, 200, 429]);

    let reader = Client::new(keys["reader"].as_str().expect("a key"));
    let created = reader.post(&server.url("/v1/pets"), r#"{"name":"Tom","categoryId":3}"#).await;
    assert_eq!(created.status(), 201);
    let names = |pets: serde_json::Value| -> Vec<String> {
        pets.as_array()
            .expect("pets")
            .iter()
            .map(|p| p["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(json(reader.get(&server.url("/v1/pets")).await).await), ["Rex", "Mia", "Tom"]);
    drop(server);

    let began = Instant::now();
    let server = start();
    let restart = began.elapsed();
    let reader = Client::new(server.ready["keys"]["reader"].as_str().expect("a key"));
    let pets = json(reader.get(&server.url("/v1/pets")).await).await;
    assert_eq!(names(pets.clone()), ["Rex", "Mia"], "a restart is the reset");
    assert_eq!(pets[0]["status"], "sold");
    eprintln!("restart to ready: {restart:?}");
}

/// Each mistake is one line on stderr naming what is wrong, and exit status 2, before the
/// server listens: no ready file is written.
#[test]
fn bad_harness_input_is_refused_before_anything_listens() {
    let dir = tempfile::tempdir().expect("a directory");
    let ready = dir.path().join("ready.json");
    let cases: [(&str, Option<&str>, &str); 14] = [
        ("sqlite://x.db", Some(FIXTURES), "--fixtures is for memory:// only"),
        ("memory://", Some("not json"), "not the expected JSON"),
        (
            "memory://",
            Some(r#"{"keys":[{"name":"a","plan":"gold"}]}"#),
            "keys[0] (a): unknown plan",
        ),
        (
            "memory://",
            Some(r#"{"keys":[{"name":"a","plan":"free"},{"name":"a","plan":"pro"}]}"#),
            "keys[1]: the name \"a\" is used twice",
        ),
        (
            "memory://",
            Some(r#"{"pets":[{"name":"","categoryId":0}]}"#),
            "pets[0]: name must not be empty",
        ),
        (
            "memory://",
            Some(r#"{"keys":[{"name":"demo","plan":"pro"}]}"#),
            "keys[0]: the name \"demo\" is the ready file's",
        ),
        (
            "memory://",
            Some(r#"{"keys":[{"name":"a","plan":"free"}],"orders":[{"key":"b","petId":1}]}"#),
            "orders[0]: no fixture key is named \"b\"",
        ),
        (
            "memory://",
            Some(r#"{"keys":[{"name":"a","plan":"free"}],"orders":[{"key":"a","petId":1}]}"#),
            "orders[0]: no fixture pet has the id 1",
        ),
        (
            "memory://",
            Some(
                r#"{"keys":[{"name":"a","plan":"free"}],"pets":[{"name":"Rex","categoryId":1}],
                    "orders":[{"key":"a","petId":1},{"key":"a","petId":1}]}"#,
            ),
            "orders[1]: pet 1 has an order already",
        ),
        (
            "memory://",
            Some(r#"{"keys":[{"name":"a","plan":"free","expiresAt":1000}]}"#),
            "keys[0] (a): expiresAt must be after the time at start",
        ),
        ("memory://?drop-answer-every=0", None, "drop-answer-every"),
        ("memory://?latency-ms=-1", None, "latency-ms"),
        ("memory://?nope=1", None, "unknown memory:// option \"nope\""),
        ("memory://", None, "the directory"),
    ];
    for (url, fixtures, expected) in cases {
        let mut command = Command::new(BIN);
        command.args(["serve", "--bind", "127.0.0.1:0", "--ready-file"]);
        if expected == "the directory" {
            command.arg(dir.path().join("missing").join("ready.json"));
        } else {
            command.arg(&ready);
        }
        if let Some(text) = fixtures {
            command.args(["--fixtures", &fixtures_file(&dir, text)]);
        }
        let out = command
            .env_clear()
            .env("DATABASE_URL", url)
            .current_dir(dir.path())
            .output()
            .expect("the binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{url} {fixtures:?}: {stderr}");
        assert!(stderr.contains(expected), "{url} {fixtures:?}: {stderr}");
        assert_eq!(stderr.lines().filter(|l| l.starts_with("error:")).count(), 1, "{stderr}");
        assert!(!ready.exists(), "{url}: nothing listened");
    }
}

/// The Python harness of docs/testing.md (`docs/examples/conftest.py` and the storefront
/// suite beside it), run with pytest as a client team would run it. `cargo xtask ci`
/// installs pytest (as root) and sets `ANIMAL_STORE_REQUIRE_PYTEST`, which turns a missing
/// pytest into a failure; elsewhere the test says it skipped.
#[test]
fn the_python_harness_of_the_docs_passes() {
    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/examples");
    let python = ["python3", "/usr/bin/python3"].into_iter().find(|python| {
        Command::new(python)
            .args(["-c", "import pytest"])
            .output()
            .is_ok_and(|out| out.status.success())
    });
    let Some(python) = python else {
        assert!(
            std::env::var_os("ANIMAL_STORE_REQUIRE_PYTEST").is_none(),
            "pytest is required here: apt-get install python3-pytest"
        );
        eprintln!("skipped: no Python with pytest on this machine");
        return;
    };
    let dir = tempfile::tempdir().expect("a directory");
    let out = Command::new(python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", examples])
        .env("ANIMAL_STORE_BIN", BIN)
        .current_dir(dir.path())
        .output()
        .expect("pytest runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("11 passed"), "{stdout}");
}

/// A harness moves time by writing Unix seconds to `--clock-file`: a key's 429 is lifted by
/// the next minute, with no wait.
#[tokio::test]
async fn a_harness_lifts_a_429_by_moving_the_clock_file() {
    let dir = tempfile::tempdir().expect("a directory");
    let fixtures = fixtures_file(&dir, FIXTURES);
    let clock = dir.path().join("clock");
    std::fs::write(&clock, "1900000000").expect("write the clock");
    let server = Server::start(
        "memory://",
        dir.path().to_path_buf(),
        &["--fixtures", &fixtures, "--clock-file", clock.to_str().expect("UTF-8")],
    );
    let tester = Client::new(server.ready["keys"]["tester"].as_str().expect("a key"));
    let url = server.url("/v1/pets");
    let mut seen = Vec::new();
    for _ in 0..4 {
        seen.push(tester.get(&url).await.status().as_u16());
    }
    assert_eq!(seen, [200, 200, 200, 429], "3 a minute");
    std::fs::write(&clock, "1900000060").expect("move the clock");
    assert_eq!(tester.get(&url).await.status(), 200, "the next minute");
}

/// A clock file that does not hold whole seconds is refused in one line, exit 2.
#[test]
fn a_clock_file_without_whole_seconds_is_refused() {
    let dir = tempfile::tempdir().expect("a directory");
    let clock = dir.path().join("clock");
    for text in ["soon", "1900000000.5", ""] {
        std::fs::write(&clock, text).expect("write the clock");
        let out = Command::new(BIN)
            .args(["serve", "--bind", "127.0.0.1:0", "--clock-file"])
            .arg(&clock)
            .env_clear()
            .env("DATABASE_URL", "memory://")
            .current_dir(dir.path())
            .output()
            .expect("the binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text:?}: {stderr}");
        assert!(stderr.contains("must hold whole Unix seconds"), "{text:?}: {stderr}");
        assert_eq!(stderr.lines().filter(|l| l.starts_with("error:")).count(), 1, "{stderr}");
    }
}

/// A stale ready file is removed before anything else, even by a start that then fails; a
/// clean stop removes the ready file it wrote.
#[test]
fn the_ready_file_never_outlives_its_server() {
    let dir = tempfile::tempdir().expect("a directory");
    let ready = dir.path().join("ready.json");
    let stale = r#"{"address":"http://127.0.0.1:1","keys":{}}"#;
    std::fs::write(&ready, stale).expect("a stale ready file");
    let failed = Command::new(BIN)
        .args(["serve", "--bind", "127.0.0.1:0", "--ready-file"])
        .arg(&ready)
        .args(["--fixtures", &fixtures_file(&dir, "not json")])
        .env_clear()
        .env("DATABASE_URL", "memory://")
        .current_dir(dir.path())
        .output()
        .expect("the binary runs");
    assert_eq!(failed.status.code(), Some(2));
    assert!(!ready.exists(), "the stale ready file is gone");

    std::fs::write(&ready, stale).expect("a stale ready file");
    let mut child = Command::new(BIN)
        .args(["serve", "--bind", "127.0.0.1:0", "--ready-file"])
        .arg(&ready)
        .env_clear()
        .env("DATABASE_URL", "memory://")
        .current_dir(dir.path())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the server starts");
    let mut written = None;
    for _ in 0..600 {
        let text = std::fs::read_to_string(&ready).unwrap_or_default();
        if !text.is_empty() && text.trim() != stale {
            written = Some(text);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let written = written.expect("the server wrote its own ready file");
    assert!(!written.contains("127.0.0.1:1\""), "{written}");
    let term = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    assert!(term.expect("kill -TERM").success());
    let mut stopped = None;
    for _ in 0..300 {
        if let Some(status) = child.try_wait().expect("try_wait") {
            stopped = Some(status);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let Some(status) = stopped else {
        let _ = child.kill();
        panic!("the server did not stop within 15 s of SIGTERM");
    };
    assert!(status.success(), "{status}");
    assert!(!ready.exists(), "a clean stop removes the ready file");
}

/// Fixture orders are placed and moved as a client would, and their pets follow: an approved
/// order keeps its pet `pending`, a delivered one makes it `sold`.
#[tokio::test]
async fn fixture_orders_hold_their_pets() {
    let dir = tempfile::tempdir().expect("a directory");
    let fixtures = fixtures_file(
        &dir,
        r#"{"keys": [{"name": "buyer", "plan": "pro"}, {"name": "other", "plan": "free"}],
            "pets": [{"name": "Rex", "categoryId": 1}, {"name": "Mia", "categoryId": 2},
                     {"name": "Tom", "categoryId": 3}],
            "orders": [{"key": "buyer", "petId": 1, "status": "approved"},
                       {"key": "buyer", "petId": 3, "status": "delivered"},
                       {"key": "other", "petId": 2}]}"#,
    );
    let server = Server::start("memory://", dir.path().to_path_buf(), &["--fixtures", &fixtures]);
    let buyer = Client::new(server.ready["keys"]["buyer"].as_str().expect("a key"));
    let orders = json(buyer.get(&server.url("/v1/store/orders")).await).await;
    let seen: Vec<(i64, &str)> = orders
        .as_array()
        .expect("orders")
        .iter()
        .map(|o| (o["petId"].as_i64().unwrap(), o["status"].as_str().unwrap()))
        .collect();
    assert_eq!(seen, [(1, "approved"), (3, "delivered")], "the buyer's orders only");
    let pets = json(buyer.get(&server.url("/v1/pets")).await).await;
    let statuses: Vec<&str> =
        pets.as_array().expect("pets").iter().map(|p| p["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["pending", "pending", "sold"], "each pet follows its order");
}
