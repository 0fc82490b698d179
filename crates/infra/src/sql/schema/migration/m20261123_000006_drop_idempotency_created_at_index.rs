//! Drops the index on `idempotency_keys.created_at`: every keyed write paid for it (on
//! SQLite about a fifth of the pages a batch of keyed additions writes to its log), and only
//! the sweep, every ten minutes, read it. The sweep now finds expired records by reading the
//! table on a reader connection, where the oldest records come first, and removes them by
//! their keys.

use sea_orm_migration::prelude::*;

use super::Compatibility;

#[derive(DeriveIden)]
enum IdempotencyKeys {
    Table,
    CreatedAt,
}

/// The index this migration drops.
const INDEX: &str = "idempotency_keys_created_at";

/// Expand: the binary before it still runs on the schema it leaves (the same tables
/// and columns; it only sweeps more slowly without the index).
pub const COMPATIBILITY: Compatibility = Compatibility::Expand;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &'static str {
        "m20261123_000006_drop_idempotency_created_at_index"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_index(Index::drop().name(INDEX).table(IdempotencyKeys::Table).to_owned()).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_index(
                Index::create()
                    .name(INDEX)
                    .table(IdempotencyKeys::Table)
                    .col(IdempotencyKeys::CreatedAt)
                    .to_owned(),
            )
            .await
    }
}
