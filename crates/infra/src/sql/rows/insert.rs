//! Inserting one row and reading the id the database gave it.
//!
//! On SQLite the row is inserted by a plain `INSERT`, run to its end, and its id read from SQLite's
//! last row id, never by `INSERT ... RETURNING`: see [`rows::pets`](crate::sql::rows::pets) for
//! why. On PostgreSQL the statement returns the id.

use sea_orm::sea_query::{Alias, InsertStatement};
use sea_orm::{ConnectionTrait, DatabaseTransaction, DbBackend, DbErr};

/// In `txn`: runs `insert`, which adds one row to a table whose key is an `id` the database
/// assigns, and returns that id.
pub(crate) async fn insert_one(
    txn: &DatabaseTransaction,
    mut insert: InsertStatement,
) -> Result<i64, DbErr> {
    match txn.get_database_backend() {
        DbBackend::Sqlite => {
            let done = txn.execute_raw(DbBackend::Sqlite.build(&insert)).await?;
            i64::try_from(done.last_insert_id())
                .map_err(|_| DbErr::Custom("SQLite returned a row id out of range".to_owned()))
        }
        backend => {
            insert.returning_col(Alias::new("id"));
            let row = txn.query_one_raw(backend.build(&insert)).await?;
            row.ok_or_else(|| DbErr::Custom("an insert returned no id".to_owned()))?
                .try_get::<i64>("", "id")
        }
    }
}
