//! An open database: its reader pool, its read cache, the thread that writes, and its
//! stores (see the module's documentation).

use std::sync::Arc;

use animal_store_domain::Clock;
use sea_orm::DatabaseConnection;
use tokio::sync::oneshot;

use crate::clock::SystemClock;
use crate::sql::connection::connector::{Backend, Connector, DatabaseOptions, owner_only_file};
use crate::sql::connection::errors::{BackupError, DatabaseError};
use crate::sql::connection::health::{DatabaseHealth, PoolMetrics};
use crate::sql::connection::reachability::{Reachability, Reads};
use crate::sql::events::SeaOrmEventLog;
use crate::sql::idempotency::SeaOrmIdempotencyStore;
use crate::sql::keys::SeaOrmApiKeyStore;
use crate::sql::orders::SeaOrmOrderRepository;
use crate::sql::pets::read_cache::ReadCache;
use crate::sql::pets::repository::SeaOrmPetRepository;
use crate::sql::webhooks::claims::Leases;
use crate::sql::webhooks::endpoints::SeaOrmWebhooks;
use crate::sql::writer::commits::Commits;
use crate::sql::writer::job::Writer;
use crate::sql::writer::thread::WriterThread;

/// An open database: its reader pool, its read cache and the thread that writes.
pub struct Database {
    pub(crate) connector: Connector,
    pub(crate) readers: DatabaseConnection,
    /// On SQLite, the answers of the pet reads kept.
    cache: Option<Arc<ReadCache>>,
    reads: Arc<Reads>,
    writer: Writer,
    /// On SQLite, this process's leases of webhook deliveries.
    delivery_leases: Arc<Leases>,
    stop_writer: oneshot::Sender<()>,
    writer_thread: WriterThread,
    /// The time of what the stores record: the system's unless [`Database::with_clock`] set
    /// another.
    clock: Arc<dyn Clock>,
}

impl Database {
    /// Opens the database `url` names: `sqlite://PATH` (created if missing) or
    /// `postgres://...`. Does not migrate: call [`Database::migrate`].
    ///
    /// # Errors
    ///
    /// [`DatabaseError`] when the URL is not supported or the database cannot be opened.
    pub async fn connect(url: &str) -> Result<Self, DatabaseError> {
        Self::connect_with(url, DatabaseOptions::default()).await
    }

    /// [`Database::connect`] with `options`.
    ///
    /// # Errors
    ///
    /// [`DatabaseError`] when the URL is not supported or the database cannot be opened.
    pub async fn connect_with(url: &str, options: DatabaseOptions) -> Result<Self, DatabaseError> {
        let connector = Connector::new(url, options)?;
        let readers = connector.open_readers().await.map_err(DatabaseError::Connect)?;
        let commits = Arc::new(Commits::default());
        let cache =
            (connector.backend == Backend::Sqlite && options.read_cache_mib > 0).then(|| {
                let bytes = u64::from(options.read_cache_mib) * 1024 * 1024;
                Arc::new(ReadCache::new(bytes, Arc::clone(&commits)))
            });
        let reachability = Reachability::new(readers.clone(), connector.losses());
        let (stop_writer, stop) = oneshot::channel();
        let (writer, writer_thread) =
            Writer::start(connector.clone(), Arc::clone(&reachability), commits, stop)
                .map_err(DatabaseError::Connect)?;
        let reads = Arc::new(Reads::new(Arc::clone(&reachability)));
        let delivery_leases = Arc::default();
        Ok(Self {
            connector,
            readers,
            cache,
            reads,
            writer,
            delivery_leases,
            stop_writer,
            writer_thread,
            clock: Arc::new(SystemClock),
        })
    }

    /// This database, its stores recording times from `clock` (the service's one clock).
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Writes a consistent copy of an SQLite database to `path` (`VACUUM INTO`) while it
    /// serves: one read transaction sees every commit made before it started, and no write
    /// waits for it. `path` must not exist yet.
    ///
    /// # Errors
    ///
    /// [`BackupError`] on PostgreSQL, or when the copy cannot be written.
    pub async fn backup(&self, path: &std::path::Path) -> Result<(), BackupError> {
        use sea_orm::ConnectionTrait;
        if self.connector.backend != Backend::Sqlite {
            return Err(BackupError::NotSqlite);
        }
        let target = path.to_str().ok_or(BackupError::Path)?;
        // The copy holds key digests: created empty, readable by the owner only, for SQLite
        // to fill (it accepts an empty file as the target).
        owner_only_file(path).map_err(BackupError::Create)?;
        let statement = sea_orm::Statement::from_sql_and_values(
            sea_orm::DbBackend::Sqlite,
            "VACUUM INTO ?",
            [target.into()],
        );
        let copied = self.readers.execute_raw(statement).await.map(drop);
        if copied.is_err() {
            let _ = std::fs::remove_file(path);
        }
        copied.map_err(BackupError::Copy)
    }

    /// Which server this is.
    pub fn backend(&self) -> Backend {
        self.connector.backend
    }

    /// The pet repository over this database. Clones share the writer.
    pub fn pets(&self) -> SeaOrmPetRepository {
        SeaOrmPetRepository::new(
            self.readers.clone(),
            self.cache.clone(),
            Arc::clone(&self.reads),
            self.writer.clone(),
            Arc::clone(&self.clock),
        )
    }

    /// The order repository over this database. Clones share the writer.
    pub fn orders(&self) -> SeaOrmOrderRepository {
        SeaOrmOrderRepository::new(
            self.readers.clone(),
            Arc::clone(&self.reads),
            self.writer.clone(),
        )
    }

    /// The idempotency records of this database, written with the pets and orders they
    /// record. Clones share the writer.
    pub fn idempotency(&self) -> SeaOrmIdempotencyStore {
        SeaOrmIdempotencyStore::new(
            self.readers.clone(),
            Arc::clone(&self.reads),
            self.writer.clone(),
        )
    }

    /// The events of this database, which its pets, orders and idempotency records write
    /// with the changes they report.
    pub fn events(&self) -> SeaOrmEventLog {
        SeaOrmEventLog::new(self.readers.clone(), Arc::clone(&self.reads), self.writer.clone())
    }

    /// The webhook endpoints and deliveries of this database, queued with the events they
    /// carry.
    pub fn webhooks(&self) -> SeaOrmWebhooks {
        let (reads, leases) = (Arc::clone(&self.reads), Arc::clone(&self.delivery_leases));
        SeaOrmWebhooks::new(self.readers.clone(), reads, self.writer.clone(), leases)
    }

    /// The readiness check of this database.
    pub fn health(&self) -> DatabaseHealth {
        DatabaseHealth { reads: Arc::clone(&self.reads), readers: self.readers.clone() }
    }

    /// The plan the database chooses for the repository's own query of a page (SQLite's
    /// `EXPLAIN QUERY PLAN` details, PostgreSQL's `EXPLAIN` lines): for tests that an index
    /// serves each kind of page. `setting` runs first on the same connection (PostgreSQL's
    /// `SET enable_seqscan = off`, say).
    #[cfg(feature = "testing")]
    pub async fn page_plan(
        &self,
        setting: Option<&str>,
        status: Option<animal_store_domain::PetStatus>,
        after: Option<animal_store_domain::PetId>,
    ) -> Result<Vec<String>, sea_orm::DbErr> {
        use sea_orm::{ConnectionTrait, QueryTrait, TransactionTrait};
        let backend = self.readers.get_database_backend();
        let page = crate::sql::pets::repository::list_query(status, after, 20).build(backend);
        let (explain, column) = match self.connector.backend {
            Backend::Sqlite => ("EXPLAIN QUERY PLAN", "detail"),
            Backend::Postgres => ("EXPLAIN", "QUERY PLAN"),
        };
        let statement = sea_orm::Statement { sql: format!("{explain} {}", page.sql), ..page };
        // One transaction: one connection for the setting and the plan.
        let txn = self.readers.begin().await?;
        if let Some(setting) = setting {
            txn.execute_unprepared(setting).await?;
        }
        let rows = txn.query_all_raw(statement).await?;
        txn.rollback().await?;
        rows.iter().map(|row| row.try_get::<String>("", column)).collect()
    }

    /// What reports the readers' pools to the metrics.
    pub fn pool_metrics(&self) -> PoolMetrics {
        PoolMetrics { backend: self.connector.backend, readers: self.readers.clone() }
    }

    /// The API key store over this database.
    pub fn keys(&self) -> SeaOrmApiKeyStore {
        SeaOrmApiKeyStore::new(self.readers.clone(), Arc::clone(&self.reads), self.writer.clone())
    }

    /// Commits the writes already queued, then closes every connection; repositories handed
    /// out refuse writes from then on. On SQLite, closing the last connection checkpoints the
    /// WAL into the database file, so the next start does not replay it.
    pub async fn close(self) {
        let Self { readers, stop_writer, writer_thread, .. } = self;
        // The writer may have ended already; then there is nothing to stop.
        let _ = stop_writer.send(());
        if let Err(err) = writer_thread.ended().await {
            tracing::error!(error = %err, "the database writer failed");
        }
        if let Err(err) = readers.close().await {
            tracing::warn!(error = %err, "closing the database readers failed");
        }
    }
}
