//! Webhook deliveries through the real binary: retries until the receiver answers; no
//! delivery lost to a `kill -9`; no server-side request forgery at delivery; and on
//! PostgreSQL, two instances delivering each event once per endpoint. The receiver and the
//! helpers here serve `webhook_endpoints.rs` and `webhook_receivers.rs` too.

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
