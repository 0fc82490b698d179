//! Webhooks through the real binary: endpoints registered, changed and removed, and every
//! bad input refused with nothing stored; no server-side request forgery, at registration
//! and at delivery; deliveries verified by Standard Webhooks' own Python and TypeScript
//! libraries; retries until the receiver answers; no delivery lost to a `kill -9`; and on
//! PostgreSQL, two instances delivering each event once per endpoint.

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use poem::listener::TcpAcceptor;
use serde_json::{Value, json};

use crate::harness::{Client, Db, Server, json};

/// Lets a server call receivers on loopback, and retry within milliseconds.
pub const TEST_FLAGS: [&str; 3] = ["--webhooks-allow-private", "--webhook-retry-unit", "1ms"];

/// One request a [`Receiver`] got.
#[derive(Debug, Clone)]
pub struct Received {
    pub id: String,
    pub timestamp: String,
    pub signature: String,
    pub body: Value,
    /// When it came.
    pub at: std::time::Instant,
}

/// An HTTP receiver on 127.0.0.1: it records every request and answers the statuses of its
/// script in turn, then 204.
pub struct Receiver {
    pub url: String,
    pub port: u16,
    got: Arc<Mutex<Vec<Received>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Receiver {
    pub async fn start(script: Vec<u16>) -> Self {
        Self::start_on(0, script).await
    }

    pub async fn start_on(port: u16, script: Vec<u16>) -> Self {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.expect("bind");
        let port = listener.local_addr().expect("an address").port();
        let acceptor = TcpAcceptor::from_tokio(listener).expect("an acceptor");
        let got = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(script.into_iter()));
        let (seen, answers) = (Arc::clone(&got), Arc::clone(&script));
        let endpoint = poem::endpoint::make(move |request: poem::Request| {
            let (seen, answers) = (Arc::clone(&seen), Arc::clone(&answers));
            async move {
                let header =
                    |name: &str| request.header(name).map(str::to_owned).unwrap_or_default();
                let (id, timestamp, signature) = (
                    header("webhook-id"),
                    header("webhook-timestamp"),
                    header("webhook-signature"),
                );
                let body = request.into_body().into_bytes().await.unwrap_or_default();
                let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let at = std::time::Instant::now();
                let received = Received { id, timestamp, signature, body, at };
                seen.lock().expect("the log").push(received);
                let status = answers.lock().expect("the script").next().unwrap_or(204);
                poem::http::StatusCode::from_u16(status).expect("a status")
            }
        });
        let task = tokio::spawn(async move {
            let _ = poem::Server::new_with_acceptor(acceptor).run(endpoint).await;
        });
        Self { url: format!("http://127.0.0.1:{port}/hook"), port, got, task }
    }

    pub fn received(&self) -> Vec<Received> {
        self.got.lock().expect("the log").clone()
    }

    /// Waits (at most 20 s) until it has got `count` requests; returns them.
    pub async fn wait_for(&self, count: usize) -> Vec<Received> {
        for _ in 0..400 {
            let got = self.received();
            if got.len() >= count {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the receiver got {} requests, not {count}", self.received().len());
    }

    pub fn stop(self) {
        self.task.abort();
    }
}

pub async fn register(client: &Client, server: &Server, body: &Value) -> reqwest::Response {
    client.post(&server.url("/v1/webhook_endpoints"), &body.to_string()).await
}

pub async fn patch(client: &Client, url: &str, body: &Value) -> reqwest::Response {
    let request = client.raw().patch(url).bearer_auth(client.key());
    let request = request.header("content-type", "application/json").body(body.to_string());
    request.send().await.expect("a response")
}

pub async fn error(resp: reqwest::Response, status: u16, code: &str) -> Value {
    assert_eq!(resp.status(), status);
    assert!(resp.headers().contains_key("x-ratelimit-remaining"));
    let body = json(resp).await;
    assert_eq!(
        (body["code"].as_str(), body["status"].as_u64()),
        (Some(code), Some(status.into())),
        "{body}"
    );
    body
}

pub async fn add_pet(client: &Client, server: &Server, name: &str) -> Value {
    let body = json!({"name": name, "categoryId": 1}).to_string();
    let resp = client.post(&server.url("/v1/pets"), &body).await;
    assert_eq!(resp.status(), 201);
    json(resp).await
}

/// The attempts `listWebhookDeliveries` shows for `endpoint`, once there are at least
/// `count` of them, or as they are after 10 s.
pub async fn attempts(
    client: &Client,
    server: &Server,
    endpoint: &Value,
    count: usize,
) -> Vec<Value> {
    let url = server.url(&format!("/v1/webhook_endpoints/{}/deliveries", endpoint["id"]));
    let mut listed = Vec::new();
    for _ in 0..200 {
        listed = json(client.get(&url).await).await.as_array().cloned().expect("attempts");
        if listed.len() >= count {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    listed
}

/// The first attempt made for `endpoint` (`null` when none was made within 10 s).
pub async fn first_attempt(client: &Client, server: &Server, endpoint: &Value) -> Value {
    attempts(client, server, endpoint, 1).await.first().cloned().unwrap_or(Value::Null)
}
pub async fn endpoints(client: &Client, server: &Server) -> Vec<Value> {
    let resp = client.get(&server.url("/v1/webhook_endpoints")).await;
    assert_eq!(resp.status(), 200);
    json(resp).await.as_array().cloned().expect("an array")
}

#[tokio::test]
async fn endpoints_are_registered_changed_and_removed_by_their_owner_only() {
    let db = Db::sqlite();
    let (alice, bob) = (Client::new(&db.key("business")), Client::new(&db.key("business")));
    let server = Server::start(&db.url, db.path().to_path_buf(), &TEST_FLAGS);
    let resp = register(
        &alice,
        &server,
        &json!({"url": "http://127.0.0.1:9/a", "events": ["pet.created", "order.placed"]}),
    )
    .await;
    assert_eq!(resp.status(), 201);
    assert_eq!(resp.headers()["api-stability"], "experimental");
    let location = resp.headers()["location"].to_str().expect("text").to_owned();
    let created = json(resp).await;
    assert_eq!(location, format!("/v1/webhook_endpoints/{}", created["id"]));
    assert_eq!(created["status"], "enabled");
    assert_eq!(created["events"], json!(["pet.created", "order.placed"]));
    assert_eq!(created["url"], "http://127.0.0.1:9/a");
    let secret = created["secret"].as_str().expect("a secret");
    assert!(secret.starts_with("whsec_") && secret.len() == "whsec_".len() + 32, "{secret}");
    let url = server.url(&location);
    let read = json(alice.get(&url).await).await;
    assert_eq!(read.get("secret"), None, "the secret is shown once");
    let mut without = created.clone();
    without.as_object_mut().expect("an object").remove("secret");
    assert_eq!(read, without);
    assert_eq!(endpoints(&alice, &server).await, vec![read.clone()]);
    let every = register(&alice, &server, &json!({"url": "http://127.0.0.1:9/b"})).await;
    assert_eq!(json(every).await["events"], json!(["*"]), "every type by default");

    // Another key's endpoint is 404 to every operation, and untouched.
    assert!(endpoints(&bob, &server).await.is_empty());
    error(bob.get(&url).await, 404, "not_found").await;
    error(patch(&bob, &url, &json!({"status": "disabled"})).await, 404, "not_found").await;
    let deliveries = format!("{url}/deliveries");
    error(bob.get(&deliveries).await, 404, "not_found").await;
    let removed = bob.raw().delete(&url).bearer_auth(bob.key()).send().await.expect("a response");
    error(removed, 404, "not_found").await;
    assert_eq!(json(alice.get(&url).await).await, read);

    // Changes.
    let off =
        json(patch(&alice, &url, &json!({"status": "disabled", "events": ["*"]})).await).await;
    assert_eq!((off["status"].as_str(), &off["events"]), (Some("disabled"), &json!(["*"])));
    let moved = json(patch(&alice, &url, &json!({"url": "http://localhost:9/c"})).await).await;
    assert_eq!(
        (moved["url"].as_str(), moved["status"].as_str()),
        (Some("http://localhost:9/c"), Some("disabled"))
    );
    assert_eq!(json(alice.get(&url).await).await, moved, "as stored");
    let gone = alice.raw().delete(&url).bearer_auth(alice.key()).send().await.expect("a response");
    assert_eq!(gone.status(), 204);
    error(alice.get(&url).await, 404, "not_found").await;
    assert_eq!(endpoints(&alice, &server).await.len(), 1);
}

#[tokio::test]
async fn bad_input_is_refused_and_stores_nothing() {
    let db = Db::sqlite();
    let client = Client::new(&db.key("business"));
    let server = db.start();
    let long = format!("https://93.184.215.14/{}", "a".repeat(2048));
    for (body, status, code) in [
        // Addresses: 422 naming url, whatever is wrong with them.
        (json!({"url": "http://169.254.169.254/latest/meta-data"}), 422, "validation_failed"),
        (json!({"url": "http://127.0.0.1/"}), 422, "validation_failed"),
        (json!({"url": "http://[::ffff:10.0.0.1]/"}), 422, "validation_failed"),
        (json!({"url": "https://169.254.169.254/"}), 422, "validation_failed"),
        (json!({"url": "https://127.0.0.1/"}), 422, "validation_failed"),
        (json!({"url": "https://localhost/"}), 422, "validation_failed"),
        (json!({"url": "https://[::1]/"}), 422, "validation_failed"),
        (json!({"url": "https://0.0.0.0/"}), 422, "validation_failed"),
        (json!({"url": "https://2130706433/"}), 422, "validation_failed"),
        (json!({"url": "https://0177.0.0.1/"}), 422, "validation_failed"),
        (json!({"url": "https://0x7f.1/"}), 422, "validation_failed"),
        (json!({"url": "https://[::ffff:127.0.0.1]/"}), 422, "validation_failed"),
        (json!({"url": "https://10.1.2.3/"}), 422, "validation_failed"),
        (json!({"url": "https://100.64.0.1/"}), 422, "validation_failed"),
        (json!({"url": "https://[fd12::1]/"}), 422, "validation_failed"),
        (json!({"url": "https://[fe80::1]/"}), 422, "validation_failed"),
        (json!({"url": "http://93.184.215.14/"}), 422, "validation_failed"),
        (json!({"url": "ftp://93.184.215.14/"}), 422, "validation_failed"),
        (json!({"url": "/hook"}), 422, "validation_failed"),
        (json!({"url": "https://user:pw@93.184.215.14/"}), 422, "validation_failed"),
        (json!({"url": long}), 422, "validation_failed"),
        (json!({"url": "https://no-such-host.invalid/"}), 422, "validation_failed"),
        // The body's shape: 400.
        (json!({}), 400, "validation_failed"),
        (json!({"url": 7}), 400, "validation_failed"),
        (json!({"url": null}), 400, "validation_failed"),
        (
            json!({"url": "https://93.184.215.14/", "events": ["pet.born"]}),
            400,
            "validation_failed",
        ),
        (json!({"url": "https://93.184.215.14/", "events": []}), 400, "validation_failed"),
        (
            json!({"url": "https://93.184.215.14/", "events": "pet.created"}),
            400,
            "validation_failed",
        ),
        (json!(["https://93.184.215.14/"]), 400, "invalid_request"),
    ] {
        let resp = register(&client, &server, &body).await;
        assert_eq!(resp.status(), status, "{body}");
        let refusal = json(resp).await;
        assert_eq!(refusal["code"], code, "{body}: {refusal}");
        if status == 422 {
            let message = refusal["message"].as_str().expect("a message");
            assert!(message.starts_with("url"), "{body}: names url: {message}");
        }
    }
    assert!(endpoints(&client, &server).await.is_empty(), "nothing stored");

    // A public address is accepted (no event is made: nothing is sent to it).
    let fine = json!({"url": "https://93.184.215.14/hook"});
    for n in 0..16 {
        assert_eq!(register(&client, &server, &fine).await.status(), 201, "endpoint {n}");
    }
    let seventeenth =
        error(register(&client, &server, &fine).await, 422, "validation_failed").await;
    assert!(seventeenth["message"].as_str().is_some_and(|m| m.contains("16")), "{seventeenth}");
    assert_eq!(endpoints(&client, &server).await.len(), 16);
    let first = endpoints(&client, &server).await[0]["id"].clone();
    let url = server.url(&format!("/v1/webhook_endpoints/{first}"));
    error(
        patch(&client, &url, &json!({"url": "https://127.0.0.1/"})).await,
        422,
        "validation_failed",
    )
    .await;
    error(patch(&client, &url, &json!({"status": "paused"})).await, 400, "validation_failed").await;
    error(patch(&client, &url, &json!({"events": ["pet.born"]})).await, 400, "validation_failed")
        .await;
    assert_eq!(
        json(client.get(&url).await).await["url"],
        "https://93.184.215.14/hook",
        "unchanged"
    );
    error(client.get(&server.url("/v1/webhook_endpoints/abc")).await, 400, "invalid_request").await;
    let deliveries = server.url(&format!("/v1/webhook_endpoints/{first}/deliveries?limit=0"));
    error(client.get(&deliveries).await, 400, "validation_failed").await;

    // A read key cannot register.
    let out = db.run(&["keys", "create", "--plan", "free", "--scope", "read"]);
    let reader = Client::new(String::from_utf8(out.stdout).expect("utf-8").trim());
    error(register(&reader, &server, &fine).await, 403, "forbidden").await;
}

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

#[tokio::test]
async fn a_receiver_that_fails_twice_gets_the_event_on_the_third_attempt() {
    let db = Db::sqlite();
    let client = Client::new(&db.key("business"));
    let server = Server::start(&db.url, db.path().to_path_buf(), &TEST_FLAGS);
    let receiver = Receiver::start(vec![500, 500]).await;
    let created = json(
        register(&client, &server, &json!({"url": receiver.url, "events": ["pet.created"]})).await,
    )
    .await;
    let pet = add_pet(&client, &server, "Rex").await;
    let got = receiver.wait_for(3).await;
    assert_eq!(got.len(), 3, "no attempt after the one that delivered");
    assert!(got.iter().all(|r| r.id == got[0].id), "the same webhook-id on every attempt");
    for attempt in &got {
        assert!(attempt.signature.starts_with("v1,"), "{attempt:?}");
        assert!(attempt.timestamp.parse::<i64>().is_ok_and(|t| t > 1_700_000_000), "{attempt:?}");
    }
    assert_eq!(got[2].body["data"]["object"], pet);
    assert_eq!(got[2].body["type"], "pet.created");
    let listed = attempts(&client, &server, &created, 3).await;
    let shown: Vec<(i64, &str, Option<u64>, bool)> = listed
        .iter()
        .map(|a| {
            (
                a["attempt"].as_i64().expect("a number"),
                a["outcome"].as_str().expect("an outcome"),
                a["statusCode"].as_u64(),
                a.get("nextAttemptAt").is_some(),
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            (3, "delivered", Some(204), false),
            (2, "http_error", Some(500), true),
            (1, "http_error", Some(500), true)
        ]
    );
    assert!(
        listed.iter().all(|a| a["eventId"].as_i64().map(|id| id.to_string()).as_deref()
            == Some(got[0].id.as_str()))
    );
    let url = server.url(&format!("/v1/webhook_endpoints/{}/deliveries", created["id"]));
    let page = client.get(&format!("{url}?limit=2")).await;
    let link = page.headers()["link"].to_str().expect("a link").to_owned();
    let next = server.url(link.trim_start_matches('<').split('>').next().expect("a target"));
    assert_eq!(json(client.get(&next).await).await, json!([listed[2]]));
    receiver.stop();
}

#[tokio::test]
async fn kill_9_after_a_201_loses_no_delivery() {
    let db = Db::sqlite();
    let client = Client::new(&db.key("business"));
    // Nothing listens on the receiver's port yet: the first attempts fail.
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        probe.local_addr().expect("an address").port()
    };
    let server = Server::start(&db.url, db.path().to_path_buf(), &TEST_FLAGS);
    let body = json!({"url": format!("http://127.0.0.1:{port}/hook")});
    assert_eq!(register(&client, &server, &body).await.status(), 201);
    let pet = add_pet(&client, &server, "Rex").await;
    server.kill();
    let receiver = Receiver::start_on(port, Vec::new()).await;
    let server = Server::start(&db.url, db.path().to_path_buf(), &TEST_FLAGS);
    let got = receiver.wait_for(1).await;
    assert_eq!(got[0].body["data"]["object"], pet, "delivered after the restart");
    drop(server);
    receiver.stop();
}

#[tokio::test]
async fn an_address_refused_since_registration_is_refused_at_every_attempt() {
    let db = Db::sqlite();
    let client = Client::new(&db.key("business"));
    let receiver = Receiver::start(Vec::new()).await;
    let allowed = Server::start(&db.url, db.path().to_path_buf(), &TEST_FLAGS);
    let literal = json(register(&client, &allowed, &json!({"url": receiver.url})).await).await;
    let named = format!("http://localhost:{}/named", receiver.port);
    let named = json(register(&client, &allowed, &json!({"url": named})).await).await;
    drop(allowed);
    // The same endpoints, served without --webhooks-allow-private.
    let strict = Server::start(&db.url, db.path().to_path_buf(), &["--webhook-retry-unit", "1ms"]);
    add_pet(&client, &strict, "Rex").await;
    for endpoint in [&literal, &named] {
        let first = first_attempt(&client, &strict, endpoint).await;
        assert_eq!(first["outcome"], "refused_address", "{endpoint}: {first}");
    }
    assert!(receiver.received().is_empty(), "nothing reached the loopback receiver");
    receiver.stop();
}

/// DNS rebinding: a name that resolved to a public address when its endpoint was
/// registered, and resolves to loopback when a delivery is attempted, is refused at the
/// attempt; nothing reaches the receiver behind it. The server resolves names through an
/// `/etc/hosts` of its own (a mount namespace), which the test rewrites in place between
/// the registration and the delivery. Skipped where no mount namespace can be made (not
/// root).
#[tokio::test]
async fn a_name_that_resolves_elsewhere_at_delivery_is_refused_there() {
    if !crate::harness::private_hosts_supported() {
        eprintln!("skipped: a mount namespace with its own /etc/hosts needs root");
        return;
    }
    let db = Db::sqlite();
    let client = Client::new(&db.key("business"));
    let receiver = Receiver::start(Vec::new()).await;
    let hosts = db.path().join("hosts");
    // A public address, never connected to.
    std::fs::write(&hosts, "127.0.0.1 localhost\n93.184.215.14 rebinding.test\n").unwrap();
    let server = Server::start_with_hosts(
        &db.url,
        db.path().to_path_buf(),
        &["--webhook-retry-unit", "1ms"],
        &hosts,
    );
    // https, as every endpoint without --webhooks-allow-private: an attempt that went ahead
    // would reach the plain-HTTP receiver and fail its handshake, a `connection_error`.
    let url = format!("https://rebinding.test:{}/hook", receiver.port);
    let endpoint = json(register(&client, &server, &json!({"url": url})).await).await;
    assert_eq!(endpoint["url"], url.as_str(), "registered while the name was public: {endpoint}");

    // The same file (the mount holds its inode), now naming loopback.
    std::fs::write(&hosts, "127.0.0.1 localhost\n127.0.0.1 rebinding.test\n").unwrap();
    add_pet(&client, &server, "Rex").await;
    let first = first_attempt(&client, &server, &endpoint).await;
    assert_eq!(first["outcome"], "refused_address", "{first}");
    assert!(receiver.received().is_empty(), "nothing reached the loopback receiver");
    receiver.stop();
}

#[tokio::test]
async fn two_instances_on_postgres_deliver_each_event_once_per_endpoint() {
    let Some(db) = Db::postgres().await else {
        return;
    };
    let servers = [
        Server::start(&db.url, db.path().to_path_buf(), &TEST_FLAGS),
        Server::start(&db.url, db.path().to_path_buf(), &TEST_FLAGS),
    ];
    let client = Client::new(&db.unlimited_key());
    let receivers = [Receiver::start(Vec::new()).await, Receiver::start(Vec::new()).await];
    for receiver in &receivers {
        assert_eq!(
            register(&client, &servers[0], &json!({"url": receiver.url})).await.status(),
            201
        );
    }
    for n in 0..40 {
        add_pet(&client, &servers[n % 2], &format!("Pet {n}")).await;
    }
    let listed = json(client.get(&servers[1].url("/v1/events?limit=100")).await).await;
    let ids: Vec<String> =
        listed.as_array().expect("events").iter().map(|e| e["id"].to_string()).collect();
    assert_eq!(ids.len(), 40);
    for receiver in &receivers {
        receiver.wait_for(40).await;
    }
    // A while longer: a second delivery would show now.
    tokio::time::sleep(Duration::from_millis(500)).await;
    for receiver in receivers {
        let mut got: Vec<String> = receiver.received().into_iter().map(|r| r.id).collect();
        got.sort_unstable();
        let mut expected = ids.clone();
        expected.sort_unstable();
        assert_eq!(got, expected, "each event once");
        receiver.stop();
    }
}
