//! The webhooks' defences against a careless customer or a stolen key: only public
//! addresses, with one refusal that tells nothing of the operator's network; deliveries
//! that end with their key's line; slots shared fairly between owners; attempts kept as
//! long as their events and no longer.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{Client, Db, Server, json};
use crate::webhooks::{Receiver, TEST_FLAGS, add_pet, attempts, error, patch, register};

/// Addresses that IANA's special-purpose registries do not mark globally reachable are
/// refused, in IPv4 and IPv6, as are the IPv6 forms that carry a refused IPv4 address; a
/// URL's limits are those of the URL as stored; and every refusal of an address is the same
/// message, naming no address and not telling a name that resolves from one that does not.
#[tokio::test]
async fn only_public_addresses_are_accepted_with_one_refusal() {
    let db = Db::sqlite();
    let client = Client::new(&db.key("business"));
    let server = db.start();
    let spaced = format!("https://93.184.215.14/a{}b", " ".repeat(1000));
    let mut refusals = std::collections::BTreeSet::new();
    for url in [
        "https://192.0.0.192/",
        "https://192.0.2.1/",
        "https://198.18.0.1/",
        "https://198.51.100.1/",
        "https://203.0.113.1/",
        "https://[::ffff:0:a00:1]/",
        "https://[64:ff9b:1::808:808]/",
        "https://[2002:808:808::1]/",
        "https://[fec0::1]/",
        "https://[100::1]/",
        "https://[2001:db8::1]/",
        "https://localhost/",
        "https://no-such-host.invalid/",
        "https://127.0.0.1/",
        "https://[::ffff:10.0.0.1]/",
    ] {
        let resp = register(&client, &server, &json!({"url": url})).await;
        assert_eq!(resp.status(), 422, "{url}");
        let refusal = json(resp).await;
        assert_eq!(refusal["code"], "validation_failed", "{url}: {refusal}");
        let message = refusal["message"].as_str().expect("a message").to_owned();
        for leak in ["127.0.0.1", "::1", "10.0.0.1", "203.0.113", "resolves to", "not resolve"] {
            assert!(!message.contains(leak), "{url}: {message}");
        }
        refusals.insert(message);
    }
    assert_eq!(refusals.len(), 1, "one refusal for every address: {refusals:?}");
    // Within 2,048 bytes as sent, 3,024 as stored (each space is `%20`); port 0.
    for url in [spaced.as_str(), "https://93.184.215.14:0/"] {
        let refusal = json(register(&client, &server, &json!({"url": url})).await).await;
        assert_eq!(refusal["status"], 422, "{url}: {refusal}");
        assert!(refusal["message"].as_str().is_some_and(|m| m.starts_with("url")), "{refusal}");
    }
    let listed = json(client.get(&server.url("/v1/webhook_endpoints")).await).await;
    assert_eq!(listed, json!([]), "nothing stored");
    // A public address in a NAT64 form is accepted.
    let nat64 = register(&client, &server, &json!({"url": "https://[64:ff9b::5db8:d70e]/"})).await;
    assert_eq!(nat64.status(), 201);
}

/// The key id of `key` (`as_live_<id>_<secret>`).
fn key_id(key: &str) -> &str {
    key.split('_').nth(2).expect("a key id")
}

/// `animal-store webhooks ARGS` on `db`: its stdout, once it succeeded.
fn webhooks_command(db: &Db, args: &[&str]) -> String {
    let out = db.run(&[&["webhooks"], args].concat());
    assert!(out.status.success(), "webhooks {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// The line of `webhooks list` for the endpoint `id`.
fn listed(db: &Db, id: &Value) -> String {
    let all = webhooks_command(db, &["list"]);
    let line = all.lines().find(|line| line.starts_with(&format!("{id}\t")));
    line.unwrap_or_else(|| panic!("endpoint {id} in {all}")).to_owned()
}

/// A key revoked: its endpoint gets nothing more within a second, neither the retry that
/// waited nor a new event, and the retry is recorded `dropped`; `webhooks list` says why.
/// A rotated key's endpoint goes on receiving.
#[tokio::test]
async fn a_revoked_keys_endpoints_get_nothing_more() {
    let db = Db::sqlite();
    let (revoked_key, rotated_key) = (db.key("business"), db.key("business"));
    let writer = Client::new(&db.unlimited_key());
    // The first attempt fails: its retry waits 5 s.
    let (failing, kept) = (Receiver::start(vec![500]).await, Receiver::start(Vec::new()).await);
    let flags = ["--webhooks-allow-private", "--webhook-retry-unit", "1s"];
    let server = Server::start(&db.url, db.path().to_path_buf(), &flags);
    let revoked = Client::new(&revoked_key);
    let ended = json(register(&revoked, &server, &json!({"url": failing.url})).await).await;
    let rotated = Client::new(&rotated_key);
    let lasting = json(register(&rotated, &server, &json!({"url": kept.url})).await).await;
    add_pet(&writer, &server, "Rex").await;
    failing.wait_for(1).await;
    kept.wait_for(1).await;

    let out = db.run(&["keys", "revoke", key_id(&revoked_key)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = db.run(&["keys", "rotate", key_id(&rotated_key), "--grace", "1s"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    tokio::time::sleep(Duration::from_millis(2500)).await;
    add_pet(&writer, &server, "Mia").await;
    kept.wait_for(2).await;
    // Past the retry's time (5 s after the first attempt, a tenth either way).
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(failing.received().len(), 1, "neither the retry nor the new event");
    let line = listed(&db, &ended["id"]);
    assert!(line.contains("disabled:key_ended") && line.contains("last=dropped"), "{line}");
    assert!(line.contains(key_id(&revoked_key)) && line.contains("host=127.0.0.1"), "{line}");
    assert!(!line.contains("whsec_") && !line.contains("/hook"), "no secret, no path: {line}");
    let line = listed(&db, &lasting["id"]);
    assert!(line.contains("\tenabled\t") && line.contains("last=delivered:204"), "{line}");
    assert_eq!(revoked.get(&server.url("/v1/webhook_endpoints")).await.status(), 401);
    failing.stop();
    kept.stop();
}

/// `webhooks disable`: nothing more is delivered, its owner cannot enable it again, and
/// `webhooks list --owner` shows it; unknown ids and owners are refused.
#[tokio::test]
async fn an_operator_disables_an_endpoint_for_good() {
    let db = Db::sqlite();
    let key = db.key("business");
    let client = Client::new(&key);
    let receiver = Receiver::start(Vec::new()).await;
    let server = Server::start(&db.url, db.path().to_path_buf(), &TEST_FLAGS);
    let endpoint = json(register(&client, &server, &json!({"url": receiver.url})).await).await;
    let id = endpoint["id"].to_string();
    let out = db.run(&["webhooks", "disable", &id]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    add_pet(&client, &server, "Rex").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(receiver.received().is_empty(), "nothing delivered");
    let url = server.url(&format!("/v1/webhook_endpoints/{id}"));
    let refused = error(patch(&client, &url, &json!({"status": "enabled"})).await, 409, "conflict");
    assert!(refused.await["message"].as_str().is_some_and(|m| m.contains("operator")));
    assert_eq!(json(client.get(&url).await).await["status"], "disabled");
    let mine = webhooks_command(&db, &["list", "--owner", key_id(&key)]);
    assert_eq!(mine.lines().count(), 1, "{mine}");
    assert!(mine.contains("disabled:operator"), "{mine}");
    assert!(webhooks_command(&db, &["list", "--owner", "nobody000000"]).is_empty());
    let unknown = db.run(&["webhooks", "disable", "999"]);
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no webhook endpoint has id 999"));
    let bad = db.run(&["webhooks", "list", "--owner", "NOT-AN-ID"]);
    assert_eq!(bad.status.code(), Some(2));
    receiver.stop();
}

/// A receiver that takes connections and never answers: every attempt to it lasts the
/// service's whole timeout.
struct Hanging {
    port: u16,
    task: tokio::task::JoinHandle<()>,
}

impl Hanging {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("an address").port();
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                held.push(socket);
            }
        });
        Self { port, task }
    }
}

/// `owners` owners' `endpoints` endpoints each hang; another owner's endpoint gets each event
/// within 2 s, at 2 events a second, from every instance of `servers`.
async fn fair_deliveries(db: &Db, servers: &[Server], (owners, endpoints): (usize, usize)) {
    let hanging = Hanging::start().await;
    for owner in 0..owners {
        let greedy = Client::new(&db.unlimited_key());
        for n in 0..endpoints {
            let url = format!("http://127.0.0.1:{}/hang/{owner}/{n}", hanging.port);
            assert_eq!(register(&greedy, &servers[0], &json!({"url": url})).await.status(), 201);
        }
    }
    let fast = Receiver::start(Vec::new()).await;
    let client = Client::new(&db.unlimited_key());
    assert_eq!(register(&client, &servers[0], &json!({"url": fast.url})).await.status(), 201);
    let mut sent = BTreeMap::new();
    for n in 0..16 {
        let pet = add_pet(&client, &servers[n % servers.len()], &format!("Pet {n}")).await;
        sent.insert(pet["id"].as_i64().expect("an id"), Instant::now());
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    for received in fast.wait_for(16).await {
        let id = received.body["data"]["object"]["id"].as_i64().expect("a pet");
        let waited = received.at.duration_since(sent[&id]);
        assert!(waited < Duration::from_secs(2), "pet {id} delivered after {waited:?}");
    }
    fast.stop();
    hanging.task.abort();
}

#[tokio::test]
async fn a_hanging_owner_delays_no_other_on_sqlite() {
    let db = Db::sqlite();
    let server = Server::start(&db.url, db.path().to_path_buf(), &TEST_FLAGS);
    fair_deliveries(&db, &[server], (1, 16)).await;
}

#[tokio::test]
async fn a_hanging_owner_delays_no_other_on_two_postgres_instances() {
    let Some(db) = Db::postgres().await else {
        return;
    };
    let servers = [
        Server::start(&db.url, db.path().to_path_buf(), &TEST_FLAGS),
        Server::start(&db.url, db.path().to_path_buf(), &TEST_FLAGS),
    ];
    fair_deliveries(&db, &servers, (1, 16)).await;
}

/// Eight owners whose 12 receivers each hang would fill the 64 places of a fixed share of
/// 12 each; an equal share leaves one for another owner.
#[tokio::test]
async fn eight_hanging_owners_delay_no_other_on_sqlite() {
    let db = Db::sqlite();
    let server = Server::start(&db.url, db.path().to_path_buf(), &TEST_FLAGS);
    fair_deliveries(&db, &[server], (8, 12)).await;
}

#[tokio::test]
async fn eight_hanging_owners_delay_no_other_on_postgres() {
    let Some(db) = Db::postgres().await else {
        return;
    };
    let server = Server::start(&db.url, db.path().to_path_buf(), &TEST_FLAGS);
    fair_deliveries(&db, &[server], (8, 12)).await;
}

/// Attempts are kept as long as their events and no longer: with a retention of 2 s,
/// hundreds of attempts to failing endpoints are gone after a restart's sweep, and the
/// retries that came due meanwhile are never made.
#[tokio::test]
async fn attempts_go_with_their_retention() {
    let db = Db::sqlite();
    let client = Client::new(&db.unlimited_key());
    let receiver = Receiver::start(vec![500; 10_000]).await;
    let flags = [&TEST_FLAGS[..], &["--event-retention", "2s"]].concat();
    let server = Server::start(&db.url, db.path().to_path_buf(), &flags);
    let mut endpoints = Vec::new();
    for n in 0..4 {
        let url = format!("{}/{n}", receiver.url);
        endpoints.push(json(register(&client, &server, &json!({"url": url})).await).await);
    }
    for n in 0..10 {
        add_pet(&client, &server, &format!("Pet {n}")).await;
    }
    let first = attempts(&client, &server, &endpoints[0], 20).await;
    assert!(first.len() >= 20, "retried: {}", first.len());
    // Until a pause between retries, so that no attempt is in flight at the stop. The next
    // retries come due while the server is down: its start sweeps their events before the
    // worker claims, so none of them is made.
    let mut seen = 0;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = receiver.received().len();
        if now == seen {
            break;
        }
        seen = now;
    }
    assert!(server.stop());
    // The retention, and a second more: the sweep counts it from the start of the second.
    tokio::time::sleep(Duration::from_millis(3000)).await;
    // Read after the wait: the receiver has taken in what reached it before the stop.
    let made = receiver.received().len();
    let server = Server::start(&db.url, db.path().to_path_buf(), &flags);
    let mut left = Vec::new();
    for _ in 0..100 {
        left.clear();
        for endpoint in &endpoints {
            left.extend(attempts(&client, &server, endpoint, 0).await);
        }
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(left.is_empty(), "{} attempts left past their retention", left.len());
    let events = json(client.get(&server.url("/v1/events")).await).await;
    assert_eq!(events, json!([]), "the events went too");
    assert_eq!(receiver.received().len(), made, "no retry came after the restart");
    receiver.stop();
}

/// The median time of `count` createPet calls of `client`'s, one every 10 ms.
async fn create_median(client: &Client, server: &Server, count: usize) -> Duration {
    let mut took = Vec::with_capacity(count);
    for n in 0..count {
        let started = Instant::now();
        let created = client
            .post(
                &server.url("/v1/pets"),
                &json!({"name": format!("Pet {n}"), "categoryId": 1}).to_string(),
            )
            .await;
        took.push(started.elapsed());
        assert_eq!(created.status(), 201);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    took.sort_unstable();
    took[count / 2]
}

/// The lowest of createPet's medians over three windows of 100 writes: another process on
/// the same cores slows one window, while a cost of the endpoints slows every one.
async fn quietest_create_median(client: &Client, server: &Server) -> Duration {
    let mut medians = Vec::with_capacity(3);
    for _ in 0..3 {
        medians.push(create_median(client, server, 100).await);
    }
    medians.into_iter().min().expect("three windows")
}

/// A write costs the same however many endpoints want its event: createPet's median with 50
/// owners' 16 endpoints each, every one refusing connections, is within 1.5 times its
/// median with none, on one server (each the quietest of three windows).
async fn a_write_costs_the_same_with_800_endpoints(db: &Db) {
    let server = Server::start(&db.url, db.path().to_path_buf(), &["--webhooks-allow-private"]);
    let client = Client::new(&db.unlimited_key());
    create_median(&client, &server, 50).await;
    let without = quietest_create_median(&client, &server).await;
    let refusing = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = refusing.local_addr().expect("an address").port();
    drop(refusing);
    for owner in 0..50 {
        let subscriber = Client::new(&db.unlimited_key());
        for n in 0..16 {
            let url = format!("http://127.0.0.1:{port}/{owner}/{n}");
            assert_eq!(register(&subscriber, &server, &json!({"url": url})).await.status(), 201);
        }
    }
    let with = quietest_create_median(&client, &server).await;
    assert!(
        with.as_secs_f64() <= without.as_secs_f64() * 1.5,
        "createPet's median: {without:?} without endpoints, {with:?} with 800"
    );
}

#[tokio::test]
async fn a_write_costs_the_same_with_800_endpoints_on_sqlite() {
    a_write_costs_the_same_with_800_endpoints(&Db::sqlite()).await;
}

#[tokio::test]
async fn a_write_costs_the_same_with_800_endpoints_on_postgres() {
    if let Some(db) = Db::postgres().await {
        a_write_costs_the_same_with_800_endpoints(&db).await;
    }
}
