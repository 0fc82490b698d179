//! PostgreSQL connections for the pet reads, pooled without a round trip per checkout.
//!
//! sqlx's pool pings a connection each time it goes back to the pool, in case a cancelled
//! query left it mid-conversation, and by default each time it is handed out too. A page of
//! pets is a single round trip of its own, so through that pool each one cost three: on a
//! network where a round trip is a fraction of a millisecond, that is most of a read's
//! latency. These connections are pooled by deadpool instead:
//!
//! - a connection handed out is pinged only when it sat idle for [`PING_IF_IDLE_FOR`] or
//!   longer, in case the server, a proxy or a firewall dropped it meanwhile;
//! - a connection whose query did not run to its end (the request was cancelled, or the
//!   connection itself failed) is closed, never put back; one that got an error from the
//!   server (a bad statement) is still in step and is put back.
//!
//! The statements are the repository's own SeaORM queries, built for PostgreSQL; their rows
//! come back as SeaORM's `QueryResult`.

use std::str::FromStr as _;
use std::sync::Arc;
use std::time::Duration;

use deadpool::managed::{self, Metrics, Object, PoolError, RecycleResult, TimeoutType, Timeouts};
use sea_orm::sqlx::postgres::{PgConnectOptions, PgConnection, PgDatabaseError, PgSeverity};
use sea_orm::sqlx::{self, ConnectOptions as _, Connection as _, Error};
use sea_orm::{DbErr, QueryResult, RuntimeErr, Statement, Values};
use sea_query_sqlx::SqlxValues;

/// A connection idle for this long is pinged before it is handed out.
pub(super) const PING_IF_IDLE_FOR: Duration = Duration::from_secs(1);

/// Pooled PostgreSQL connections for reads. Cheap to clone: clones share the pool.
#[derive(Clone)]
pub(super) struct PgReaders {
    pool: managed::Pool<Manager>,
}

/// Opens and checks the connections.
struct Manager {
    options: PgConnectOptions,
}

impl managed::Manager for Manager {
    type Type = PgConnection;
    type Error = Error;

    async fn create(&self) -> Result<PgConnection, Error> {
        PgConnection::connect_with(&self.options).await
    }

    async fn recycle(
        &self,
        connection: &mut PgConnection,
        metrics: &Metrics,
    ) -> RecycleResult<Error> {
        if metrics.last_used() >= PING_IF_IDLE_FOR {
            connection.ping().await?;
        }
        Ok(())
    }
}

impl PgReaders {
    /// A pool of up to `size` connections to `url`, opened as they are needed. Waiting for a
    /// connection, opening one and pinging one each give up after `timeout`.
    pub(super) fn new(url: &str, size: usize, timeout: Duration) -> Result<Self, DbErr> {
        let options = PgConnectOptions::from_str(url)
            .map_err(|err| DbErr::Conn(RuntimeErr::SqlxError(Arc::new(err))))?
            .disable_statement_logging();
        let timeouts =
            Timeouts { wait: Some(timeout), create: Some(timeout), recycle: Some(timeout) };
        let pool = managed::Pool::builder(Manager { options })
            .max_size(size)
            .timeouts(timeouts)
            .runtime(deadpool::Runtime::Tokio1)
            .build()
            .map_err(|err| DbErr::Conn(RuntimeErr::Internal(err.to_string())))?;
        Ok(Self { pool })
    }

    /// Runs `statement` and returns its rows. A connection that was pooled before and fails
    /// on its own (the server terminated it, or restarted) is closed and the read tried again
    /// on another: a read can be repeated, and the client need not see that failure. After a
    /// restart every pooled connection fails at once, so the tries are bounded by the pool's
    /// size, and a new connection's failure is the read's.
    pub(super) async fn query_all(&self, statement: Statement) -> Result<Vec<QueryResult>, DbErr> {
        let Statement { sql, values, .. } = statement;
        let values = values.unwrap_or(Values(Vec::new()));
        let mut tries = self.pool.status().max_size + 1;
        loop {
            tries -= 1;
            let mut checkout = Checkout(Some(self.pool.get().await.map_err(pool_error)?));
            let reused = checkout.reused();
            let rows =
                sqlx::query_with(sqlx::AssertSqlSafe(sql.as_str()), SqlxValues(values.clone()))
                    .fetch_all(checkout.connection())
                    .await;
            match rows {
                Ok(rows) => {
                    checkout.put_back();
                    return Ok(rows.into_iter().map(QueryResult::from).collect());
                }
                // The server answered, and the connection goes on: it is in step.
                Err(Error::Database(err)) if !ends_the_connection(err.as_ref()) => {
                    checkout.put_back();
                    return Err(DbErr::Query(RuntimeErr::SqlxError(Arc::new(Error::Database(
                        err,
                    )))));
                }
                Err(_) if reused && tries > 0 => {}
                Err(err) => return Err(DbErr::Query(RuntimeErr::SqlxError(Arc::new(err)))),
            }
        }
    }

    /// Whether every connection the pool may hold is open and busy: then a wait that timed
    /// out is overload, not a database that cannot be reached.
    pub(super) fn saturated(&self) -> bool {
        let status = self.pool.status();
        status.size >= status.max_size && status.available == 0
    }

    /// The open connections, and how many of them are idle.
    pub(super) fn connections(&self) -> (usize, usize) {
        let status = self.pool.status();
        (status.size, status.available)
    }

    /// Closes the idle connections and refuses new checkouts.
    pub(super) fn close(&self) {
        self.pool.close();
    }
}

/// A checked-out connection that is closed on drop unless put back: a query dropped at an
/// `.await` leaves its connection mid-conversation.
struct Checkout(Option<Object<Manager>>);

impl Checkout {
    /// Whether the connection served an earlier checkout.
    fn reused(&self) -> bool {
        self.0.as_ref().is_some_and(|object| Object::metrics(object).recycle_count > 0)
    }

    fn connection(&mut self) -> &mut PgConnection {
        self.0.as_deref_mut().unwrap_or_else(|| unreachable!("a checkout holds its connection"))
    }

    fn put_back(mut self) {
        // Dropping the object returns it to the pool.
        drop(self.0.take());
    }
}

impl Drop for Checkout {
    fn drop(&mut self) {
        if let Some(object) = self.0.take() {
            drop(Object::take(object));
        }
    }
}

/// Whether the server ends the connection with this error: a `FATAL` (terminated by an
/// administrator, the server shutting down) or a `PANIC`.
fn ends_the_connection(err: &dyn sqlx::error::DatabaseError) -> bool {
    err.try_downcast_ref::<PgDatabaseError>()
        .is_some_and(|err| matches!(err.severity(), PgSeverity::Fatal | PgSeverity::Panic))
}

/// A pool's failure as sqlx's pool would report it: a wait for a connection that timed out
/// is a query's pool timeout (overload when the pool is [saturated](PgReaders::saturated)); a
/// connection that could not be opened, or checked in time, is a connection error, the
/// driver's own when it gave one.
fn pool_error(err: PoolError<Error>) -> DbErr {
    let sqlx = |err| RuntimeErr::SqlxError(Arc::new(err));
    match err {
        PoolError::Timeout(TimeoutType::Wait) => DbErr::Query(sqlx(Error::PoolTimedOut)),
        PoolError::Backend(err) => DbErr::Conn(sqlx(err)),
        PoolError::Closed => DbErr::Conn(sqlx(Error::PoolClosed)),
        _ => DbErr::Conn(sqlx(Error::PoolTimedOut)),
    }
}
