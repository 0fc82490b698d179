//! The compatibility window: which binaries may run on a database.
//!
//! A binary's schema level is how many migrations it knows; a database's, how many it has.
//! The binary that migrates a database to its own level records, in the one row of
//! `schema_window`, that level and the oldest level whose binaries still run on it: the level
//! of its last migration declared `Contract` (see `migration/mod.rs`). An older binary, which
//! cannot know the newer migrations' declarations, reads them there: it runs on the database
//! when its level is at least the oldest one admitted.
//!
//! The table is created beside `seaql_migrations`, not by a migration, so that the binaries
//! that predate it see the migrations they know and nothing else.

use sea_orm::sea_query::OnConflict;
use sea_orm::{ConnectionTrait, DbErr, EntityName as _, EntityTrait as _, Schema, Set};
use sea_orm_migration::{IntoSchemaManagerConnection, SchemaManager};

use crate::sql::schema::entity::schema_window::{ActiveModel, Column, Entity};
use crate::sql::schema::migration::oldest_admitted_level;

/// The window a database records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchemaWindow {
    /// The database's schema level.
    pub level: usize,
    /// The oldest schema level whose binaries still run on it.
    pub oldest_level: usize,
}

impl SchemaWindow {
    /// Whether a binary of schema level `level` runs on the database.
    pub fn admits(&self, level: usize) -> bool {
        level >= self.oldest_level
    }
}

/// Records the window of this binary's schema, `level` being its schema level: called under
/// the migration lock, once the database has every migration this binary knows and no other.
pub(crate) async fn record<C>(connection: &C, level: usize) -> Result<(), DbErr>
where
    C: ConnectionTrait,
{
    let backend = connection.get_database_backend();
    let mut create = Schema::new(backend).create_table_from_entity(Entity);
    connection.execute(create.if_not_exists()).await?;
    let row = ActiveModel {
        id: Set(1),
        level: Set(as_column(level)?),
        oldest_level: Set(as_column(oldest_admitted_level())?),
    };
    let upsert = OnConflict::column(Column::Id)
        .update_columns([Column::Level, Column::OldestLevel])
        .to_owned();
    Entity::insert(row).on_conflict(upsert).exec(connection).await?;
    Ok(())
}

/// The window the database records; `None` when no binary that records one migrated it.
pub(crate) async fn read<C>(connection: &C) -> Result<Option<SchemaWindow>, DbErr>
where
    C: ConnectionTrait,
    for<'c> &'c C: IntoSchemaManagerConnection<'c>,
{
    if !SchemaManager::new(connection).has_table(Entity.table_name()).await? {
        return Ok(None);
    }
    let Some(row) = Entity::find_by_id(1).one(connection).await? else { return Ok(None) };
    let level = |value: i32| {
        usize::try_from(value)
            .map_err(|_| DbErr::Custom(format!("schema level {value} in schema_window")))
    };
    Ok(Some(SchemaWindow { level: level(row.level)?, oldest_level: level(row.oldest_level)? }))
}

fn as_column(level: usize) -> Result<i32, DbErr> {
    i32::try_from(level).map_err(|_| DbErr::Custom(format!("schema level {level} out of range")))
}

#[cfg(test)]
mod tests {
    use super::SchemaWindow;

    #[test]
    fn a_window_admits_its_oldest_level_and_newer_ones() {
        let window = SchemaWindow { level: 9, oldest_level: 7 };
        assert!(!window.admits(6));
        assert!(window.admits(7) && window.admits(8) && window.admits(9) && window.admits(10));
    }
}
