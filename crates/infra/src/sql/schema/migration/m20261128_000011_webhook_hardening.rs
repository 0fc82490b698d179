//! What the webhooks' defences need: `webhook_endpoints.disabled_reason`, why the service
//! or an operator disabled an endpoint (`failing`, `key_ended`, `operator`; `owner` when its
//! owner did); and the index `events_type_owner_id`, which serves `listEvents` filtered by
//! type: the caller's events of one type, in id order, read from their first row whatever
//! the table's size; and `api_keys_lineage`, which finds the keys of a line, as the delivery
//! workers do each second to end the deliveries of lines with no live key left.

use sea_orm_migration::prelude::*;

use super::Compatibility;

#[derive(DeriveIden)]
enum WebhookEndpoints {
    Table,
    DisabledReason,
}

#[derive(DeriveIden)]
enum ApiKeys {
    Table,
    Lineage,
}

#[derive(DeriveIden)]
enum Events {
    Table,
    EventType,
    Owner,
    Id,
}

/// Expand: the binary before it still runs on the schema it leaves (a nullable column it
/// never reads, an index). It does not end deliveries with their key: an endpoint that an
/// operator or a key's end disabled stays disabled, and its owner could enable it again
/// through that binary.
pub const COMPATIBILITY: Compatibility = Compatibility::Expand;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &'static str {
        "m20261128_000011_webhook_hardening"
    }
}

const INDEX: &str = "events_type_owner_id";
const LINEAGE_INDEX: &str = "api_keys_lineage";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(WebhookEndpoints::Table)
                    .add_column(
                        ColumnDef::new(WebhookEndpoints::DisabledReason).string_len(16).null(),
                    )
                    .to_owned(),
            )
            .await?;
        let index = Index::create()
            .name(INDEX)
            .table(Events::Table)
            .col(Events::EventType)
            .col(Events::Owner)
            .col(Events::Id)
            .to_owned();
        manager.create_index(index).await?;
        let lineage = Index::create()
            .name(LINEAGE_INDEX)
            .table(ApiKeys::Table)
            .col(ApiKeys::Lineage)
            .to_owned();
        manager.create_index(lineage).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(Index::drop().name(LINEAGE_INDEX).table(ApiKeys::Table).to_owned())
            .await?;
        manager.drop_index(Index::drop().name(INDEX).table(Events::Table).to_owned()).await?;
        manager
            .alter_table(
                Table::alter()
                    .table(WebhookEndpoints::Table)
                    .drop_column(WebhookEndpoints::DisabledReason)
                    .to_owned(),
            )
            .await
    }
}
