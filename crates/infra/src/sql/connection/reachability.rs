//! Failing fast while the database cannot be reached.
//!
//! Without this, every request during an outage would wait the pool's full acquire timeout
//! (5 s) before its 503, and pile up meanwhile. After the first failure that says the
//! database cannot be reached (a refused or lost connection, a pool that timed out, a server
//! shutting down), [`Reachability`] refuses reads and writes at once, and one background
//! probe tries `SELECT 1` every [`PROBE_INTERVAL`] until the database answers; then
//! requests go through again, without a restart.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use animal_store_domain::RepositoryError;
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, DbErr};
use thiserror::Error;

use crate::sql::connection::failure::{
    FailureKind, is_lost_connection, is_unreachable, repository_error,
};
use crate::sql::connection::losses::Losses;
use crate::sql::connection::outage::Outage;

/// How often the probe tries the database while it cannot be reached.
const PROBE_INTERVAL: Duration = Duration::from_millis(250);
/// How long one probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// The refusal while the database cannot be reached.
#[derive(Debug, Error)]
#[error("the database cannot be reached; waiting for it to answer again")]
pub struct Unreachable;

/// Whether the database can be reached, as the last failure and the probe found.
pub(crate) struct Reachability {
    down: AtomicBool,
    /// The connections the probe tries.
    readers: DatabaseConnection,
    /// When the server last ended a connection.
    losses: Arc<Losses>,
    /// The runtime the probe runs on: the service's, whichever thread observes the failure
    /// (the writer runs on a runtime of its own).
    runtime: tokio::runtime::Handle,
}

impl Reachability {
    /// Called on the service's runtime, which the probe will run on.
    pub(crate) fn new(readers: DatabaseConnection, losses: Arc<Losses>) -> Arc<Self> {
        let runtime = tokio::runtime::Handle::current();
        Arc::new(Self { down: AtomicBool::new(false), readers, losses, runtime })
    }

    /// `Unavailable` at once while the database is known to be unreachable.
    pub(crate) fn check(&self) -> Result<(), RepositoryError> {
        if self.down.load(Ordering::Acquire) {
            Err(RepositoryError::Unavailable(Box::new(Unreachable)))
        } else {
            Ok(())
        }
    }

    /// Records a failure: one that says the database cannot be reached marks it so and
    /// starts the probe; a connection the server ended has the pool check the connections
    /// opened before it.
    pub(crate) fn observe(self: &Arc<Self>, err: &DbErr) {
        if is_lost_connection(err) {
            self.losses.record();
        }
        if is_unreachable(err) && !self.overloaded(err) && !self.down.swap(true, Ordering::AcqRel) {
            tracing::warn!(
                error = %err,
                "the database cannot be reached; answering 503 at once until it answers again"
            );
            self.runtime.spawn(probe(Arc::downgrade(self)));
        }
    }
}

impl Reachability {
    /// Whether `err` is a wait for a pooled connection that timed out while every
    /// connection of a full pool was busy: overload, which refusing every request at once
    /// would turn into an outage, not a database that cannot be reached.
    fn overloaded(&self, err: &DbErr) -> bool {
        use sea_orm::sqlx::Error;
        let pool_timeout = match err {
            DbErr::ConnectionAcquire(_) => true,
            DbErr::Exec(sea_orm::RuntimeErr::SqlxError(e))
            | DbErr::Query(sea_orm::RuntimeErr::SqlxError(e)) => {
                matches!(e.as_ref(), Error::PoolTimedOut)
            }
            _ => false,
        };
        let (size, max, idle) = if self.readers.get_database_backend() == DbBackend::Sqlite {
            let pool = self.readers.get_sqlite_connection_pool();
            (pool.size(), pool.options().get_max_connections(), pool.num_idle())
        } else {
            let pool = self.readers.get_postgres_connection_pool();
            (pool.size(), pool.options().get_max_connections(), pool.num_idle())
        };
        pool_timeout && size >= max && idle == 0
    }
}

/// Tries the database until it answers, then lets requests through again. Ends early when
/// the database is closed.
async fn probe(reachability: Weak<Reachability>) {
    let since = Instant::now();
    loop {
        tokio::time::sleep(PROBE_INTERVAL).await;
        let Some(reachability) = reachability.upgrade() else { return };
        let answered = tokio::time::timeout(
            PROBE_TIMEOUT,
            reachability.readers.execute_unprepared("SELECT 1"),
        )
        .await;
        if matches!(answered, Ok(Ok(_))) {
            reachability.down.store(false, Ordering::Release);
            let unreachable_ms = u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX);
            tracing::warn!(unreachable_ms, "the database answers again");
            return;
        }
    }
}

/// What every read goes through: the fast refusal while the database cannot be reached,
/// and the log of a run of failures.
pub(crate) struct Reads {
    outage: Outage,
    reachability: Arc<Reachability>,
}

impl Reads {
    pub(crate) fn new(reachability: Arc<Reachability>) -> Self {
        Self { outage: Outage::new("reads"), reachability }
    }

    /// Runs the read `query` makes, as [`Reads::run`] does, and once more when its
    /// connection was lost (the server restarted, failed over or ended it): the pool checks
    /// the connections opened before the loss, so the second try gets a live one.
    pub(crate) async fn read<T, F>(&self, query: impl Fn() -> F) -> Result<T, RepositoryError>
    where
        F: Future<Output = Result<T, DbErr>>,
    {
        self.reachability.check()?;
        match query().await {
            Err(err) if is_lost_connection(&err) => {
                self.reachability.observe(&err);
                self.finish(query().await)
            }
            answered => self.finish(answered),
        }
    }

    /// Runs `query` unless the database is known to be unreachable, recording its failure
    /// and turning the driver's error into the domain's. Not tried again: a write on the
    /// readers' pool might have been made.
    pub(crate) async fn run<T>(
        &self,
        query: impl Future<Output = Result<T, DbErr>>,
    ) -> Result<T, RepositoryError> {
        self.reachability.check()?;
        self.finish(query.await)
    }

    /// Records how a query ended.
    fn finish<T>(&self, answered: Result<T, DbErr>) -> Result<T, RepositoryError> {
        match answered {
            Ok(value) => {
                self.outage.passed();
                Ok(value)
            }
            Err(err) => {
                self.outage.failed(FailureKind::of(&err), &err, 1);
                self.reachability.observe(&err);
                Err(repository_error(err))
            }
        }
    }
}
