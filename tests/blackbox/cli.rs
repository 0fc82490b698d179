//! The command line: keys, start-up failures, the document, the in-memory mode.

use std::process::Command;

use crate::harness::{BIN, Client, Db, Server, json};

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn keys_are_created_listed_and_revoked() {
    let db = Db::sqlite();
    let free = db.key("free");
    let out = db.run(&[
        "keys",
        "create",
        "--plan",
        "enterprise",
        "--per-minute",
        "5",
        "--per-day",
        "50",
        "--name",
        "big customer",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let enterprise = String::from_utf8(out.stdout).expect("utf-8");
    assert_eq!(enterprise.lines().count(), 1, "the key alone on stdout");

    let out = db.run(&["keys", "list"]);
    assert!(out.status.success());
    let listing = String::from_utf8(out.stdout).expect("utf-8");
    let lines: Vec<&str> = listing.lines().collect();
    assert_eq!(lines.len(), 2);
    let free_id = free.trim_start_matches("as_live_").split('_').next().expect("an id");
    assert!(
        lines[0].starts_with(&format!("{free_id}\tfree\t60/min\t1000/day\tactive")),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains("\tenterprise\t5/min\t50/day\tactive")
            && lines[1].ends_with("name=big customer"),
        "{}",
        lines[1]
    );
    for key in [&free, enterprise.trim()] {
        let secret = key.rsplit('_').next().expect("a secret");
        assert!(!listing.contains(secret), "keys list never shows a secret");
    }

    let out = db.run(&["keys", "revoke", free_id]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listing = String::from_utf8(db.run(&["keys", "list"]).stdout).expect("utf-8");
    assert!(listing.lines().next().is_some_and(|l| l.contains("\trevoked\t")), "{listing}");

    let out = db.run(&["keys", "revoke", "zzzzzzzzzzzz"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no key has id zzzzzzzzzzzz"));
}

#[test]
fn bad_key_requests_are_refused_with_a_clear_line() {
    let db = Db::sqlite();
    for (args, needle) in [
        (
            &["keys", "create", "--plan", "free", "--per-minute", "10"][..],
            "only be set on the enterprise plan",
        ),
        (&["keys", "create", "--plan", "enterprise", "--per-minute", "10"][..], "needs both"),
        (&["keys", "create", "--plan", "gold"][..], "invalid value 'gold'"),
        (&["keys", "revoke", "NOT-AN-ID"][..], "is not a key id"),
    ] {
        let out = db.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty());
    }
    assert!(db.run(&["keys", "list"]).stdout.is_empty(), "no key was created");
}

#[test]
fn start_up_problems_are_one_line_and_exit_code_2() {
    let dir = tempfile::tempdir().expect("a directory");
    let cases: [(&[&str], &str); 3] = [
        (&["--database-url", "mysql://nowhere/db", "serve"], "unsupported database URL"),
        (
            &["--database-url", "sqlite:///nonexistent-dir/x/y.db", "serve"],
            "cannot open the database",
        ),
        (
            &["--database-url", "postgres://nobody@127.0.0.1:1/db", "migrate"],
            "cannot open the database",
        ),
    ];
    for (args, needle) in cases {
        let out = Command::new(BIN)
            .args(args)
            .current_dir(dir.path())
            .env_clear()
            .env("RUST_LOG", "off")
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("error: ") && err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"));
    }
    let db = Db::sqlite();
    let server = db.start();
    let taken = server.base.trim_start_matches("http://").to_owned();
    let out = Command::new(BIN)
        .args(["serve", "--bind", &taken])
        .env_clear()
        .env("DATABASE_URL", &db.url)
        .env("RUST_LOG", "off")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot listen on"), "{}", stderr(&out));
}

#[test]
fn the_committed_document_is_the_one_the_binary_serves() {
    let out = Command::new(BIN)
        .args(["--database-url", "memory://", "openapi"])
        .env_clear()
        .output()
        .expect("runs");
    assert!(out.status.success());
    let generated = String::from_utf8(out.stdout).expect("utf-8");
    let committed =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/openapi.json"))
            .expect("docs/openapi.json exists");
    assert!(
        generated.trim() == committed.trim(),
        "docs/openapi.json is stale: regenerate it with `cargo xtask openapi`"
    );
}

#[tokio::test]
async fn memory_mode_serves_with_a_key_for_its_run() {
    let dir = tempfile::tempdir().expect("a directory");
    let server = Server::start("memory://", dir.path().to_path_buf(), &[]);
    let key = server.ready["keys"]["demo"].as_str().expect("the run's key").to_owned();
    let printed = server.stderr_line(|line| {
        line.strip_prefix("demo API key (free plan, this run only): ").map(|k| k.trim().to_owned())
    });
    assert_eq!(printed, key, "the key on stderr is the ready file's");
    let client = Client::new(&key);
    let resp = client.post(&server.url("/v1/pets"), r#"{"name":"Rex","categoryId":1}"#).await;
    assert_eq!(resp.status(), 201);
    assert_eq!(json(resp).await["id"], 1);
    assert_eq!(
        json(client.get(&server.url("/v1/pets")).await).await.as_array().map(Vec::len),
        Some(1)
    );
    assert!(
        std::fs::read_dir(dir.path()).expect("readable").next().is_none(),
        "memory:// writes no file"
    );
}

/// `config` prints each setting with its source and masks passwords; an invalid setting is
/// exit status 2 with one line.
#[test]
fn config_shows_sources_masks_passwords_and_refuses_invalid_settings() {
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut command = std::process::Command::new(BIN);
        command.args(args).env_clear();
        for (name, value) in env {
            command.env(name, value);
        }
        command.output().expect("the binary runs")
    };
    let out = run(
        &["config", "--suspend-after", "5"],
        &[
            ("DATABASE_URL", "postgres://u:hunter2@db:5432/pets"),
            ("ANIMAL_STORE_BIND", "0.0.0.0:9000"),
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    for line in [
        "database-url = postgres://u:***@db:5432/pets (environment)",
        "bind = 0.0.0.0:9000 (environment)",
        "suspend-after = 5 (flag)",
        "shutdown-grace = 30 (default)",
    ] {
        assert!(stdout.lines().any(|l| l == line), "missing {line:?} in\n{stdout}");
    }
    assert!(!stdout.contains("hunter2"), "the password never shows");

    for (args, env, expected) in [
        (vec!["config"], vec![("DATABASE_URL", "mysql://x")], "unsupported database URL"),
        (vec!["config", "--per-address-per-minute", "0"], vec![], "per-address-per-minute"),
        (vec!["config"], vec![("ANIMAL_STORE_LOG_FORMAT", "xml")], "xml"),
        (vec!["config"], vec![("DATABASE_URL", "memory://?speed=2")], "unknown memory:// option"),
    ] {
        let out = run(&args, &env);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?} {env:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?} {env:?}: {stderr}");
    }
}

/// With `--log-format json`, each log line is one JSON object, and a request's line carries
/// the fields of its span.
#[tokio::test]
async fn json_logs_are_one_object_per_line_with_the_request_fields() {
    let dir = tempfile::tempdir().expect("a directory");
    let server = Server::start("memory://", dir.path().to_path_buf(), &["--log-format", "json"]);
    let key = server.ready["keys"]["demo"].as_str().expect("a key").to_owned();
    let resp = Client::new(&key).get(&server.url("/v1/pets")).await;
    let request_id = resp.headers()["x-request-id"].to_str().expect("ascii").to_owned();
    let line = server.stderr_line(|line| line.contains(&request_id).then(|| line.to_owned()));
    let logged: serde_json::Value = serde_json::from_str(&line).expect("a JSON object");
    assert_eq!(logged["span"]["request_id"], request_id.as_str());
    assert_eq!(logged["span"]["route"], "/v1/pets");
    assert_eq!(logged["fields"]["status"], 200);
}

/// Every long option of `serve` is in the README's configuration table, and in the
/// operations guide under its name or its environment variable.
#[test]
fn every_option_of_serve_is_documented() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).expect("the README");
    let operations =
        std::fs::read_to_string(root.join("docs/operations.md")).expect("the operations guide");
    let help = Command::new(BIN).args(["serve", "--help"]).output().expect("serve --help");
    let help = String::from_utf8(help.stdout).expect("UTF-8");
    let mut options = Vec::new();
    for (i, line) in help.lines().enumerate() {
        let Some(option) = line.trim_start().split([' ', ',']).find(|w| w.starts_with("--")) else {
            continue;
        };
        // `--help` explains itself.
        if option == "--help" {
            continue;
        }
        // The option's environment variable, on one of the lines of its description.
        let env = help.lines().skip(i).take(12).find_map(|l| {
            let (_, rest) = l.split_once("[env: ")?;
            rest.split(['=', ']']).next().map(str::to_owned)
        });
        options.push((option.to_owned(), env));
    }
    assert!(options.len() > 20, "the options were read: {options:?}");
    for (option, env) in options {
        let readme_row =
            readme.lines().any(|l| l.starts_with('|') && l.contains(&format!("`{option}`")));
        assert!(readme_row, "{option} is missing from the README's configuration table");
        let in_operations = operations.contains(&format!("`{option}`"))
            || env.as_ref().is_some_and(|env| operations.contains(&format!("`{env}`")));
        assert!(in_operations, "{option} ({env:?}) is missing from docs/operations.md");
    }
}
