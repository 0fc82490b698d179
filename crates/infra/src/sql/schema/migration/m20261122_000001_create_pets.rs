//! The `pets` table and its `(status, id)` index.

use sea_orm_migration::prelude::*;

use super::Compatibility;

#[derive(DeriveIden)]
enum Pets {
    Table,
    Id,
    Name,
    CategoryId,
    Status,
}

/// Expand: the binary before it still runs on the schema it leaves (a new table).
pub const COMPATIBILITY: Compatibility = Compatibility::Expand;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &'static str {
        "m0001_create_pets"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
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
