//! Slow and broken clients against the real binary: headers, bodies and idle connections
//! each have a deadline, connections are capped, and a request that takes too long is
//! answered 503; meanwhile the server answers everyone else.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::harness::{Client, Server, json};

/// A server on `memory://` (with `options`) and short limits, and its demo key; `extra`
/// adds options or overrides those limits.
fn start(options: &str, extra: &[&str]) -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut args = extra.to_vec();
    for (flag, value) in
        [("--header-timeout", "1s"), ("--body-timeout", "1s"), ("--idle-timeout", "2s")]
    {
        if !extra.contains(&flag) {
            args.extend([flag, value]);
        }
    }
    let server = Server::start(&format!("memory://{options}"), dir.path().to_path_buf(), &args);
    (server, dir)
}

fn connect(server: &Server) -> TcpStream {
    let address = server.base.trim_start_matches("http://");
    let stream = TcpStream::connect(address).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(10))).expect("a read timeout");
    stream
}

/// Reads until the server closes the connection (or 10 s pass): what it sent, and when the
/// close came.
fn read_until_closed(stream: &mut TcpStream) -> (String, Instant) {
    let mut received = Vec::new();
    let mut buffer = [0_u8; 4096];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => {
                return (String::from_utf8_lossy(&received).into_owned(), Instant::now());
            }
            Ok(n) => received.extend_from_slice(&buffer[..n]),
        }
    }
}

/// Whether the server still answers a client with a valid key, now.
async fn serves_others(server: &Server) -> bool {
    let key = server.ready["keys"]["demo"].as_str().expect("the demo key");
    Client::new(key).get(&server.url("/v1/pets")).await.status() == 200
}

#[tokio::test]
async fn headers_that_never_finish_are_cut_off_at_the_header_timeout() {
    let (server, _dir) = start("", &[]);
    let mut slow = connect(&server);
    let began = Instant::now();
    slow.write_all(b"GET /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\n").expect("write");
    // A byte every 200 ms: a trickle must not keep the connection alive.
    let dripping = std::thread::spawn(move || {
        for _ in 0..30 {
            if slow.write_all(b"X").is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        read_until_closed(&mut slow)
    });
    assert!(serves_others(&server).await, "the server answers others meanwhile");
    let (received, closed) = tokio::task::spawn_blocking(move || dripping.join().expect("join"))
        .await
        .expect("the dripping client");
    let held = closed - began;
    assert!(received.is_empty(), "no answer to unfinished headers: {received:?}");
    assert!(held >= Duration::from_millis(900), "not before the header timeout: {held:?}");
    assert!(held < Duration::from_secs(3), "closed within the header timeout: {held:?}");
}

#[tokio::test]
async fn a_body_that_stalls_is_cut_off_at_the_body_timeout() {
    let (server, _dir) = start("", &[]);
    let key = server.ready["keys"]["demo"].as_str().expect("the demo key").to_owned();
    let mut stalled = connect(&server);
    let request = format!(
        "POST /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"name\""
    );
    stalled.write_all(request.as_bytes()).expect("write");
    let began = Instant::now();
    let waiting = std::thread::spawn(move || read_until_closed(&mut stalled));
    assert!(serves_others(&server).await, "the server answers others meanwhile");
    let (received, closed) = tokio::task::spawn_blocking(move || waiting.join().expect("join"))
        .await
        .expect("the stalled client");
    let held = closed - began;
    assert!(received.is_empty(), "the stalled request is not answered: {received:?}");
    assert!(held >= Duration::from_millis(900), "not before the body timeout: {held:?}");
    assert!(held < Duration::from_secs(3), "closed within the body timeout: {held:?}");
    let key = server.ready["keys"]["demo"].as_str().expect("the demo key");
    let pets = json(Client::new(key).get(&server.url("/v1/pets")).await).await;
    assert_eq!(pets, serde_json::json!([]), "nothing was stored");
}

#[tokio::test]
async fn an_idle_keep_alive_connection_closes_after_the_idle_timeout() {
    let (server, _dir) = start("", &[]);
    let mut idle = connect(&server);
    idle.write_all(b"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").expect("write");
    let mut buffer = [0_u8; 4096];
    let n = idle.read(&mut buffer).expect("the response");
    let answered = Instant::now();
    assert!(String::from_utf8_lossy(&buffer[..n]).starts_with("HTTP/1.1 200"));
    // Past the header timeout, the idle connection still serves a second request.
    std::thread::sleep(Duration::from_millis(1_300));
    idle.write_all(b"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").expect("write");
    let n = idle.read(&mut buffer).expect("the second response");
    assert!(String::from_utf8_lossy(&buffer[..n]).starts_with("HTTP/1.1 200"), "kept alive");
    let answered_again = Instant::now();
    let (received, closed) = read_until_closed(&mut idle);
    assert!(received.is_empty(), "{received:?}");
    let held = closed - answered_again;
    assert!(held >= Duration::from_millis(1_900), "not before the idle timeout: {held:?}");
    assert!(held < Duration::from_secs(4), "closed after the idle timeout: {held:?}");
    assert!(closed - answered > Duration::from_secs(3), "the second request reset the clock");
}

#[tokio::test]
async fn connections_over_the_cap_are_answered_503_and_closed() {
    let (server, _dir) = start("", &["--max-connections", "2", "--idle-timeout", "30s"]);
    let mut occupying = [connect(&server), connect(&server)];
    for stream in &mut occupying {
        stream.write_all(b"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").expect("write");
        let mut buffer = [0_u8; 1024];
        assert!(stream.read(&mut buffer).expect("an answer") > 0);
    }
    let mut refused = connect(&server);
    let (received, _) = read_until_closed(&mut refused);
    let (head, body) = received.split_once("\r\n\r\n").expect("a whole response");
    assert!(head.starts_with("HTTP/1.1 503"), "{head}");
    assert!(head.contains("retry-after: 1"), "{head}");
    let body: serde_json::Value = serde_json::from_str(body).expect("the Error body");
    assert_eq!(body["code"], "service_unavailable");
    assert_eq!(body["status"], 503);
    assert!(body["message"].as_str().expect("a message").contains("limit of 2 connections"));

    drop(occupying);
    let mut answered = None;
    for _ in 0..50 {
        let mut stream = connect(&server);
        stream
            .write_all(b"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            .expect("write");
        let (received, _) = read_until_closed(&mut stream);
        if received.starts_with("HTTP/1.1 200") {
            answered = Some(received);
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(answered.is_some(), "a slot freed by a closed connection serves again");
}

#[tokio::test]
async fn a_request_past_the_request_timeout_is_answered_503() {
    let (server, _dir) = start("?latency-ms=3000", &["--request-timeout", "500ms"]);
    let key = server.ready["keys"]["demo"].as_str().expect("the demo key");
    let began = Instant::now();
    let resp = Client::new(key).get(&server.url("/v1/pets")).await;
    let waited = began.elapsed();
    assert_eq!(resp.status(), 503);
    assert_eq!(resp.headers()["retry-after"], "1");
    assert!(resp.headers().contains_key("x-ratelimit-limit"), "the limit headers stay");
    assert!(resp.headers().contains_key("x-request-id"));
    let body = json(resp).await;
    assert_eq!(body["code"], "service_unavailable");
    assert_eq!(body["status"], 503);
    assert!(
        waited >= Duration::from_millis(450) && waited < Duration::from_millis(2_500),
        "{waited:?}"
    );
    let livez = reqwest::get(server.url("/livez")).await.expect("an answer");
    assert_eq!(livez.status(), 200, "the probes answer at once meanwhile");
}
