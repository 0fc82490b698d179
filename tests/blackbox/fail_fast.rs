//! PostgreSQL going away under a running server: after the first failure, requests get
//! their 503 at once, and the server serves again by itself when the database is back.
//!
//! The server reaches the throwaway PostgreSQL through [`Cutoff`], a TCP relay on
//! 127.0.0.1 that the test can cut (every connection closed, new ones refused: what a
//! stopped server or a lost network looks like to a client) and restore, without stopping
//! the PostgreSQL that other tests share.

use std::time::{Duration, Instant};

use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use crate::harness::{Client, Db, Server, json};

/// A TCP relay to one address that can be cut and restored.
struct Cutoff {
    port: u16,
    target: String,
    relay: Option<tokio::task::JoinHandle<()>>,
}

impl Cutoff {
    async fn start(target: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
        let port = listener.local_addr().expect("an address").port();
        let mut cutoff = Self { port, target: target.to_owned(), relay: None };
        cutoff.relay = Some(tokio::spawn(relay(listener, cutoff.target.clone())));
        cutoff
    }

    /// Closes every relayed connection and refuses new ones.
    async fn cut(&mut self) {
        if let Some(relay) = self.relay.take() {
            relay.abort();
            let _ = relay.await;
        }
    }

    /// Relays again, on the same port.
    async fn restore(&mut self) {
        let listener =
            TcpListener::bind(("127.0.0.1", self.port)).await.expect("the relay's port again");
        self.relay = Some(tokio::spawn(relay(listener, self.target.clone())));
    }
}

/// Relays every connection `listener` accepts to `target`; aborting it closes them all.
async fn relay(listener: TcpListener, target: String) {
    let mut connections = JoinSet::new();
    loop {
        let Ok((mut client, _)) = listener.accept().await else { continue };
        let target = target.clone();
        connections.spawn(async move {
            if let Ok(mut server) = TcpStream::connect(&target).await {
                let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
            }
        });
    }
}

/// One `createPet`: its status, whether a 503 said when to retry, and how long it took.
async fn create(client: &Client, server: &Server) -> (u16, bool, Duration) {
    let began = Instant::now();
    let resp = client.post(&server.url("/v1/pets"), r#"{"name":"Rex","categoryId":1}"#).await;
    let took = began.elapsed();
    let status = resp.status().as_u16();
    let retry_after = resp.headers().get("retry-after").is_some_and(|v| v == "1");
    if status == 503 {
        assert_eq!(json(resp).await["code"], "service_unavailable");
    }
    (status, retry_after, took)
}

// Two workers: the relay runs while the test waits for the server to start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_fail_fast_while_postgres_is_unreachable_and_recover_by_themselves() {
    let Some(db) = Db::postgres().await else {
        return;
    };
    let key = db.unlimited_key();
    let (rest, _) = db.url.rsplit_once('@').expect("a URL with a host");
    let (host, database) = db.url[rest.len() + 1..].split_once('/').expect("a database");
    let mut cutoff = Cutoff::start(host).await;
    let relayed = format!("{rest}@127.0.0.1:{}/{database}", cutoff.port);
    let server = Server::start(&relayed, db.path().to_path_buf(), &[]);
    let client = Client::new(&key);
    assert_eq!(create(&client, &server).await.0, 201);

    cutoff.cut().await;
    // The first request finds the database gone; it may take up to the pool's wait.
    let (status, retry_after, _) = create(&client, &server).await;
    assert_eq!((status, retry_after), (503, true));
    let mut slowest = Duration::ZERO;
    for _ in 0..20 {
        let (status, retry_after, took) = create(&client, &server).await;
        assert_eq!((status, retry_after), (503, true), "every request is refused meanwhile");
        slowest = slowest.max(took);
        let began = Instant::now();
        let listed = client.get(&server.url("/v1/pets")).await;
        assert_eq!(listed.status(), 503);
        slowest = slowest.max(began.elapsed());
    }
    assert!(
        slowest < Duration::from_millis(100),
        "503s within 100 ms; the slowest took {slowest:?}"
    );
    let began = Instant::now();
    let readyz = reqwest::get(server.url("/readyz")).await.expect("an answer");
    assert!(began.elapsed() < Duration::from_millis(100), "readiness answers at once too");
    assert_eq!(readyz.status(), 503);
    let body = json(readyz).await;
    assert!(body["message"].as_str().expect("a message").starts_with("database is not ready"));

    cutoff.restore().await;
    let mut recovered = None;
    for attempt in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if create(&client, &server).await.0 == 201 {
            recovered = Some(attempt);
            break;
        }
    }
    assert!(recovered.is_some(), "201s again within 10 s, without a restart");
    assert_eq!(reqwest::get(server.url("/readyz")).await.expect("an answer").status(), 200);
    let pets = json(client.get(&server.url("/v1/pets?limit=100")).await).await;
    assert_eq!(pets.as_array().expect("an array").len(), 2, "the pets before and after: {pets}");
    server.stderr_line(|line| line.contains("the database answers again").then_some(()));
}
