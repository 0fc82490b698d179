//! The `api_keys` table: digests of keys, never keys.

use sea_orm_migration::prelude::*;

use super::Compatibility;

#[derive(DeriveIden)]
enum ApiKeys {
    Table,
    Id,
    Digest,
    Name,
    Plan,
    PerMinute,
    PerDay,
    Environment,
    CreatedAt,
    LastUsedAt,
    RevokedAt,
}

/// Expand: the binary before it still runs on the schema it leaves (a new table,
/// which it never reads).
pub const COMPATIBILITY: Compatibility = Compatibility::Expand;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &'static str {
        "m0002_create_api_keys"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(ApiKeys::Table)
                    .col(ColumnDef::new(ApiKeys::Id).string_len(32).not_null().primary_key())
                    .col(ColumnDef::new(ApiKeys::Digest).blob().not_null().unique_key())
                    .col(ColumnDef::new(ApiKeys::Name).string_len(400).null())
                    .col(ColumnDef::new(ApiKeys::Plan).string_len(16).not_null())
                    .col(ColumnDef::new(ApiKeys::PerMinute).big_integer().null())
                    .col(ColumnDef::new(ApiKeys::PerDay).big_integer().null())
                    .col(ColumnDef::new(ApiKeys::Environment).string_len(16).not_null())
                    .col(ColumnDef::new(ApiKeys::CreatedAt).big_integer().not_null())
                    .col(ColumnDef::new(ApiKeys::LastUsedAt).big_integer().null())
                    .col(ColumnDef::new(ApiKeys::RevokedAt).big_integer().null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(ApiKeys::Table).to_owned()).await
    }
}
