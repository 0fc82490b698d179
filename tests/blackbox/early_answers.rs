//! Answers given before a request's body was read leave the connection usable, or say that
//! it closes: a keep-alive client never meets a broken pipe on its next request.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::harness::{Db, Server};

/// A key of the right shape that no server issued.
const WRONG_KEY: &str = "as_live_aaaaaaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

/// One response as read off the wire.
struct Answer {
    status: u16,
    closes: bool,
}

/// A keep-alive connection that sends a request's head and body apart, as many client
/// libraries do, so that an early answer can come before the body.
struct Connection {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Connection {
    fn open(server: &Server) -> Self {
        let address = server.base.trim_start_matches("http://");
        let stream = TcpStream::connect(address).expect("connect");
        stream.set_nodelay(true).expect("no delay");
        stream.set_read_timeout(Some(Duration::from_secs(5))).expect("a read timeout");
        Self {
            writer: stream.try_clone().expect("a second handle"),
            reader: BufReader::new(stream),
        }
    }

    /// Sends a POST of `body` with `key`, then reads its answer.
    fn post(&mut self, key: &str, content_type: &str, body: &[u8]) -> std::io::Result<Answer> {
        let head = format!(
            "POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n\
             Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        self.writer.write_all(head.as_bytes())?;
        std::thread::sleep(Duration::from_millis(2));
        self.writer.write_all(body)?;
        self.answer()
    }

    fn answer(&mut self) -> std::io::Result<Answer> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let status = line.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        let (mut length, mut closes) = (0, false);
        loop {
            line.clear();
            self.reader.read_line(&mut line)?;
            let header = line.trim_end().to_ascii_lowercase();
            if header.is_empty() {
                break;
            }
            if let Some(value) = header.strip_prefix("content-length:") {
                length = value.trim().parse().unwrap_or(0);
            }
            closes |= header == "connection: close";
        }
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body)?;
        Ok(Answer { status, closes })
    }
}

#[test]
fn refusals_before_the_body_keep_a_keep_alive_connection_working() {
    let db = Db::sqlite();
    let server = db.start();
    let body = format!(r#"{{"name":"{}","categoryId":1}}"#, "x".repeat(94));
    assert_eq!(body.len(), 120);
    let mut connection = Connection::open(&server);
    let (mut unauthorized, mut limited, mut reopened) = (0, 0, 0);
    for i in 0..200 {
        let answer = connection
            .post(WRONG_KEY, "application/json", body.as_bytes())
            .unwrap_or_else(|err| panic!("request {i} on a kept-alive connection: {err}"));
        match answer.status {
            401 => unauthorized += 1,
            429 => limited += 1,
            status => panic!("request {i}: status {status}"),
        }
        if answer.closes {
            reopened += 1;
            connection = Connection::open(&server);
        }
    }
    assert!(
        unauthorized >= 60 && limited >= 80,
        "the address quota, then 429: {unauthorized}, {limited}"
    );
    assert_eq!(reopened, 0, "a 120-byte body is read away and the connection kept");
}

#[test]
fn a_body_too_long_or_too_slow_to_read_away_gets_its_answer_and_a_close() {
    let db = Db::sqlite();
    let key = db.key("pro");
    let server = db.start();

    // A wrong content type with a small body: 415, and the connection goes on.
    let mut connection = Connection::open(&server);
    let answer = connection.post(&key, "text/plain", b"name=Rex").expect("an answer");
    assert_eq!((answer.status, answer.closes), (415, false));
    // Over the 16 KiB limit, with little enough left to read away: 413, kept.
    let answer =
        connection.post(&key, "application/json", &vec![b' '; 40 * 1024]).expect("an answer");
    assert_eq!((answer.status, answer.closes), (413, false));
    let answer = connection.post(&key, "application/json", br#"{"name":"Rex","categoryId":1}"#);
    assert_eq!(answer.expect("the connection still works").status, 201);

    // A body that stops arriving, on a request refused before it is read: the answer comes,
    // says it closes, and the server closes.
    let server =
        Server::start(&db.url, db.path().to_path_buf(), &["--per-address-per-minute", "1"]);
    let mut connection = Connection::open(&server);
    let answer = connection.post(WRONG_KEY, "application/json", b"{}").expect("an answer");
    assert_eq!((answer.status, answer.closes), (401, false), "the address's one request");
    let head = format!(
        "POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {WRONG_KEY}\r\n\
         Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"name\""
    );
    connection.writer.write_all(head.as_bytes()).expect("send");
    let started = Instant::now();
    let answer = connection.answer().expect("an answer");
    assert_eq!((answer.status, answer.closes), (429, true));
    assert!(started.elapsed() < Duration::from_secs(3), "answered within the read-away time");
    let mut rest = Vec::new();
    let closed = connection.reader.read_to_end(&mut rest);
    assert!(matches!(closed, Ok(0)), "the server closed the connection: {closed:?}");
}
