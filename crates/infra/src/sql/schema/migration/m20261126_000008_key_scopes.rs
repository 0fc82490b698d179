//! The `scope` of a key: `read` or `write`. A nullable column: a key issued before it is
//! `write`, as it could do everything.

use sea_orm_migration::prelude::*;

use super::Compatibility;

#[derive(DeriveIden)]
enum ApiKeys {
    Table,
    Scope,
}

/// Expand: the binary before it still runs on the schema it leaves. It issues keys without
/// a scope, which are `write` keys, and reads keys as before; it does not know scopes, so
/// a `read` key can write through it (docs/operations.md says to issue `read` keys once no
/// binary before this one serves).
pub const COMPATIBILITY: Compatibility = Compatibility::Expand;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &'static str {
        "m20261126_000008_key_scopes"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(ApiKeys::Table)
                    .add_column(ColumnDef::new(ApiKeys::Scope).string_len(16).null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter().table(ApiKeys::Table).drop_column(ApiKeys::Scope).to_owned(),
            )
            .await
    }
}
