//! Schema migrations, the same for SQLite and PostgreSQL, one file each, oldest first. Every
//! command that touches the database applies the pending ones first.
//!
//! A migration's file is named for the day it was written and its rank; its `name()` is what
//! the `seaql_migrations` table records, so it never changes once released (the first two
//! keep their original short names).

mod m20261122_000001_create_pets;
mod m20261122_000002_create_api_keys;
mod m20261123_000003_key_lifecycle;
mod m20261123_000004_create_orders;
mod m20261123_000005_create_idempotency_keys;
mod m20261123_000006_drop_idempotency_created_at_index;

use sea_orm_migration::prelude::*;

/// All migrations, oldest first.
pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m20261122_000001_create_pets::Migration),
            Box::new(m20261122_000002_create_api_keys::Migration),
            Box::new(m20261123_000003_key_lifecycle::Migration),
            Box::new(m20261123_000004_create_orders::Migration),
            Box::new(m20261123_000005_create_idempotency_keys::Migration),
            Box::new(m20261123_000006_drop_idempotency_created_at_index::Migration),
        ]
    }
}
