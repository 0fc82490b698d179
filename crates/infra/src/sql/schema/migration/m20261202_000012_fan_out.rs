//! Deliveries fanned out after the commit: `webhook_fan_out`, one row holding the id of the
//! last event whose deliveries are queued, and `webhook_endpoints.after_event`, the last
//! event recorded when the endpoint was registered, so that it gets none made before it
//! existed. The position starts at the last event recorded: what came before was queued in
//! its write's transaction.

use sea_orm_migration::prelude::*;

use super::Compatibility;

#[derive(DeriveIden)]
enum WebhookFanOut {
    Table,
    Id,
    LastEventId,
}

#[derive(DeriveIden)]
enum WebhookEndpoints {
    Table,
    AfterEvent,
}

/// Expand: the binary before it still runs on the schema it leaves (a table and a column
/// with a default, which it never reads). It queues deliveries in the write's transaction,
/// so while both run, an event one of its instances records is queued twice for each
/// endpoint, once by each binary: receivers drop the repeat by its `webhook-id`.
pub const COMPATIBILITY: Compatibility = Compatibility::Expand;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &'static str {
        "m20261202_000012_fan_out"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(WebhookFanOut::Table)
                    .col(ColumnDef::new(WebhookFanOut::Id).integer().not_null().primary_key())
                    .col(ColumnDef::new(WebhookFanOut::LastEventId).big_integer().not_null())
                    .to_owned(),
            )
            .await?;
        manager
            .get_connection()
            .execute_unprepared(
                "INSERT INTO webhook_fan_out (id, last_event_id) \
                 SELECT 1, COALESCE(MAX(id), 0) FROM events",
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(WebhookEndpoints::Table)
                    .add_column(
                        ColumnDef::new(WebhookEndpoints::AfterEvent)
                            .big_integer()
                            .not_null()
                            .default(0),
                    )
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(WebhookEndpoints::Table)
                    .drop_column(WebhookEndpoints::AfterEvent)
                    .to_owned(),
            )
            .await?;
        manager.drop_table(Table::drop().table(WebhookFanOut::Table).to_owned()).await
    }
}
