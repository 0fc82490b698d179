//! A webhook receiver for the load task: answers every request `204 No Content` at once,
//! over kept-alive connections, and counts the requests. A thread per connection; the
//! service's delivery worker opens at most a few dozen.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result};

/// A receiver on 127.0.0.1, until the process ends.
pub struct Receiver {
    /// Its address, `http://127.0.0.1:PORT/hook`.
    pub url: String,
    received: Arc<AtomicU64>,
}

impl Receiver {
    /// Starts one on a free port.
    pub fn start() -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").context("could not bind the receiver")?;
        let port = listener.local_addr()?.port();
        let received = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&received);
        std::thread::Builder::new().name("receiver".to_owned()).spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let counted = Arc::clone(&counted);
                let _ = std::thread::Builder::new()
                    .name("receiver-connection".to_owned())
                    .spawn(move || serve(stream, &counted));
            }
        })?;
        Ok(Self { url: format!("http://127.0.0.1:{port}/hook"), received })
    }

    /// How many requests it has answered.
    pub fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }
}

/// Answers the requests of one connection until it closes.
fn serve(stream: TcpStream, counted: &AtomicU64) {
    let Ok(mut writer) = stream.try_clone() else { return };
    let mut reader = BufReader::new(stream);
    loop {
        let mut length = 0_usize;
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        counted.fetch_add(1, Ordering::Relaxed);
        if writer.write_all(b"HTTP/1.1 204 No Content\r\n\r\n").is_err() {
            return;
        }
    }
}
