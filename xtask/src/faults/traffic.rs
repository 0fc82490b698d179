//! The clients of a fault run, and what they saw.
//!
//! Four clients, two on each of two client addresses: 127.0.0.1 connects directly, and
//! another client sits behind the trusted proxy 127.0.0.2, which names it in
//! `X-Forwarded-For`. At each address one client has an enterprise key whose quota no run
//! reaches and one a pro key (300 a minute), paced well under it. Each client alternates a
//! read (`listPets`) and a keyed write (`createPet` with an `Idempotency-Key`) on a keep-alive
//! connection, and records every answer or failure with its time. A client that places
//! orders (the upgrade drill's) also orders each pet it has just added, with a key too, and
//! then sends that pet's createPet again with its key, which must get the first answer back.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tokio::sync::Mutex;

/// The address of the trusted proxy the second address's clients come through.
pub const PROXY: &str = "127.0.0.2";
/// The client the proxy names.
const PROXIED_CLIENT: &str = "203.0.113.9";
/// Longer than the service's request timeout (30 s): a client that gives up first would
/// hide an answer.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(35);

/// One client's identity and pace.
#[derive(Clone)]
pub struct Client {
    pub name: &'static str,
    pub key: String,
    /// Behind the trusted proxy, or direct.
    pub proxied: bool,
    pub pace: Duration,
    /// Whether the client places an order for each pet it adds, then adds it again.
    pub orders: bool,
}

/// A keyed createPet's first answer: the `n`th request of its client sent it.
struct FirstAnswer {
    n: u64,
    body: String,
}

/// What a request met.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// An answer: its status, whether it carried `Retry-After`, the pet a 201 added, the
    /// order a 201 placed, and for a createPet sent again with its key, whether it got the
    /// first answer back (201, `Idempotent-Replayed: true`, the same body).
    Answer {
        status: u16,
        retry_after: bool,
        added: Option<(i64, String)>,
        placed: Option<i64>,
        replayed: Option<bool>,
    },
    /// No answer: the connection failed, or nothing came within the client's timeout.
    Broken(String),
}

/// One request and its outcome.
#[derive(Debug, Clone)]
pub struct Seen {
    pub client: usize,
    /// When the outcome arrived.
    pub at: Instant,
    pub outcome: Outcome,
}

/// The clients at work, until [`Traffic::stop`].
pub struct Traffic {
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Traffic {
    /// Starts `clients` against `base`.
    pub fn start(base: &str, clients: &[Client]) -> Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for (index, client) in clients.iter().enumerate() {
            let local: IpAddr = if client.proxied { PROXY } else { "127.0.0.1" }.parse()?;
            let http = reqwest::Client::builder()
                .local_address(local)
                .timeout(CLIENT_TIMEOUT)
                .pool_max_idle_per_host(1)
                .build()
                .context("could not build an HTTP client")?;
            let (client, base) = (client.clone(), base.to_owned());
            let (stop, seen) = (Arc::clone(&stop), Arc::clone(&seen));
            tasks.push(tokio::spawn(async move {
                let mut n = 0_u64;
                let mut last_added = None;
                let mut first = None;
                while !stop.load(Ordering::Acquire) {
                    let started = Instant::now();
                    let last = (last_added.take(), first.as_ref());
                    let (outcome, body) = request(&http, &base, &client, n, last).await;
                    if let Outcome::Answer { added: Some((id, _)), .. } = &outcome {
                        last_added = Some(*id);
                        first = Some(FirstAnswer { n, body });
                    }
                    seen.lock().await.push(Seen { client: index, at: Instant::now(), outcome });
                    n += 1;
                    tokio::time::sleep(client.pace.saturating_sub(started.elapsed())).await;
                }
            }));
        }
        Ok(Self { stop, tasks, seen })
    }

    /// Whether every client has had a 2xx since `since`.
    pub async fn recovered(&self, since: Instant) -> bool {
        let seen = self.seen.lock().await;
        (0..self.tasks.len()).all(|client| {
            seen.iter().any(|one| {
                one.client == client
                    && one.at >= since
                    && matches!(one.outcome, Outcome::Answer { status: 200..=299, .. })
            })
        })
    }

    /// Stops the clients once their requests in flight are answered, and returns what they
    /// saw.
    pub async fn stop(self) -> Vec<Seen> {
        self.stop.store(true, Ordering::Release);
        for task in self.tasks {
            let _ = task.await;
        }
        std::mem::take(&mut *self.seen.lock().await)
    }
}

/// The `n`th request of `client` and the body of its answer: a read, then a keyed
/// `createPet`; then, for a client that places orders, a keyed `placeOrder` for the pet it
/// added last, and that pet's `createPet` again with its key (a read when it added none).
async fn request(
    http: &reqwest::Client,
    base: &str,
    client: &Client,
    n: u64,
    (last_added, first): (Option<i64>, Option<&FirstAnswer>),
) -> (Outcome, String) {
    let step = if client.orders { n % 4 } else { n % 2 };
    let keyed = |path: &str, n: u64, body: String| {
        http.post(format!("{base}{path}"))
            .header("content-type", "application/json")
            .header("idempotency-key", format!("{}-{n}-{}", client.name, std::process::id()))
            .body(body)
    };
    let new_pet = |n: u64| format!(r#"{{"name":"{} {n}","categoryId":3}}"#, client.name);
    let again = first.filter(|_| step == 3);
    let mut builder = match (step, last_added, again) {
        (1, _, _) => keyed("/v1/pets", n, new_pet(n)),
        (2, Some(pet), _) => keyed("/v1/store/orders", n, format!(r#"{{"petId":{pet}}}"#)),
        (3, _, Some(first)) => keyed("/v1/pets", first.n, new_pet(first.n)),
        _ => http.get(format!("{base}/v1/pets?limit=5")),
    };
    builder = builder.bearer_auth(&client.key);
    if client.proxied {
        builder = builder.header("x-forwarded-for", PROXIED_CLIENT);
    }
    let response = match builder.send().await {
        Ok(response) => response,
        Err(err) => return (Outcome::Broken(error_chain(&err)), String::new()),
    };
    let status = response.status().as_u16();
    let retry_after = response.headers().contains_key("retry-after");
    let replay = response.headers().get("idempotent-replayed").is_some_and(|v| v == "true");
    let body = match response.text().await {
        Ok(body) => body,
        Err(err) => return (Outcome::Broken(error_chain(&err)), String::new()),
    };
    if let Some(first) = again {
        let replayed = Some(status == 201 && replay && body == first.body);
        let outcome = Outcome::Answer { status, retry_after, added: None, placed: None, replayed };
        return (outcome, body);
    }
    let created =
        (status == 201).then(|| serde_json::from_str::<serde_json::Value>(&body).ok()).flatten();
    // An order names its pet; a pet does not.
    let (added, placed) = match created {
        Some(order) if order.get("petId").is_some() => (None, order["id"].as_i64()),
        Some(pet) => (pet["id"].as_i64().zip(pet["name"].as_str().map(str::to_owned)), None),
        None => (None, None),
    };
    (Outcome::Answer { status, retry_after, added, placed, replayed: None }, body)
}

fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Every pet the service lists, by id, read with `key`.
pub async fn stored(base: &str, key: &str) -> Result<BTreeMap<i64, String>> {
    let http = reqwest::Client::builder().timeout(CLIENT_TIMEOUT).build()?;
    let mut pets = BTreeMap::new();
    let mut next = Some(format!("{base}/v1/pets?limit=100"));
    while let Some(url) = next.take() {
        let response = http.get(&url).bearer_auth(key).send().await?.error_for_status()?;
        next = response
            .headers()
            .get("link")
            .and_then(|link| link.to_str().ok())
            .and_then(|link| link.split_once('<'))
            .and_then(|(_, rest)| rest.split_once('>'))
            .map(|(path, _)| format!("{base}{path}"));
        let page: Vec<serde_json::Value> = response.json().await?;
        for pet in page {
            if let (Some(id), Some(name)) = (pet["id"].as_i64(), pet["name"].as_str()) {
                pets.insert(id, name.to_owned());
            }
        }
    }
    Ok(pets)
}
