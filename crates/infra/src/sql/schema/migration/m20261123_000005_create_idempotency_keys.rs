//! The `idempotency_keys` table: the outcome of a write sent with an `Idempotency-Key`,
//! stored with what it created, one per owner and key, swept after a day.

use sea_orm_migration::prelude::*;

use super::Compatibility;

#[derive(DeriveIden)]
enum IdempotencyKeys {
    Table,
    Owner,
    Key,
    Fingerprint,
    Status,
    Body,
    Location,
    CreatedAt,
}

/// Expand: the binary before it still runs on the schema it leaves (a new table,
/// which it never reads).
pub const COMPATIBILITY: Compatibility = Compatibility::Expand;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &'static str {
        "m20261123_000005_create_idempotency_keys"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(IdempotencyKeys::Table)
                    .col(ColumnDef::new(IdempotencyKeys::Owner).string_len(32).not_null())
                    .col(ColumnDef::new(IdempotencyKeys::Key).string_len(255).not_null())
                    .col(ColumnDef::new(IdempotencyKeys::Fingerprint).blob().not_null())
                    .col(ColumnDef::new(IdempotencyKeys::Status).integer().not_null())
                    .col(ColumnDef::new(IdempotencyKeys::Body).text().not_null())
                    .col(ColumnDef::new(IdempotencyKeys::Location).string_len(400).null())
                    .col(
                        ColumnDef::new(IdempotencyKeys::CreatedAt)
                            .timestamp_with_time_zone()
                            .not_null(),
                    )
                    .primary_key(
                        Index::create().col(IdempotencyKeys::Owner).col(IdempotencyKeys::Key),
                    )
                    .to_owned(),
            )
            .await?;
        // The sweep removes the oldest records first, a batch at a time.
        manager
            .create_index(
                Index::create()
                    .name("idempotency_keys_created_at")
                    .table(IdempotencyKeys::Table)
                    .col(IdempotencyKeys::CreatedAt)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(IdempotencyKeys::Table).to_owned()).await
    }
}
