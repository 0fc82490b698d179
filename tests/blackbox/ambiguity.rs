//! Requests a front end and this service could read two ways are refused, and errors echo
//! at most a bounded prefix of what the client sent, in words the client can act on.

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
