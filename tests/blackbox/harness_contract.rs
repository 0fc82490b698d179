//! The contract a harness in any language relies on: the ready file, fixtures on
//! `memory://`, fault options, and clear refusals of bad input before anything listens.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::harness::{BIN, Client, Server, json};

const FIXTURES: &str = r#"{
  "keys": [{"name": "tester", "plan": "enterprise", "perMinute": 3, "perDay": 100},
           {"name": "reader", "plan": "free"}],
  "pets": [{"name": "Rex", "categoryId": 1, "status": "sold"}, {"name": "Mia", "categoryId": 2}]
}"#;

fn fixtures_file(dir: &tempfile::TempDir, text: &str) -> String {
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

/// `memory://?fail-every=2&latency-ms=20`: every second request that touches the animals
/// gets the 503 a lost database gives, and every one takes at least the latency. Fixtures
/// are loaded past the faults and do not count.
#[tokio::test]
async fn memory_fault_options_fail_like_the_real_thing() {
    let dir = tempfile::tempdir().expect("a directory");
    let fixtures = fixtures_file(&dir, FIXTURES);
    let server = Server::start(
        "memory://?fail-every=2&latency-ms=20",
        dir.path().to_path_buf(),
        &["--fixtures", &fixtures],
    );
    let client = Client::new(server.ready["keys"]["demo"].as_str().expect("a key"));
    let mut statuses = Vec::new();
    for _ in 0..4 {
        let began = Instant::now();
        let resp = client.get(&server.url("/v1/pets")).await;
        assert!(began.elapsed() >= Duration::from_millis(20), "the latency is added");
        let status = resp.status().as_u16();
        if status == 200 {
            assert_eq!(json(resp).await.as_array().map(Vec::len), Some(2), "the fixtures' pets");
        } else if status == 503 {
            assert_eq!(resp.headers()["retry-after"], "1");
            assert_eq!(json(resp).await["code"], "service_unavailable");
        }
        statuses.push(status);
    }
    assert_eq!(statuses, [200, 503, 200, 503]);
}

/// Each mistake is one line on stderr naming what is wrong, and exit status 2, before the
/// server listens: no ready file is written.
#[test]
fn bad_harness_input_is_refused_before_anything_listens() {
    let dir = tempfile::tempdir().expect("a directory");
    let ready = dir.path().join("ready.json");
    let cases: [(&str, Option<&str>, &str); 8] = [
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

/// The Python example of docs/testing.md, run as a user would run it.
#[test]
fn the_python_example_of_the_docs_passes() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/examples/harness.py");
    let Ok(out) = Command::new("python3").args([script, BIN]).output() else {
        eprintln!("skipped: no python3 on this machine");
        return;
    };
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("ok: [200, 200, 200, 429]"));
}
