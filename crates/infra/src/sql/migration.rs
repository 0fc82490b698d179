//! Schema migrations, the same for SQLite and PostgreSQL. Every command that touches the
//! database applies the pending ones first.

use sea_orm_migration::prelude::*;

/// All migrations, oldest first.
pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![Box::new(CreatePets), Box::new(CreateApiKeys)]
    }
}

#[derive(DeriveIden)]
enum Pets {
    Table,
    Id,
    Name,
    CategoryId,
    Status,
}

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

struct CreatePets;

impl MigrationName for CreatePets {
    fn name(&self) -> &'static str {
        "m0001_create_pets"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for CreatePets {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Pets::Table)
                    .col(
                        ColumnDef::new(Pets::Id)
                            .big_integer()
                            .not_null()
                            .auto_increment()
                            .primary_key(),
                    )
                    .col(ColumnDef::new(Pets::Name).string_len(400).not_null())
                    .col(ColumnDef::new(Pets::CategoryId).big_integer().not_null())
                    .col(ColumnDef::new(Pets::Status).string_len(16).not_null())
                    .to_owned(),
            )
            .await?;
        // Listing by status walks this index from the cursor on: the cost of a page does
        // not depend on how many pets there are.
        manager
            .create_index(
                Index::create()
                    .name("pets_status_id")
                    .table(Pets::Table)
                    .col(Pets::Status)
                    .col(Pets::Id)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(Pets::Table).to_owned()).await
    }
}

struct CreateApiKeys;

impl MigrationName for CreateApiKeys {
    fn name(&self) -> &'static str {
        "m0002_create_api_keys"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for CreateApiKeys {
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
