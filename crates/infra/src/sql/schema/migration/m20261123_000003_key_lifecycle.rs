//! Key lifecycle: an expiry, the key a rotated key was replaced by, and the line of
//! rotations a key belongs to (`NULL`: its own). Existing keys get `NULL` in all three, and
//! keep working as before.

use sea_orm_migration::prelude::*;

use super::Compatibility;

#[derive(DeriveIden)]
enum ApiKeys {
    Table,
    ExpiresAt,
    RotatedTo,
    Lineage,
}

/// Contract: the binary before it does not run safely on the schema it leaves (it would
/// still accept the keys this schema expires or has rotated away).
pub const COMPATIBILITY: Compatibility = Compatibility::Contract;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &'static str {
        "m20261123_000003_key_lifecycle"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // One column per statement: SQLite's ALTER TABLE adds one at a time.
        let columns = [
            ColumnDef::new(ApiKeys::ExpiresAt).big_integer().null().to_owned(),
            ColumnDef::new(ApiKeys::RotatedTo).string_len(32).null().to_owned(),
            ColumnDef::new(ApiKeys::Lineage).string_len(32).null().to_owned(),
        ];
        for mut column in columns {
            manager
                .alter_table(
                    Table::alter().table(ApiKeys::Table).add_column(&mut column).to_owned(),
                )
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for column in [ApiKeys::ExpiresAt, ApiKeys::RotatedTo, ApiKeys::Lineage] {
            manager
                .alter_table(Table::alter().table(ApiKeys::Table).drop_column(column).to_owned())
                .await?;
        }
        Ok(())
    }
}
