//! Opening a database: the URL read, the SQLite file created readable by its owner only,
//! and the pools tuned (WAL, `synchronous=FULL`, busy timeout, bounded WAL) for readers and
//! for the writer.

use std::sync::Arc;
use std::time::Duration;

use sea_orm::{ConnectOptions, DatabaseConnection, DbErr};

use crate::sql::connection::errors::DatabaseError;
use crate::sql::connection::losses::{IDLE_PING, Losses};

/// Which database server a database is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// An SQLite file.
    Sqlite,
    /// A PostgreSQL server.
    Postgres,
}

/// How to open a database, beyond its URL.
#[derive(Debug, Clone, Copy)]
pub struct DatabaseOptions {
    /// SQLite only: the most pages (4 KiB each) the database file may hold, as
    /// `PRAGMA max_page_count` on every connection. Past it, writes fail as they would on a
    /// full disk: for rehearsing a full disk, and for tests.
    pub sqlite_max_pages: Option<u32>,
    /// SQLite only: the most the read cache keeps, in MiB; 0 keeps nothing.
    pub read_cache_mib: u32,
}

/// The read cache's bound unless told otherwise, in MiB.
pub const DEFAULT_READ_CACHE_MIB: u32 = 8;

impl Default for DatabaseOptions {
    fn default() -> Self {
        Self { sqlite_max_pages: None, read_cache_mib: DEFAULT_READ_CACHE_MIB }
    }
}

/// How long a request waits for a pooled connection before the store counts as unavailable.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long SQLite waits for another process's write lock (an operator's `keys create`
/// while the server runs) before giving up.
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// The size SQLite truncates its WAL file back to after a checkpoint.
const SQLITE_JOURNAL_SIZE_LIMIT: u64 = 16 * 1024 * 1024;
/// The page cache of each SQLite connection that only reads, in KiB (SQLite's default is
/// 2,000 for every connection). Reads are lookups and short walks of an index: the interior
/// pages of a table of millions of rows fit in it, and a leaf it misses is a read of the
/// operating system's cache. The writer keeps SQLite's default, for its batches.
pub(crate) const SQLITE_READER_CACHE_KIB: u32 = 512;
/// Prepared statements each SQLite connection keeps. The writer's multi-row statements have
/// one text per batch size (up to 64) for pets, for idempotency records and for their keys'
/// lookup: with sqlx's default of 100, they evicted one another and were prepared again.
const SQLITE_STATEMENT_CACHE: usize = 512;

/// The reader pool's connections.
const READERS: u32 = 4;

/// Opens every connection of an SQLite reader pool now, on the caller's thread, one after
/// the other: each runs its statements on a thread that sqlx-sqlite starts when it opens
/// it, which takes the priority of the thread that opened it. Opened later, a connection
/// might be opened by the webhook deliveries' thread, whose priority is lowered, and serve
/// the requests' reads at that priority. The connections are never closed for age or
/// idleness (see [`Connector::open`]).
async fn open_every_sqlite_reader(readers: &DatabaseConnection) -> Result<(), DbErr> {
    let pool = readers.get_sqlite_connection_pool();
    let mut held = Vec::new();
    for _ in 0..READERS {
        let connection = pool.acquire().await;
        held.push(
            connection.map_err(|err| DbErr::Conn(sea_orm::RuntimeErr::SqlxError(Arc::new(err))))?,
        );
    }
    Ok(())
}

/// Creates `path` empty and readable by its owner only (0600), failing if it exists.
pub(crate) fn owner_only_file(path: &std::path::Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path).map(drop)
}

fn unsupported(url: &str) -> DatabaseError {
    DatabaseError::UnsupportedUrl(crate::redact::redact(url).into_owned())
}

/// How to open connections to one database: the writer reopens its connection with it.
#[derive(Clone)]
pub(crate) struct Connector {
    pub(crate) backend: Backend,
    url: String,
    options: DatabaseOptions,
    /// When the server last ended one of the connections of this database's pools.
    losses: Arc<Losses>,
}

impl Connector {
    pub(crate) fn new(url: &str, options: DatabaseOptions) -> Result<Self, DatabaseError> {
        let backend = if url.starts_with("sqlite:") {
            // Each connection to an in-memory SQLite database is a database of its own, so
            // the writer's and the readers' would not see each other's data.
            if url.contains(":memory:") || url.contains("mode=memory") {
                return Err(unsupported(url));
            }
            Backend::Sqlite
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Backend::Postgres
        } else {
            return Err(unsupported(url));
        };
        Ok(Self { backend, url: url.to_owned(), options, losses: Arc::default() })
    }

    /// When the server last ended one of this database's connections.
    pub(crate) fn losses(&self) -> Arc<Losses> {
        Arc::clone(&self.losses)
    }

    pub(crate) fn backend(&self) -> Backend {
        self.backend
    }

    /// The path of the SQLite file, as the URL names it.
    pub(crate) fn sqlite_path(&self) -> Result<std::path::PathBuf, DbErr> {
        use std::str::FromStr as _;
        let options = sea_orm::sqlx::sqlite::SqliteConnectOptions::from_str(&self.url)
            .map_err(|err| DbErr::Conn(sea_orm::RuntimeErr::SqlxError(Arc::new(err))))?;
        Ok(options.get_filename().to_owned())
    }

    /// Creates a missing SQLite file readable by its owner only: it holds key digests.
    /// SQLite gives the `-wal` and `-shm` files beside it the same permissions. An existing
    /// file is left as it is.
    fn create_sqlite_file(&self) -> Result<(), DbErr> {
        let path = self.sqlite_path()?;
        let path = path.as_path();
        if path.as_os_str().is_empty() || path.exists() {
            return Ok(());
        }
        match owner_only_file(path) {
            Ok(()) => Ok(()),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            Err(err) => Err(DbErr::Conn(sea_orm::RuntimeErr::Internal(format!(
                "cannot create {}: {err}",
                path.display()
            )))),
        }
    }

    /// The reader pool, which every read takes its connection from: up to four
    /// connections, opened now so that a database that cannot be opened is a start-up error.
    pub(crate) async fn open_readers(&self) -> Result<DatabaseConnection, DbErr> {
        if self.backend == Backend::Postgres {
            self.try_connect().await?;
        }
        let readers = self.open(READERS, false).await?;
        if self.backend == Backend::Sqlite {
            open_every_sqlite_reader(&readers).await?;
        }
        Ok(readers)
    }

    /// One plain connection, opened and closed: the pool retries a failed connection until
    /// its acquire timeout and then says only "pool timed out", where this says why (a
    /// refused port, an unknown host, a wrong password).
    async fn try_connect(&self) -> Result<(), DbErr> {
        use sea_orm::sqlx::Connection as _;
        let connecting = sea_orm::sqlx::PgConnection::connect(&self.url);
        match tokio::time::timeout(ACQUIRE_TIMEOUT, connecting).await {
            Ok(Ok(connection)) => {
                let _ = connection.close().await;
                Ok(())
            }
            Ok(Err(err)) => Err(DbErr::Conn(sea_orm::RuntimeErr::SqlxError(Arc::new(err)))),
            Err(_) => Err(DbErr::Conn(sea_orm::RuntimeErr::Internal(format!(
                "no answer within {} s",
                ACQUIRE_TIMEOUT.as_secs()
            )))),
        }
    }

    /// A pool of exactly one connection for the writer, opened when first used. It is never
    /// recycled for age or idleness: only a failure replaces it.
    pub(crate) async fn open_writer(&self) -> Result<DatabaseConnection, DbErr> {
        self.open(1, true).await
    }

    /// The pragmas of every connection to an SQLite file, beyond the busy timeout: WAL, full syncs,
    /// foreign keys, a bounded WAL, and the database's page limit if it has one.
    fn sqlite_pragmas(&self) -> Vec<(&'static str, String)> {
        let mut pragmas = vec![
            ("journal_mode", "WAL".to_owned()),
            ("synchronous", "FULL".to_owned()),
            ("foreign_keys", "ON".to_owned()),
            ("journal_size_limit", SQLITE_JOURNAL_SIZE_LIMIT.to_string()),
        ];
        if let Some(pages) = self.options.sqlite_max_pages {
            pragmas.push(("max_page_count", pages.to_string()));
        }
        pragmas
    }

    pub(crate) async fn open(
        &self,
        connections: u32,
        writer: bool,
    ) -> Result<DatabaseConnection, DbErr> {
        if self.backend == Backend::Sqlite {
            self.create_sqlite_file()?;
        }
        let mut options = ConnectOptions::new(&self.url);
        options.max_connections(connections).acquire_timeout(ACQUIRE_TIMEOUT).sqlx_logging(false);
        // sqlx pings a connection each time it hands it out, unless told otherwise. A local
        // file's connections never go stale, and the ping doubled the cost of an SQLite
        // read: never. A PostgreSQL server's are pinged when they sat idle past a threshold,
        // or were opened before the server last ended a connection (see `losses.rs`).
        if self.backend == Backend::Sqlite {
            options.test_before_acquire(false);
        } else {
            options.test_before_acquire_if_idle_for(IDLE_PING);
            let losses = Arc::clone(&self.losses);
            options.map_sqlx_postgres_before_acquire(move |connection, meta| {
                let suspect = losses.predates_last(meta.age);
                Box::pin(async move {
                    use sea_orm::sqlx::Connection as _;
                    // A connection that fails its ping is closed, and the pool hands out
                    // another.
                    Ok(!suspect || connection.ping().await.is_ok())
                })
            });
        }
        if writer {
            options.min_connections(0).connect_lazy(true).idle_timeout(None).max_lifetime(None);
        }
        if self.backend == Backend::Sqlite {
            // A local file's connections never go stale: no idle or lifetime limit, and so
            // no maintenance task (sqlx 0.9's can spin a core when its pool closes under it,
            // which hangs a short command's exit). No minimum either: sqlx would open it from
            // a task of its own while `connect` opens the first connection, and on a new file
            // one of the two would fail to switch it to WAL (a lock SQLite cannot wait for).
            // The connection `connect` opens stays in the pool all the same.
            options.idle_timeout(None).max_lifetime(None).min_connections(0);
            let pragmas = self.sqlite_pragmas();
            options.map_sqlx_sqlite_opts(move |opts| {
                let opts = opts
                    .create_if_missing(true)
                    .busy_timeout(SQLITE_BUSY_TIMEOUT)
                    .statement_cache_capacity(SQLITE_STATEMENT_CACHE);
                let opts = pragmas
                    .iter()
                    .fold(opts, |opts, (pragma, value)| opts.pragma(*pragma, value.clone()));
                if writer {
                    opts
                } else {
                    opts.pragma("cache_size", format!("-{SQLITE_READER_CACHE_KIB}"))
                }
            });
        }
        sea_orm::Database::connect(options).await
    }
}

#[cfg(test)]
mod tests {
    use sea_orm::{ConnectionTrait as _, DbBackend, Statement};

    use super::*;

    /// The pragmas read back, each as text.
    const READ: [&str; 5] =
        ["journal_mode", "synchronous", "foreign_keys", "journal_size_limit", "max_page_count"];

    /// The writer's connection to an SQLite file has the pragmas that keep writes durable
    /// and the WAL bounded.
    #[tokio::test]
    async fn the_writers_connection_is_tuned() {
        let dir = tempfile::tempdir().expect("a directory");
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let options =
            DatabaseOptions { sqlite_max_pages: Some(5_000), ..DatabaseOptions::default() };
        let connector = Connector::new(&url, options).expect("a connector");
        let writer = connector.open_writer().await.expect("the writer's connection");
        let mut read = Vec::new();
        for pragma in READ {
            let sql = format!("SELECT CAST({pragma} AS TEXT) AS v FROM pragma_{pragma}");
            let row = writer.query_one_raw(Statement::from_string(DbBackend::Sqlite, sql));
            let row = row.await.expect("read").expect("a row");
            read.push(row.try_get::<String>("", "v").expect("text"));
        }
        assert_eq!(read, ["wal", "2", "1", &SQLITE_JOURNAL_SIZE_LIMIT.to_string(), "5000"]);
        writer.close().await.expect("closed");
    }
}
