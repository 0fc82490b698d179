//! Requests a front end and this service could read two ways are refused (a parameter, a
//! JSON key or the `Authorization` header given twice, a body framed both by `Content-Length` and `Transfer-Encoding` or
//! by another `Transfer-Encoding` than `chunked`), and errors echo at most a bounded prefix
//! of what the client sent, in words the client can act on.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::harness::{Client, Db, json, list_all};

#[tokio::test]
async fn repeated_parameters_and_keys_are_refused_naming_them() {
    let db = Db::sqlite();
    let key = db.key("pro");
    let server = db.start();
    let client = Client::new(&key);
    for (query, name) in [
        ("limit=1&limit=2", "limit"),
        ("status=available&status=bogus", "status"),
        ("limit=1&l%69mit=2", "limit"),
    ] {
        let resp = client.get(&server.url(&format!("/v1/pets?{query}"))).await;
        assert_eq!(resp.status(), 400, "{query}");
        let body = json(resp).await;
        assert_eq!(body["code"], "invalid_request");
        let message = body["message"].as_str().expect("a message");
        assert!(
            message.contains(&format!("query parameter {name} is given more than once")),
            "{message}"
        );
    }

    let resp =
        client.post(&server.url("/v1/pets"), r#"{"name":"a","name":"b","categoryId":1}"#).await;
    assert_eq!(resp.status(), 400);
    let body = json(resp).await;
    assert_eq!(body["code"], "invalid_request");
    assert!(body["message"].as_str().expect("a message").contains("key \"name\" more than once"));
    let nested = r#"{"name":"a","categoryId":1,"tags":{"x":1,"x":2}}"#;
    assert_eq!(client.post(&server.url("/v1/pets"), nested).await.status(), 400);
    assert!(list_all(&client, &server).await.is_empty(), "nothing stored");
}

#[tokio::test]
async fn two_authorization_headers_that_differ_are_refused_whichever_comes_first() {
    let db = Db::sqlite();
    let (first, second) = (db.key("pro"), db.key("pro"));
    let server = db.start();
    let http = reqwest::Client::new();
    for keys in [[first.as_str(), &second], [&second, &first], [&second, "as_live_bogus"]] {
        let resp = http
            .post(server.url("/v1/pets"))
            .header("authorization", format!("Bearer {}", keys[0]))
            .header("authorization", format!("Bearer {}", keys[1]))
            .header("content-type", "application/json")
            .body(r#"{"name":"Rex","categoryId":1}"#)
            .send()
            .await
            .expect("a response");
        assert_eq!(resp.status(), 400, "{keys:?}");
        let body = json(resp).await;
        assert_eq!(body["code"], "invalid_request");
        let message = body["message"].as_str().expect("a message");
        assert!(message.contains("Authorization must be sent once"), "{message}");
    }
    assert!(list_all(&Client::new(&first), &server).await.is_empty(), "nothing stored");
    // The same header twice names one key.
    let twice = http
        .get(server.url("/v1/pets"))
        .header("authorization", format!("Bearer {first}"))
        .header("authorization", format!("Bearer {first}"))
        .send()
        .await
        .expect("a response");
    assert_eq!(twice.status(), 200);
}

#[tokio::test]
async fn errors_echo_a_bounded_prefix_and_no_library_words() {
    let db = Db::sqlite();
    let key = db.key("pro");
    let server = db.start();
    let client = Client::new(&key);
    let long = "9".repeat(5_000);
    for path in [
        format!("/v1/pets/{long}"),
        format!("/v1/pets?limit={long}"),
        format!("/v1/pets?status={long}"),
    ] {
        let resp = client.get(&server.url(&path)).await;
        assert_eq!(resp.status(), 400);
        let text = resp.text().await.expect("a body");
        assert!(text.len() < 400, "{} bytes: {text}", text.len());
        assert!(text.contains("(5000 characters)"), "{text}");
    }

    // A chunked body whose chunk size is not hexadecimal.
    let address = server.base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(address).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(5))).expect("a timeout");
    let request = format!(
        "POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\n{{}}\r\n0\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).expect("write");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("chunked encoding is malformed"), "{answer}");
    assert!(!answer.contains("io:") && !answer.contains("error reading a body"), "{answer}");
}

/// Everything the server sends back for `requests`, written at once on a keep-alive
/// connection, and whether it closed the connection within 5 s.
fn pipelined(address: &str, requests: &str) -> (String, bool) {
    let mut stream = TcpStream::connect(address).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(5))).expect("a timeout");
    stream.write_all(requests.as_bytes()).expect("write");
    let mut answer = Vec::new();
    let closed = stream.read_to_end(&mut answer).is_ok();
    (String::from_utf8_lossy(&answer).into_owned(), closed)
}

/// A `createPet` of `name` sent chunked, with `framing` as its framing fields.
fn chunked_create(key: &str, framing: &str, name: &str) -> String {
    let body = format!(r#"{{"name":"{name}","categoryId":1}}"#);
    format!(
        "POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nX-Request-Id: framing-1\r\n{framing}\r\n\
         {:x}\r\n{body}\r\n0\r\n\r\n",
        body.len()
    )
}

/// A valid `createPet` of `name`, framed by `Content-Length`.
fn plain_create(key: &str, name: &str) -> String {
    let body = format!(r#"{{"name":"{name}","categoryId":1}}"#);
    format!(
        "POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// `Content-Length` with `Transfer-Encoding`, and a `Transfer-Encoding` other than one
/// `chunked`, are answered 400 `invalid_request` with `Connection: close`, in the Error body
/// and with the headers of every answer; the connection closes after it, so that the request
/// pipelined behind it never runs, and nothing is stored.
#[tokio::test]
async fn ambiguous_framing_is_refused_and_the_connection_closed() {
    let db = Db::sqlite();
    let key = db.key("pro");
    let server = db.start();
    let client = Client::new(&key);
    let address = server.base.trim_start_matches("http://");
    for framing in [
        // A proxy that goes by Content-Length reads 5 bytes of body, and the rest as a request.
        "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
        "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
        "Transfer-Encoding: chunked, chunked\r\n",
        "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
        "Transfer-Encoding: gzip, chunked\r\n",
    ] {
        let requests = format!(
            "{}{}",
            chunked_create(&key, framing, "Smuggled"),
            plain_create(&key, "Second")
        );
        let (answer, closed) = pipelined(address, &requests);
        assert!(answer.starts_with("HTTP/1.1 400 "), "{framing:?}: {answer}");
        assert_eq!(answer.matches("HTTP/1.1 ").count(), 1, "{framing:?}: one answer: {answer}");
        assert!(closed, "{framing:?}: the connection is closed after the answer: {answer}");
        let (head, body) = answer.split_once("\r\n\r\n").expect("a head and a body");
        let head = head.to_ascii_lowercase();
        for header in [
            "connection: close",
            "x-request-id: framing-1",
            "x-content-type-options: nosniff",
            "content-type: application/json",
        ] {
            assert!(head.contains(header), "{framing:?}: {header}: {head}");
        }
        let body: serde_json::Value = serde_json::from_str(body).expect("the Error body");
        assert_eq!(body["code"], "invalid_request", "{framing:?}: {body}");
        assert_eq!(body["status"], 400, "{framing:?}: {body}");
        assert!(body["message"].as_str().is_some_and(|m| m.contains("Transfer-Encoding")));
    }
    assert!(list_all(&client, &server).await.is_empty(), "nothing stored");
}

/// A `Transfer-Encoding` whose last coding is not `chunked` is refused by hyper itself,
/// before the service sees it: a 400 without the Error body, and the close. The request
/// behind it does not run either.
#[tokio::test]
async fn a_transfer_coding_hyper_cannot_read_is_refused_before_the_service() {
    let db = Db::sqlite();
    let key = db.key("pro");
    let server = db.start();
    let client = Client::new(&key);
    let address = server.base.trim_start_matches("http://");
    for framing in ["Transfer-Encoding: gzip\r\n", "Transfer-Encoding: chunked, gzip\r\n"] {
        let requests = format!(
            "{}{}",
            chunked_create(&key, framing, "Smuggled"),
            plain_create(&key, "Second")
        );
        let (answer, closed) = pipelined(address, &requests);
        assert!(answer.starts_with("HTTP/1.1 400 "), "{framing:?}: {answer}");
        assert_eq!(answer.matches("HTTP/1.1 ").count(), 1, "{framing:?}: one answer: {answer}");
        assert!(answer.to_ascii_lowercase().contains("connection: close"), "{answer}");
        assert!(closed, "{framing:?}: the connection is closed after the answer");
    }
    assert!(list_all(&client, &server).await.is_empty(), "nothing stored");
}

/// A valid chunked request, and one framed by `Content-Length`, pipelined on one connection,
/// both run: the refusals above are of the ambiguous forms only.
#[tokio::test]
async fn plain_chunked_and_content_length_requests_pipelined_both_run() {
    let db = Db::sqlite();
    let key = db.key("pro");
    let server = db.start();
    let client = Client::new(&key);
    let address = server.base.trim_start_matches("http://");
    let requests = format!(
        "{}{}",
        chunked_create(&key, "Transfer-Encoding: Chunked\r\n", "First"),
        plain_create(&key, "Second").replacen("\r\n", "\r\nConnection: close\r\n", 1)
    );
    let (answer, closed) = pipelined(address, &requests);
    assert_eq!(answer.matches("HTTP/1.1 201 ").count(), 2, "{answer}");
    assert!(closed);
    let names: Vec<_> =
        list_all(&client, &server).await.into_values().map(|pet| pet["name"].clone()).collect();
    assert_eq!(names, ["First", "Second"]);
}
