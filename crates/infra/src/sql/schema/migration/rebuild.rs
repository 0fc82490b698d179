//! Changing a SQLite table's constraints, which SQLite's `ALTER TABLE` cannot do, the way
//! its documentation says to ("Making Other Kinds Of Table Schema Changes"): the table is
//! created again under another name with the new constraints, every row is copied, the old
//! table is dropped, the new one takes its name, and its indexes are created again. Every
//! column keeps its name, type and values, so the binary before the change reads and writes
//! the table as before: a rebuild alone does not make a migration `Contract`.
//!
//! It runs inside the migrations' transaction (SQLite migrates under `BEGIN IMMEDIATE`,
//! see `migrating.rs`): the rebuild is applied whole or not at all. The table rebuilt must
//! be no other table's parent: dropping it would check their foreign keys.

use sea_orm_migration::prelude::*;

/// Rebuilds the SQLite table `table` as `create` (the same columns, created under the name
/// `building`), then creates `indexes` on it.
pub(super) async fn rebuild_sqlite_table(
    manager: &SchemaManager<'_>,
    table: &str,
    building: &str,
    create: TableCreateStatement,
    indexes: Vec<IndexCreateStatement>,
) -> Result<(), DbErr> {
    let connection = manager.get_connection();
    manager.create_table(create).await?;
    connection.execute_unprepared(&format!("INSERT INTO {building} SELECT * FROM {table}")).await?;
    connection.execute_unprepared(&format!("DROP TABLE {table}")).await?;
    connection.execute_unprepared(&format!("ALTER TABLE {building} RENAME TO {table}")).await?;
    for index in indexes {
        manager.create_index(index).await?;
    }
    Ok(())
}
