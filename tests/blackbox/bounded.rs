//! Nothing a client sends comes back or reaches the log whole: 100 KB in a method, a path, a
//! query, a header or a body field adds at most a few KiB to the log and to the answer, and
//! an error message quotes at most 32 characters of a refused value.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::harness::{Client, Db, Server, json};

/// What a client puts in one field.
const HUGE: usize = 100 * 1024;
/// A request target under hyper's limit (64 KiB), which reaches the app; a longer one is
/// refused by hyper with a bare 414.
const LONG_TARGET: usize = 60_000;
/// A body field under the 16 KiB body limit, which reaches the operation.
const LONG_FIELD: usize = 15_000;
/// The most one request may add to the log, and the largest answer.
const BOUND: usize = 4 * 1024;
/// Time for the log's queued lines to reach stderr (its writer thread writes them as they
/// come) and for the harness to read them from the pipe.
const LINES_WRITTEN: Duration = Duration::from_millis(300);

/// One request, as raw bytes: hyper's client would refuse some of these heads.
fn request(method: &str, target: &str, headers: &[(&str, &str)], body: &str) -> Vec<u8> {
    let mut head = format!("{method} {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n");
    for (name, value) in headers {
        let _ = write!(head, "{name}: {value}\r\n");
    }
    if !body.is_empty() {
        let _ = write!(head, "Content-Length: {}\r\n", body.len());
    }
    head.push_str("\r\n");
    head.push_str(body);
    head.into_bytes()
}

/// The whole answer to `request`, read until the server closes.
fn exchange(server: &Server, request: &[u8]) -> Vec<u8> {
    let address = server.base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(address).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(10))).expect("a read timeout");
    // A server that answers before reading a long body may close before taking all of it,
    // and the reset may follow its answer: what arrived is the answer.
    let _ = stream.write_all(request);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    answer
}

/// The status of an answer.
fn status(answer: &[u8]) -> u16 {
    let text = String::from_utf8_lossy(answer);
    text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
}

#[test]
fn a_huge_value_in_any_field_adds_little_to_the_log_and_the_answer() {
    let db = Db::sqlite();
    let key = db.key("pro");
    let bearer = format!("Bearer {key}");
    let auth = ("Authorization", bearer.as_str());
    let json_body = ("Content-Type", "application/json");
    let server =
        Server::start_logging(&db.url, db.path().to_path_buf(), &["--log-format", "json"], "info");
    let get = |target: String, extra: Option<(&str, &str)>| {
        request("GET", &target, &[auth, extra.unwrap_or(auth)], "")
    };
    let post = |extra: (&str, &str), body: &str| request("POST", "/v1/pets", &[auth, extra], body);
    let pet = r#"{"name":"Rex","categoryId":1}"#;
    let huge = |c: &str| c.repeat(HUGE);
    let target = |c: &str| c.repeat(LONG_TARGET);
    let field = |c: &str| c.repeat(LONG_FIELD);
    let script_type = format!("text/html; x=<script>{}", huge("s"));
    let bearer_huge = format!("Bearer {}", huge("k"));
    let (agent, request_id, forwarded, retry_key) = (huge("u"), huge("r"), huge("1"), huge("i"));
    let name_huge = format!(r#"{{"name":"{}","categoryId":1}}"#, huge("n"));
    let name_long = format!(r#"{{"name":"{}","categoryId":1}}"#, field("n"));
    let status_long = format!(r#"{{"name":"Rex","categoryId":1,"status":"{}"}}"#, field("s"));
    let category_long = format!(r#"{{"name":"Rex","categoryId":{}}}"#, field("9"));
    // Twice in the body, which must stay under the body limit.
    let json_key = "k".repeat(LONG_FIELD / 2);
    let repeated_key = format!(r#"{{"{json_key}":1,"{json_key}":2}}"#);
    let cases: Vec<(&str, u16, Vec<u8>)> = vec![
        ("method", 405, request(&huge("A"), "/v1/pets", &[auth], "")),
        ("huge path", 414, get(format!("/v1/pets/{}", huge("9")), None)),
        ("path", 400, get(format!("/v1/pets/{}", target("9")), None)),
        ("unknown path", 404, get(format!("/v1/{}", target("p")), None)),
        ("huge query", 414, get(format!("/v1/pets?limit={}", huge("9")), None)),
        ("limit", 400, get(format!("/v1/pets?limit={}", target("9")), None)),
        ("status parameter", 400, get(format!("/v1/pets?status={}", target("s")), None)),
        ("cursor", 400, get(format!("/v1/pets?cursor={}", target("c")), None)),
        ("unknown parameter", 200, get(format!("/v1/pets?x={}", target("x")), None)),
        ("User-Agent", 200, get("/v1/pets".into(), Some(("User-Agent", &agent)))),
        ("X-Request-Id", 200, get("/v1/pets".into(), Some(("X-Request-Id", &request_id)))),
        ("X-Forwarded-For", 200, get("/v1/pets".into(), Some(("X-Forwarded-For", &forwarded)))),
        ("Authorization", 401, request("GET", "/v1/pets", &[("Authorization", &bearer_huge)], "")),
        ("Content-Type", 415, post(("Content-Type", &script_type), pet)),
        ("Idempotency-Key", 400, {
            request("POST", "/v1/pets", &[auth, json_body, ("Idempotency-Key", &retry_key)], pet)
        }),
        ("name over the body limit", 413, post(json_body, &name_huge)),
        ("name", 400, post(json_body, &name_long)),
        ("status field", 400, post(json_body, &status_long)),
        ("categoryId", 400, post(json_body, &category_long)),
        ("repeated key", 400, post(json_body, &repeated_key)),
    ];
    for (i, (field, expected, raw)) in cases.iter().enumerate() {
        let before = server.stderr_bytes();
        let answer = exchange(&server, raw);
        let shown = String::from_utf8_lossy(&answer[..answer.len().min(600)]).into_owned();
        assert_eq!(status(&answer), *expected, "{field}: {shown}");
        assert!(answer.len() < BOUND, "{field}: an answer of {} bytes: {shown}", answer.len());
        // The next request's line, and then time for the lines queued before it to reach
        // stderr, so that every line of this one is in and none is left for the next case.
        let marker = format!("marker-{i}");
        let next = request("GET", "/v1/pets?limit=1", &[auth, ("X-Request-Id", &marker)], "");
        assert_eq!(status(&exchange(&server, &next)), 200);
        let marker_line = server.stderr_line(|line| line.contains(&marker).then_some(line.len()));
        std::thread::sleep(LINES_WRITTEN);
        let added = server.stderr_bytes() - before - (marker_line + 1);
        assert!(added < BOUND, "{field}: {added} bytes of log");
    }
    assert!(server.stderr_contains("... (102400 characters)"), "the method's excerpt is logged");
}

/// A `Content-Type` that carries markup comes back as its first 32 characters and its
/// length, in the JSON Error body.
#[tokio::test]
async fn a_refused_content_type_is_quoted_to_32_characters() {
    let db = Db::sqlite();
    let key = db.key("pro");
    let server = db.start();
    let content_type = "text/html; x=<script>alert(document.cookie)</script>";
    let resp = Client::new(&key)
        .raw()
        .post(server.url("/v1/pets"))
        .bearer_auth(&key)
        .header("content-type", content_type)
        .body(r#"{"name":"Rex","categoryId":1}"#)
        .send()
        .await
        .expect("a response");
    assert_eq!(resp.status(), 415);
    let body = json(resp).await;
    assert_eq!(body["code"], "unsupported_media_type");
    let message = body["message"].as_str().expect("a message");
    let quoted = message.split_once("not \"").map(|(_, after)| after).expect("a quote");
    let (shown, length) = quoted.split_once("... (").expect("an excerpt");
    assert_eq!(shown, "text/html; x=<script>alert(docum", "{message}");
    assert_eq!(shown.chars().count(), 32);
    assert_eq!(length, format!("{} characters)\"", content_type.len()), "{message}");
    assert!(!message.contains("cookie") && !message.contains("</script>"), "{message}");
}
