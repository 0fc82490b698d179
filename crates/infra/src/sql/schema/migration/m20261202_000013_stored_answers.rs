//! `idempotency_keys.answer`: a keyed write's first answer, as the API encoded it, in one
//! column. The release before reads and writes the answer in `status`, `body` and `location`,
//! which this release keeps filled beside it; a release after drops them.

use sea_orm_migration::prelude::*;

use super::Compatibility;

#[derive(DeriveIden)]
enum IdempotencyKeys {
    Table,
    Answer,
}

/// Expand: the binary before it still runs on the schema it leaves (a nullable column it
/// never reads). This binary reads a record that one stored, without the column, from its
/// `status`, `body` and `location`.
pub const COMPATIBILITY: Compatibility = Compatibility::Expand;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &'static str {
        "m20261202_000013_stored_answers"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(IdempotencyKeys::Table)
                    .add_column(ColumnDef::new(IdempotencyKeys::Answer).blob().null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(IdempotencyKeys::Table)
                    .drop_column(IdempotencyKeys::Answer)
                    .to_owned(),
            )
            .await
    }
}
