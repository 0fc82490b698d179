//! A TCP relay between the server and its database that a test can cut: while cut, every
//! connection through it is closed, open or new, as a stopped database server's would be.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// A relay on a free port of 127.0.0.1 to one upstream address.
pub struct Relay {
    pub port: u16,
    cut: Arc<AtomicBool>,
    cuts: watch::Sender<u64>,
}

impl Relay {
    /// Relays to `upstream` (`host:port`).
    pub async fn to(upstream: String) -> Self {
        Self::late(upstream, Duration::ZERO).await
    }

    /// Relays to `upstream`, passing every chunk on `delay` late in each direction, as a
    /// database that answers late does.
    pub async fn late(upstream: String, delay: Duration) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind the relay");
        let port = listener.local_addr().expect("its address").port();
        let cut = Arc::new(AtomicBool::new(false));
        let (cuts, _) = watch::channel(0);
        let relay = Self { port, cut: Arc::clone(&cut), cuts: cuts.clone() };
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if cut.load(Ordering::Acquire) {
                    drop(client);
                    continue;
                }
                let (upstream, mut cut_now) = (upstream.clone(), cuts.subscribe());
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(&upstream).await else { return };
                    let (client_read, client_write) = client.into_split();
                    let (server_read, server_write) = server.into_split();
                    tokio::select! {
                        () = pass_on(client_read, server_write, delay) => {}
                        () = pass_on(server_read, client_write, delay) => {}
                        _ = cut_now.changed() => {}
                    }
                });
            }
        });
        relay
    }

    /// The PostgreSQL URL `url` with its host and port replaced by the relay's.
    pub fn postgres_url(&self, url: &str) -> String {
        let (scheme_and_user, rest) = url.rsplit_once('@').expect("a URL with user@host");
        let (_, database) = rest.split_once('/').expect("a URL with a database");
        format!("{scheme_and_user}@127.0.0.1:{}/{database}", self.port)
    }

    /// Cuts every connection, and closes new ones at once, until [`Self::mend`].
    pub fn cut(&self) {
        self.cut.store(true, Ordering::Release);
        self.cuts.send_modify(|n| *n += 1);
    }

    /// Lets connections through again.
    pub fn mend(&self) {
        self.cut.store(false, Ordering::Release);
    }
}

/// Copies what `from` reads to `to`, each chunk `delay` late, until either side closes.
async fn pass_on(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    delay: Duration,
) {
    let mut chunk = vec![0; 64 * 1024];
    while let Ok(read @ 1..) = from.read(&mut chunk).await {
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        if to.write_all(&chunk[..read]).await.is_err() {
            return;
        }
    }
}

/// The `host:port` of a PostgreSQL URL.
pub fn postgres_address(url: &str) -> String {
    let (_, rest) = url.rsplit_once('@').expect("a URL with user@host");
    let (address, _) = rest.split_once('/').expect("a URL with a database");
    address.to_owned()
}
