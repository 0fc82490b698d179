//! PostgreSQL connections for the pet reads: a few, shared, each read pipelined on one.
//!
//! A pool hands each read a connection of its own: a read is then one round trip on that
//! connection, and the server's process behind it sleeps and wakes once per read. Here a few
//! connections of tokio-postgres are shared by every read instead, taken in turn: reads that
//! meet on one connection are written to the server together and answered together, so that
//! under load one write, one read and one wake-up on either side serve many. Each connection
//! prepares a statement once and keeps it (at most [`PREPARED`]), and rows are read by
//! position, not by name.
//!
//! - A connection with no read on it, idle for [`PING_IF_IDLE_FOR`] or longer, is pinged
//!   before a read uses it, in case the server, a proxy or a firewall dropped it meanwhile;
//!   one the server closed is replaced at once.
//! - A read abandoned before its answer (the request was cancelled) leaves its connection in
//!   step: the connection reads the rest of that answer and drops it.
//! - A read that waits for a lock holds up the reads queued behind it on its connection, not
//!   the others.
//!
//! The statements are the repository's own, built by SeaORM for PostgreSQL; the URL is read
//! by sqlx, as the rest of the service reads it (see [`config`]).

mod config;
mod errors;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use sea_orm::DbErr;
use sea_orm::sqlx::Error;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls, Row, Statement};

use config::config;
use errors::{connection_error, ends_the_connection, sqlx_error};

/// A connection idle for this long is pinged before a read uses it.
pub(super) const PING_IF_IDLE_FOR: Duration = Duration::from_secs(1);

/// How many statements a connection keeps prepared; past it, it forgets them all. The pet
/// reads have about 800: each shape, status and size of a page.
const PREPARED: usize = 1024;

/// Shared PostgreSQL connections for reads. Cheap to clone: clones share the connections.
#[derive(Clone)]
pub(super) struct PgReaders(Arc<Shared>);

struct Shared {
    config: tokio_postgres::Config,
    /// How long opening a connection, or pinging one, may take.
    timeout: Duration,
    slots: Box<[Slot]>,
    /// The slot the next read takes.
    next: AtomicUsize,
    closed: AtomicBool,
}

/// One of the connections, open or not yet.
#[derive(Default)]
struct Slot {
    link: Mutex<Option<Arc<Link>>>,
    /// Held while a connection is opened for this slot, so that the reads that find it empty
    /// at once open one between them, not one each. It holds the last failure to open one,
    /// and when: the reads that waited meanwhile fail with it rather than wait as long again.
    opening: tokio::sync::Mutex<Option<(Instant, DbErr)>>,
}

impl Slot {
    /// Forgets this slot's connection if it is still `link`.
    fn forget(&self, link: &Arc<Link>) {
        let mut current = lock(&self.link);
        if current.as_ref().is_some_and(|c| Arc::ptr_eq(c, link)) {
            current.take();
        }
    }
}

/// An open connection.
struct Link {
    client: Client,
    statements: Mutex<HashMap<Box<str>, Statement>>,
    /// The reads it serves now.
    reads: AtomicUsize,
    /// When it last served a read.
    last_used: Mutex<Instant>,
}

impl PgReaders {
    /// Up to `size` connections to `url`, opened as reads need them. Opening one, or pinging
    /// one, gives up after `timeout`.
    pub(super) fn new(url: &str, size: usize, timeout: Duration) -> Result<Self, DbErr> {
        let config = config(url).map_err(connection_error)?;
        let slots = (0..size.max(1)).map(|_| Slot::default()).collect();
        Ok(Self(Arc::new(Shared {
            config,
            timeout,
            slots,
            next: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
        })))
    }

    /// Runs `sql` with `params`, and turns each row into a value with `decode`. When the
    /// server closed the connection (it terminated it, or restarted), the connection is
    /// replaced, and a read that did not open it itself is tried again on the new one: a read
    /// can be repeated, and the client need not see that failure. A new connection's failure
    /// is the read's.
    ///
    /// The read's future is boxed: a future that runs either an SQLite read or this one is
    /// then as large as the SQLite read's, not as this one's (2.2 KB), and is moved at that
    /// size from layer to layer on every request.
    pub(super) fn query<'a, T: Send + 'a>(
        &'a self,
        sql: &'a str,
        params: &'a [&'a (dyn ToSql + Sync)],
        decode: impl Fn(&Row) -> Result<T, tokio_postgres::Error> + Send + 'a,
    ) -> BoxFuture<'a, Result<Vec<T>, DbErr>> {
        Box::pin(self.query_in_place(sql, params, decode))
    }

    /// [`PgReaders::query`], unboxed.
    async fn query_in_place<T>(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
        decode: impl Fn(&Row) -> Result<T, tokio_postgres::Error>,
    ) -> Result<Vec<T>, DbErr> {
        let shared = &self.0;
        let slot = shared.next.fetch_add(1, Ordering::Relaxed) % shared.slots.len();
        let mut tries = shared.slots.len() + 1;
        loop {
            tries -= 1;
            let (link, opened) = shared.link(slot).await?;
            let rows = link.query(sql, params).await;
            match rows {
                Ok(rows) => {
                    return rows
                        .iter()
                        .map(decode)
                        .collect::<Result<_, _>>()
                        .map_err(|err| DbErr::Type(format!("a row read from PostgreSQL: {err}")));
                }
                Err(err) if link.client.is_closed() || ends_the_connection(&err) => {
                    shared.slots[slot].forget(&link);
                    if opened || tries == 0 {
                        return Err(DbErr::Query(sqlx_error(err)));
                    }
                }
                // The server answered, and the connection goes on: it is in step.
                Err(err) => return Err(DbErr::Query(sqlx_error(err))),
            }
        }
    }

    /// Opens the first connection, so that one that cannot be opened (a wrong password, an
    /// unknown database) is a start-up error.
    pub(super) async fn open(&self) -> Result<(), DbErr> {
        self.0.link(0).await.map(drop)
    }

    /// The open connections, and how many of them serve no read now.
    pub(super) fn connections(&self) -> (usize, usize) {
        let links = self.0.slots.iter().filter_map(|slot| lock(&slot.link).clone());
        links.fold((0, 0), |(open, idle), link| {
            (open + 1, idle + usize::from(link.reads.load(Ordering::Relaxed) == 0))
        })
    }

    /// Closes the connections; reads from then on fail.
    pub(super) fn close(&self) {
        self.0.closed.store(true, Ordering::Release);
        for slot in &self.0.slots {
            lock(&slot.link).take();
        }
    }
}

impl Shared {
    /// The open connection of `slot`, opened now if there is none, and whether it was.
    async fn link(&self, slot: usize) -> Result<(Arc<Link>, bool), DbErr> {
        if self.closed.load(Ordering::Acquire) {
            return Err(connection_error(Error::PoolClosed));
        }
        let slot = &self.slots[slot];
        if let Some(link) = self.usable(slot).await {
            return Ok((link, false));
        }
        let waiting_since = Instant::now();
        let mut failed = slot.opening.lock().await;
        if let Some(link) = self.usable(slot).await {
            return Ok((link, false));
        }
        if let Some((at, err)) = failed.as_ref()
            && *at >= waiting_since
        {
            return Err(err.clone());
        }
        match self.open().await {
            Ok(link) => {
                let link = Arc::new(link);
                *failed = None;
                *lock(&slot.link) = Some(Arc::clone(&link));
                Ok((link, true))
            }
            Err(err) => {
                *failed = Some((Instant::now(), err.clone()));
                Err(err)
            }
        }
    }

    /// The connection of `slot`, unless there is none, or the server closed it, or it was
    /// idle and does not answer a ping.
    async fn usable(&self, slot: &Slot) -> Option<Arc<Link>> {
        let link = lock(&slot.link).clone().filter(|link| !link.client.is_closed())?;
        if link.reads.load(Ordering::Relaxed) > 0 || link.idle_for() < PING_IF_IDLE_FOR {
            return Some(link);
        }
        let ping = tokio::time::timeout(self.timeout, link.client.simple_query("")).await;
        if matches!(ping, Ok(Ok(_))) {
            *lock(&link.last_used) = Instant::now();
            return Some(link);
        }
        slot.forget(&link);
        None
    }

    /// Opens a connection, and drives it on a task of its own until it closes.
    async fn open(&self) -> Result<Link, DbErr> {
        let connecting = tokio::time::timeout(self.timeout, self.config.connect(NoTls));
        let (client, connection) = match connecting.await {
            Ok(Ok(opened)) => opened,
            Ok(Err(err)) => return Err(DbErr::Conn(sqlx_error(err))),
            Err(_) => {
                let timed_out = std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("opening a connection took more than {:?}", self.timeout),
                );
                return Err(connection_error(Error::Io(timed_out)));
            }
        };
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                tracing::debug!(error = %err, "a PostgreSQL connection for reads closed");
            }
        });
        Ok(Link {
            client,
            statements: Mutex::default(),
            reads: AtomicUsize::new(0),
            last_used: Mutex::new(Instant::now()),
        })
    }
}

impl Link {
    /// Runs `sql` on this connection, prepared once.
    async fn query(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, tokio_postgres::Error> {
        let _reading = Reading::new(self);
        let prepared = lock(&self.statements).get(sql).cloned();
        let statement = if let Some(statement) = prepared {
            statement
        } else {
            let statement = self.client.prepare(sql).await?;
            let mut statements = lock(&self.statements);
            if statements.len() >= PREPARED {
                statements.clear();
            }
            statements.insert(sql.into(), statement.clone());
            statement
        };
        let rows = self.client.query(&statement, params).await;
        if let Err(err) = &rows
            && err.code().is_some_and(|code| {
                *code == SqlState::INVALID_SQL_STATEMENT_NAME
                    || *code == SqlState::FEATURE_NOT_SUPPORTED
            })
        {
            // The statement is gone from the server, or its plan no longer fits the schema
            // ("cached plan must not change result type"): the next read prepares it anew.
            lock(&self.statements).remove(sql);
        }
        rows
    }

    fn idle_for(&self) -> Duration {
        lock(&self.last_used).elapsed()
    }
}

/// A read a connection serves, counted from its start to its end or its abandonment.
struct Reading<'a>(&'a Link);

impl<'a> Reading<'a> {
    fn new(link: &'a Link) -> Self {
        link.reads.fetch_add(1, Ordering::Relaxed);
        *lock(&link.last_used) = Instant::now();
        Self(link)
    }
}

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        self.0.reads.fetch_sub(1, Ordering::Relaxed);
        *lock(&self.0.last_used) = Instant::now();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use sea_orm::DbErr;

    use super::PgReaders;

    /// A server that accepts connections and never answers: each open times out. The reads
    /// that waited for one open fail with its failure, instead of timing out one after
    /// another (eight reads on two connections would take four timeouts).
    #[tokio::test]
    async fn the_reads_waiting_for_an_open_that_fails_fail_with_it() {
        let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("a listener");
        let url = format!("postgres://animal@{}/pets", silent.local_addr().expect("an address"));
        let timeout = Duration::from_millis(500);
        let readers = PgReaders::new(&url, 2, timeout).expect("readers");
        let started = Instant::now();
        let reads = (0..8).map(|_| readers.query("SELECT 1", &[], |_| Ok(())));
        for read in futures_util::future::join_all(reads).await {
            assert!(matches!(read, Err(DbErr::Conn(_))), "{read:?}");
        }
        let took = started.elapsed();
        assert!(took < timeout * 3, "the reads took {took:?}");
        drop(silent);
    }
}
