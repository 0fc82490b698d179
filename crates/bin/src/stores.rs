//! Picks the adapters the database URL names.

use std::sync::Arc;

use animal_store_domain::{ApiKeyStore, PetRepository};
use animal_store_infra::{Database, DatabaseOptions, MemoryApiKeyStore, MemoryPetRepository};
use anyhow::Context;

use crate::cli::Cli;

/// The open stores.
pub enum Stores {
    /// `memory://`: nothing outlives the process.
    Memory {
        /// Pets.
        pets: Arc<MemoryPetRepository>,
        /// Keys.
        keys: Arc<MemoryApiKeyStore>,
    },
    /// An SQL database.
    Sql(Database),
}

impl Stores {
    /// Opens the database `--database-url` names and applies pending migrations.
    pub async fn open(cli: &Cli) -> anyhow::Result<Self> {
        if cli.database_url.is_memory() {
            return Ok(Self::Memory {
                pets: Arc::new(MemoryPetRepository::new()),
                keys: Arc::new(MemoryApiKeyStore::new()),
            });
        }
        let options = DatabaseOptions { sqlite_max_pages: cli.sqlite_max_pages };
        let db = Database::connect_with(cli.database_url.expose(), options)
            .await
            .with_context(|| format!("cannot open the database {}", cli.database_url))?;
        db.migrate().await.context("cannot bring the database schema up to date")?;
        Ok(Self::Sql(db))
    }

    /// Whether nothing is kept across restarts.
    pub fn is_memory(&self) -> bool {
        matches!(self, Self::Memory { .. })
    }

    /// The pet repository.
    pub fn pets(&self) -> Arc<dyn PetRepository> {
        match self {
            Self::Memory { pets, .. } => pets.clone(),
            Self::Sql(db) => Arc::new(db.pets()),
        }
    }

    /// The key store.
    pub fn keys(&self) -> Arc<dyn ApiKeyStore> {
        match self {
            Self::Memory { keys, .. } => keys.clone(),
            Self::Sql(db) => Arc::new(db.keys()),
        }
    }

    /// Finishes queued writes and closes the database.
    pub async fn close(self) {
        if let Self::Sql(db) = self {
            db.close().await;
        }
    }
}
