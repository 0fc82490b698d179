//! Deliveries verified by Standard Webhooks' own Python and TypeScript libraries, in the
//! receivers docs/webhooks.md shows.

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Client, Db, Server, json};
use crate::webhooks::{TEST_FLAGS, add_pet, register};

/// The webhook receiver of docs/webhooks.md in `language`, verifying with Standard
/// Webhooks' own library; `None` when the library is not installed (and not required).
fn start_documented_receiver(
    language: &str,
    secret_file: &std::path::Path,
) -> Option<(Child, u16)> {
    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/examples");
    let tool = match language {
        "python" => std::env::var("ANIMAL_STORE_WEBHOOK_PYTHON"),
        _ => std::env::var("ANIMAL_STORE_WEBHOOK_NODE"),
    };
    let Ok(tool) = tool else {
        assert!(
            std::env::var_os("ANIMAL_STORE_REQUIRE_WEBHOOK_RECEIVERS").is_none(),
            "Standard Webhooks' libraries are required here: cargo xtask receivers -- ..."
        );
        eprintln!("skipped: Standard Webhooks' {language} library is not installed");
        return None;
    };
    let mut command = if language == "python" {
        let mut python = Command::new(tool);
        python.arg(format!("{examples}/webhook_receiver.py"));
        python
    } else {
        // Compiled with the TypeScript compiler beside the libraries, then run by node.
        let dir = tempfile::tempdir().expect("a directory").keep();
        let modules = std::path::Path::new(&tool).join("node_modules");
        std::os::unix::fs::symlink(&modules, dir.join("node_modules")).expect("link node_modules");
        let source = dir.join("webhook_receiver.ts");
        std::fs::copy(format!("{examples}/webhook_receiver.ts"), &source).expect("copy");
        let compiled = Command::new("node")
            .arg(modules.join("typescript/bin/tsc"))
            .args(["--module", "nodenext", "--target", "es2022", "--strict", "--types", "node"])
            .arg(&source)
            .current_dir(&dir)
            .output()
            .expect("tsc runs");
        assert!(compiled.status.success(), "tsc: {}", String::from_utf8_lossy(&compiled.stdout));
        let mut node = Command::new("node");
        node.arg(dir.join("webhook_receiver.js"));
        node
    };
    let mut child = command
        .env("WEBHOOK_SECRET_FILE", secret_file)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the receiver starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stdout));
    let first = lines.next().expect("a first line").expect("a line");
    let port =
        serde_json::from_str::<Value>(&first).expect("JSON")["listening"].as_u64().expect("a port");
    // The rest of its output, line by line, into a file beside the secret.
    let log = secret_file.with_extension(format!("{language}.log"));
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            use std::io::Write as _;
            let mut file =
                std::fs::OpenOptions::new().create(true).append(true).open(&log).expect("the log");
            writeln!(file, "{line}").expect("write");
        }
    });
    Some((child, u16::try_from(port).expect("a port")))
}

/// Every line a documented receiver printed so far.
fn receiver_log(secret_file: &std::path::Path, language: &str) -> Vec<Value> {
    let log = secret_file.with_extension(format!("{language}.log"));
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON"))
        .collect()
}

#[tokio::test]
async fn every_delivery_is_verified_by_the_standard_webhooks_libraries() {
    for language in ["python", "typescript"] {
        let db = Db::sqlite();
        let client = Client::new(&db.key("business"));
        let server = Server::start(&db.url, db.path().to_path_buf(), &TEST_FLAGS);
        let secret_file = db.path().join("secret");
        let Some((mut receiver, port)) = start_documented_receiver(language, &secret_file) else {
            return;
        };
        let body = json!({"url": format!("http://127.0.0.1:{port}/events")});
        let created = json(register(&client, &server, &body).await).await;
        std::fs::write(&secret_file, created["secret"].as_str().expect("a secret")).expect("write");
        let rex = add_pet(&client, &server, "Rex").await;
        let order = json!({"petId": rex["id"]}).to_string();
        assert_eq!(client.post(&server.url("/v1/store/orders"), &order).await.status(), 201);
        add_pet(&client, &server, "Max").await;
        let listed = json(client.get(&server.url("/v1/events")).await).await;
        let listed = listed.as_array().cloned().expect("events");
        assert_eq!(listed.len(), 4);
        let mut verified = Vec::new();
        for _ in 0..400 {
            verified = receiver_log(&secret_file, language);
            if verified.len() >= 4 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        receiver.kill().expect("stop the receiver");
        let _ = receiver.wait();
        assert!(
            verified.iter().all(|line| line.get("refused").is_none()),
            "{language}: {verified:?}"
        );
        let mut by_id: BTreeMap<String, Value> = BTreeMap::new();
        for line in verified {
            by_id.insert(
                line["webhook-id"].as_str().expect("an id").to_owned(),
                line["event"].clone(),
            );
        }
        let expected: BTreeMap<String, Value> =
            listed.into_iter().map(|event| (event["id"].to_string(), event)).collect();
        assert_eq!(by_id, expected, "{language}: each event, as listEvents gives it, verified");
    }
}
