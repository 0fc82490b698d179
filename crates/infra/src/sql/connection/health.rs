//! What operators see of a database: its readiness check, and its
//! readers' pools in the metrics.

use std::sync::Arc;

use animal_store_domain::RepositoryError;
use sea_orm::DatabaseConnection;

use crate::sql::connection::connector::Backend;
use crate::sql::connection::reachability::Reads;

/// The gauge of the readers' pools' connections, by `state`: `active` or `idle`.
pub const POOL_METRIC: &str = "animal_store_db_pool_connections";

/// Reports the readers' pools to the metrics, when scraped.
pub struct PoolMetrics {
    pub(crate) backend: Backend,
    pub(crate) readers: DatabaseConnection,
}

impl PoolMetrics {
    /// Sets [`POOL_METRIC`] to the pools' connections now.
    pub fn record(&self) {
        let (size, idle) = match self.backend {
            Backend::Sqlite => {
                let pool = self.readers.get_sqlite_connection_pool();
                (pool.size(), pool.num_idle())
            }
            Backend::Postgres => {
                let pool = self.readers.get_postgres_connection_pool();
                (pool.size(), pool.num_idle())
            }
        };
        let idle = u32::try_from(idle).unwrap_or(u32::MAX).min(size);
        metrics::gauge!(POOL_METRIC, "state" => "active").set(f64::from(size - idle));
        metrics::gauge!(POOL_METRIC, "state" => "idle").set(f64::from(idle));
    }
}

/// The readiness check of a database: `SELECT 1` through the reader pool.
pub struct DatabaseHealth {
    pub(crate) reads: Arc<Reads>,
    pub(crate) readers: DatabaseConnection,
}

#[async_trait::async_trait]
impl animal_store_domain::HealthCheck for DatabaseHealth {
    fn name(&self) -> &'static str {
        "database"
    }

    async fn check(&self) -> Result<(), RepositoryError> {
        use sea_orm::ConnectionTrait;
        self.reads.run(self.readers.execute_unprepared("SELECT 1")).await.map(drop)
    }
}
