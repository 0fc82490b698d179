//! The schema of a [`Database`]: its migrations applied, and which of them it has.

use crate::sql::connection::errors::DatabaseError;
use crate::sql::database::Database;
use crate::sql::schema::window::{self, SchemaWindow};
use crate::sql::schema::{migrating, migration};

/// Which migrations a database has, against those this binary knows.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SchemaStatus {
    /// How many of this binary's migrations the database has.
    pub applied: usize,
    /// This binary's migrations the database lacks, oldest first.
    pub pending: Vec<String>,
    /// Migrations the database has that this binary does not know: a newer version of the
    /// service applied them.
    pub unknown: Vec<String>,
    /// Which binaries may run on the database, as the binary that migrated it last recorded;
    /// `None` when none that records it did.
    pub window: Option<SchemaWindow>,
}

impl Database {
    /// Applies the migrations not applied yet, on a connection of their own.
    ///
    /// # Errors
    ///
    /// [`DatabaseError::Migrate`] when a migration fails; it is rolled back where the
    /// database allows.
    pub async fn migrate(&self) -> Result<(), DatabaseError> {
        self.migrate_steps(None).await
    }

    /// Applies the first `steps` pending migrations (all when `None`) on a connection of
    /// their own, holding the database's migration lock (see `migrating.rs`).
    async fn migrate_steps(&self, steps: Option<u32>) -> Result<(), DatabaseError> {
        let connection = self.connector.open(1, false).await.map_err(DatabaseError::Connect)?;
        let migrated = migrating::apply(&connection, self.connector.backend, steps).await;
        if let Err(err) = connection.close().await {
            tracing::warn!(error = %err, "closing the migration connection failed");
        }
        migrated.map_err(DatabaseError::Migrate)
    }

    /// Which migrations the database has, read without changing anything (a database no
    /// migration touched yet has none).
    ///
    /// # Errors
    ///
    /// [`DatabaseError::Migrate`] when the record of the applied migrations cannot be read.
    pub async fn schema_status(&self) -> Result<SchemaStatus, DatabaseError> {
        let known = migrating::names();
        let recorded = migrating::recorded(&self.readers).await.map_err(DatabaseError::Migrate)?;
        let window = window::read(&self.readers).await.map_err(DatabaseError::Migrate)?;
        Ok(SchemaStatus {
            applied: known.iter().filter(|name| recorded.contains(name)).count(),
            pending: known.iter().filter(|name| !recorded.contains(name)).cloned().collect(),
            unknown: recorded.into_iter().filter(|name| !known.contains(name)).collect(),
            window,
        })
    }

    /// Applies the first `count` migrations only, as an older version of the service would
    /// have left the database: for upgrade tests.
    ///
    /// # Errors
    ///
    /// [`DatabaseError::Migrate`] when a migration fails.
    #[cfg(feature = "testing")]
    pub async fn migrate_first(&self, count: u32) -> Result<(), DatabaseError> {
        self.migrate_steps(Some(count)).await
    }

    /// The schema level of this binary: how many migrations it knows. A database migrated by
    /// this binary is at this level.
    pub fn schema_level() -> usize {
        use sea_orm_migration::MigratorTrait as _;
        migration::Migrator::migrations().len()
    }

    /// The names of the migrations, oldest first, as the database records them.
    #[cfg(feature = "testing")]
    pub fn migration_names() -> Vec<String> {
        use sea_orm_migration::MigratorTrait as _;
        migration::Migrator::migrations().iter().map(|m| m.name().to_owned()).collect()
    }
}
