//! Webhooks: `webhook_endpoints`, an owner's addresses for its events;
//! `webhook_deliveries`, each event queued for each endpoint that wants it, in the event's
//! transaction, until it is delivered or given up; `webhook_attempts`, what came of each
//! attempt.

use sea_orm_migration::prelude::*;

use super::Compatibility;

#[derive(DeriveIden)]
enum WebhookEndpoints {
    Table,
    Id,
    Owner,
    Url,
    Events,
    Status,
    Secret,
    CreatedAt,
    FailingSince,
}

#[derive(DeriveIden)]
enum WebhookDeliveries {
    Table,
    Id,
    EndpointId,
    EventId,
    Attempts,
    NextAttemptAt,
    LeasedUntil,
    CreatedAt,
}

#[derive(DeriveIden)]
enum WebhookAttempts {
    Table,
    Id,
    DeliveryId,
    EndpointId,
    EventId,
    Attempt,
    AttemptedAt,
    Outcome,
    StatusCode,
    NextAttemptAt,
}

/// Expand: the binary before it still runs on the schema it leaves (new tables, which it
/// never reads). It queues no deliveries: the events of the changes it makes are not
/// delivered (docs/operations.md).
pub const COMPATIBILITY: Compatibility = Compatibility::Expand;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &'static str {
        "m20261126_000010_webhooks"
    }
}

fn id<T: IntoIden>(name: T) -> ColumnDef {
    ColumnDef::new(name).big_integer().not_null().auto_increment().primary_key().to_owned()
}

fn moment<T: IntoIden>(name: T) -> ColumnDef {
    ColumnDef::new(name).timestamp_with_time_zone().to_owned()
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use WebhookAttempts as A;
        use WebhookDeliveries as D;
        use WebhookEndpoints as E;
        manager
            .create_table(
                Table::create()
                    .table(E::Table)
                    .col(id(E::Id))
                    .col(ColumnDef::new(E::Owner).string_len(32).not_null())
                    .col(ColumnDef::new(E::Url).string_len(2048).not_null())
                    .col(ColumnDef::new(E::Events).string_len(256).not_null())
                    .col(ColumnDef::new(E::Status).string_len(16).not_null())
                    .col(ColumnDef::new(E::Secret).string_len(64).not_null())
                    .col(moment(E::CreatedAt).not_null())
                    .col(moment(E::FailingSince).null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(D::Table)
                    .col(id(D::Id))
                    .col(ColumnDef::new(D::EndpointId).big_integer().not_null())
                    .col(ColumnDef::new(D::EventId).big_integer().not_null())
                    .col(ColumnDef::new(D::Attempts).integer().not_null())
                    .col(moment(D::NextAttemptAt).null())
                    .col(moment(D::LeasedUntil).null())
                    .col(moment(D::CreatedAt).not_null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(A::Table)
                    .col(id(A::Id))
                    .col(ColumnDef::new(A::DeliveryId).big_integer().not_null())
                    .col(ColumnDef::new(A::EndpointId).big_integer().not_null())
                    .col(ColumnDef::new(A::EventId).big_integer().not_null())
                    .col(ColumnDef::new(A::Attempt).integer().not_null())
                    .col(moment(A::AttemptedAt).not_null())
                    .col(ColumnDef::new(A::Outcome).string_len(32).not_null())
                    .col(ColumnDef::new(A::StatusCode).integer().null())
                    .col(moment(A::NextAttemptAt).null())
                    .to_owned(),
            )
            .await?;
        let indexes = [
            // An owner's endpoints, in order.
            Index::create()
                .name("webhook_endpoints_owner_id")
                .table(E::Table)
                .col(E::Owner)
                .col(E::Id)
                .to_owned(),
            // Each endpoint's deliveries, soonest due first, which a claim reads. Every index
            // costs each delivery a write twice (queued, done): the others read the tables
            // (the sweep, an endpoint's removal) where they are small or in key order.
            Index::create()
                .name("webhook_deliveries_endpoint_due")
                .table(D::Table)
                .col(D::EndpointId)
                .col(D::NextAttemptAt)
                .col(D::Id)
                .to_owned(),
            // An endpoint's attempts, newest first.
            Index::create()
                .name("webhook_attempts_endpoint_id")
                .table(A::Table)
                .col(A::EndpointId)
                .col(A::Id)
                .to_owned(),
        ];
        for index in indexes {
            manager.create_index(index).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            WebhookAttempts::Table.into_iden(),
            WebhookDeliveries::Table.into_iden(),
            WebhookEndpoints::Table.into_iden(),
        ] {
            manager.drop_table(Table::drop().table(table).to_owned()).await?;
        }
        Ok(())
    }
}
