//! SeaORM adapters over SQLite and PostgreSQL.
//!
//! [`Database::connect`] opens the database a URL names and tunes it:
//!
//! - SQLite (the default, a file beside the server): WAL journal, `synchronous=FULL` so an
//!   acknowledged write survives `kill -9` and power loss, a busy timeout, a bounded WAL
//!   (`journal_size_limit`), writes in `BEGIN IMMEDIATE` transactions. Two pools: up to four
//!   readers, which WAL lets run beside the writer, and one writer connection, so the process
//!   never fights itself for SQLite's single write lock.
//! - PostgreSQL: one pool for both.
//!
//! Pets are written by one task that commits queued inserts together (group commit): one
//! durable sync per batch instead of one per pet. See [`SeaOrmPetRepository`].

mod entity;
mod keys;
mod migration;
mod pets;

use std::time::Duration;

use animal_store_domain::RepositoryError;
use sea_orm::sqlx::sqlite::{SqliteJournalMode, SqliteSynchronous};
use sea_orm::{ConnectOptions, DatabaseConnection, DbErr, RuntimeErr, SqlErr};
use sea_orm_migration::MigratorTrait;
use thiserror::Error;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use keys::SeaOrmApiKeyStore;
pub use pets::SeaOrmPetRepository;

/// Which database server a [`Database`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// An SQLite file (or in-memory database).
    Sqlite,
    /// A PostgreSQL server.
    Postgres,
}

/// Why a database could not be opened or migrated.
#[derive(Debug, Error)]
pub enum DatabaseError {
    /// The URL names no supported database.
    #[error("unsupported database URL {0:?}: expected sqlite://PATH, postgres://... or memory://")]
    UnsupportedUrl(String),
    /// The database could not be opened.
    #[error("cannot open the database: {0}")]
    Connect(#[source] DbErr),
    /// The schema could not be brought up to date.
    #[error("cannot migrate the database: {0}")]
    Migrate(#[source] DbErr),
}

/// An open database: its connection pools and the task that writes pets.
pub struct Database {
    backend: Backend,
    readers: DatabaseConnection,
    writer: DatabaseConnection,
    pets: SeaOrmPetRepository,
    stop_pet_writer: oneshot::Sender<()>,
    pet_writer: JoinHandle<()>,
}

/// How long a request waits for a pooled connection before the store counts as unavailable.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long SQLite waits for another process's write lock (an operator's `keys create`
/// while the server runs) before giving up.
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// The size SQLite truncates its WAL file back to after a checkpoint.
const SQLITE_JOURNAL_SIZE_LIMIT: u64 = 16 * 1024 * 1024;

impl Database {
    /// Opens the database `url` names: `sqlite://PATH` (created if missing),
    /// `sqlite::memory:`, or `postgres://...`. Does not migrate: call [`Database::migrate`].
    ///
    /// # Errors
    ///
    /// [`DatabaseError`] when the URL is not supported or the database cannot be opened.
    pub async fn connect(url: &str) -> Result<Self, DatabaseError> {
        let (backend, readers, writer) = if url.starts_with("sqlite:") {
            // Each connection to an in-memory SQLite database is a database of its own:
            // readers and writer must then share one connection.
            let in_memory = url.contains(":memory:") || url.contains("mode=memory");
            let writer = open_sqlite(url, 1).await?;
            let readers = if in_memory { writer.clone() } else { open_sqlite(url, 4).await? };
            (Backend::Sqlite, readers, writer)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let mut options = ConnectOptions::new(url);
            options.max_connections(8).acquire_timeout(ACQUIRE_TIMEOUT).sqlx_logging(false);
            let pool = sea_orm::Database::connect(options).await.map_err(DatabaseError::Connect)?;
            (Backend::Postgres, pool.clone(), pool)
        } else {
            return Err(DatabaseError::UnsupportedUrl(url.to_owned()));
        };
        let (stop_pet_writer, stop) = oneshot::channel();
        let (pets, pet_writer) =
            SeaOrmPetRepository::start(backend, readers.clone(), writer.clone(), stop);
        Ok(Self { backend, readers, writer, pets, stop_pet_writer, pet_writer })
    }

    /// Applies the migrations not applied yet.
    ///
    /// # Errors
    ///
    /// [`DatabaseError::Migrate`] when a migration fails; it is rolled back where the
    /// database allows.
    pub async fn migrate(&self) -> Result<(), DatabaseError> {
        migration::Migrator::up(&self.writer, None).await.map_err(DatabaseError::Migrate)
    }

    /// Which server this is.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The pet repository over this database. Clones share the writer task.
    pub fn pets(&self) -> SeaOrmPetRepository {
        self.pets.clone()
    }

    /// The API key store over this database.
    pub fn keys(&self) -> SeaOrmApiKeyStore {
        SeaOrmApiKeyStore::new(self.readers.clone(), self.writer.clone())
    }

    /// Commits the writes already queued, then closes every connection; repositories handed
    /// out refuse writes from then on. On SQLite, closing the last connection checkpoints the
    /// WAL into the database file, so the next start does not replay it.
    pub async fn close(self) {
        let Self { readers, writer, stop_pet_writer, pet_writer, .. } = self;
        // The writer may have ended already; then there is nothing to stop.
        let _ = stop_pet_writer.send(());
        if let Err(err) = pet_writer.await {
            tracing::error!(error = %err, "the pet writer task failed");
        }
        for pool in [readers, writer] {
            if let Err(err) = pool.close().await {
                tracing::warn!(error = %err, "closing a database pool failed");
            }
        }
    }
}

async fn open_sqlite(url: &str, connections: u32) -> Result<DatabaseConnection, DatabaseError> {
    let mut options = ConnectOptions::new(url);
    options
        .max_connections(connections)
        .min_connections(1)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .sqlx_logging(false)
        .map_sqlx_sqlite_opts(|opts| {
            opts.create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Full)
                .busy_timeout(SQLITE_BUSY_TIMEOUT)
                .foreign_keys(true)
                .pragma("journal_size_limit", SQLITE_JOURNAL_SIZE_LIMIT.to_string())
        });
    sea_orm::Database::connect(options).await.map_err(DatabaseError::Connect)
}

/// What a driver error means for the domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failure {
    Duplicate,
    Unavailable,
    Backend,
}

impl Failure {
    /// Unique violations are duplicates, connection and lock trouble is unavailability,
    /// everything else a backend failure.
    fn of(err: &DbErr) -> Self {
        if matches!(err.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) {
            return Self::Duplicate;
        }
        let unavailable = match err {
            DbErr::ConnectionAcquire(_) | DbErr::Conn(_) => true,
            DbErr::Exec(RuntimeErr::SqlxError(e)) | DbErr::Query(RuntimeErr::SqlxError(e)) => e
                .as_database_error()
                .and_then(sea_orm::sqlx::error::DatabaseError::code)
                // SQLITE_BUSY (5) and SQLITE_LOCKED (6), with their extended codes.
                .is_some_and(|code| code.parse::<i32>().is_ok_and(|c| matches!(c & 0xff, 5 | 6))),
            _ => false,
        };
        if unavailable { Self::Unavailable } else { Self::Backend }
    }

    fn with_source(
        self,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> RepositoryError {
        match self {
            Self::Duplicate => RepositoryError::Duplicate,
            Self::Unavailable => RepositoryError::Unavailable(Box::new(source)),
            Self::Backend => RepositoryError::Backend(Box::new(source)),
        }
    }
}

/// Turns a driver error into the domain's.
fn repository_error(err: DbErr) -> RepositoryError {
    Failure::of(&err).with_source(err)
}

/// A stored row that no longer satisfies the domain's rules (edited by hand, say).
#[derive(Debug, Error)]
#[error("a stored {table} row is invalid: {reason}")]
struct CorruptRow {
    table: &'static str,
    reason: String,
}

fn corrupt(table: &'static str, reason: impl std::fmt::Display) -> RepositoryError {
    RepositoryError::Backend(Box::new(CorruptRow { table, reason: reason.to_string() }))
}
