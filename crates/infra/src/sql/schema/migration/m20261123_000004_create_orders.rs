//! The `orders` table: each order reserves a pet for the key (the rotation chain) that
//! placed it, and is listed per owner by id, or by status and id.

use sea_orm_migration::prelude::*;

use super::Compatibility;

#[derive(DeriveIden)]
enum Orders {
    Table,
    Id,
    PetId,
    Owner,
    Status,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Pets {
    Table,
    Id,
}

/// Expand: the binary before it still runs on the schema it leaves (a new table,
/// which it never reads).
pub const COMPATIBILITY: Compatibility = Compatibility::Expand;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &'static str {
        "m20261123_000004_create_orders"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Orders::Table)
                    .col(
                        ColumnDef::new(Orders::Id)
                            .big_integer()
                            .not_null()
                            .auto_increment()
                            .primary_key(),
                    )
                    .col(ColumnDef::new(Orders::PetId).big_integer().not_null())
                    .col(ColumnDef::new(Orders::Owner).string_len(32).not_null())
                    .col(ColumnDef::new(Orders::Status).string_len(16).not_null())
                    .col(ColumnDef::new(Orders::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(Orders::UpdatedAt).timestamp_with_time_zone().not_null())
                    .foreign_key(
                        ForeignKey::create()
                            .name("orders_pet_id")
                            .from(Orders::Table, Orders::PetId)
                            .to(Pets::Table, Pets::Id),
                    )
                    .to_owned(),
            )
            .await?;
        // An owner's orders, by id and by status then id: a page walks one of these indexes
        // from its cursor on.
        let by_id = Index::create()
            .name("orders_owner_id")
            .table(Orders::Table)
            .col(Orders::Owner)
            .col(Orders::Id)
            .to_owned();
        let by_status = Index::create()
            .name("orders_owner_status_id")
            .table(Orders::Table)
            .col(Orders::Owner)
            .col(Orders::Status)
            .col(Orders::Id)
            .to_owned();
        for index in [by_id, by_status] {
            manager.create_index(index).await?;
        }
        // The orders of a pet, for the checks that a pet and its orders agree.
        manager
            .create_index(
                Index::create()
                    .name("orders_pet_id_index")
                    .table(Orders::Table)
                    .col(Orders::PetId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(Orders::Table).to_owned()).await
    }
}
