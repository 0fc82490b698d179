//! The `events` table: one row per change of a pet or an order, written in the change's
//! transaction; on PostgreSQL, beside it, `event_counter`, whose one row gives the events
//! their ids in commit order (see `sql/rows/events.rs`).

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

use super::Compatibility;

#[derive(DeriveIden)]
enum Events {
    Table,
    Id,
    EventType,
    Owner,
    CreatedAt,
    Object,
}

/// Expand: the binary before it still runs on the schema it leaves (new tables, which it
/// never reads). It writes no events: changes it makes while it serves beside this one are
/// not in the feed (docs/operations.md).
pub const COMPATIBILITY: Compatibility = Compatibility::Expand;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &'static str {
        "m20261126_000009_events"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let postgres = manager.get_database_backend() == DbBackend::Postgres;
        let mut id = ColumnDef::new(Events::Id);
        id.big_integer().not_null().primary_key();
        if !postgres {
            // SQLite: AUTOINCREMENT, so that a swept event's id is never given again.
            id.auto_increment();
        }
        manager
            .create_table(
                Table::create()
                    .table(Events::Table)
                    .col(id)
                    .col(ColumnDef::new(Events::EventType).string_len(32).not_null())
                    .col(ColumnDef::new(Events::Owner).string_len(32).null())
                    .col(ColumnDef::new(Events::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(Events::Object).text().not_null())
                    .to_owned(),
            )
            .await?;
        if postgres {
            let db = manager.get_connection();
            db.execute_unprepared(
                "CREATE TABLE event_counter (last_id BIGINT NOT NULL); \
                 INSERT INTO event_counter (last_id) VALUES (0)",
            )
            .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() == DbBackend::Postgres {
            manager.get_connection().execute_unprepared("DROP TABLE event_counter").await?;
        }
        manager.drop_table(Table::drop().table(Events::Table).to_owned()).await
    }
}
