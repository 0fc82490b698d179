//! SQLite's hottest writes on the writer's own thread: pets added (with or without an
//! idempotency key) and their events, run on a rusqlite connection the writer owns.
//!
//! Through sqlx-sqlite, every statement of a transaction hops from the writer's thread to
//! the connection's worker thread and back, and the next statement waits for that round
//! trip: under load the writer's transactions waited on those hops, not on SQLite. Here the
//! writer's thread runs the statements itself, as the pet reads run on the readers' own
//! threads (`reader_threads.rs`). Every other write still runs through SeaORM, on the
//! writer's sqlx connection, in transactions of its own (see `writer.rs`).
//!
//! The statements are SeaORM's, built as for sqlx, and their values are bound as sqlx binds
//! them: a time is the RFC 3339 text sqlx writes ([`stored_time`]), never rusqlite's own
//! text, so that the stored times of a column compare in time order whichever connection
//! wrote them.

use chrono::{DateTime, Utc};
use sea_orm::{Statement, Value};
use sea_query_rusqlite::rusqlite::{self, Connection, Row};
use sea_query_rusqlite::{RusqliteValue, RusqliteValues};

/// A time as SQLite's columns hold it: the text sqlx writes (RFC 3339, seconds and their
/// fraction as needed), which compares in time order with the text stored.
pub(super) fn stored_time(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, false)
}

/// The values of `statement`, bound as sqlx binds them (see the module's documentation).
fn values(statement: &Statement) -> RusqliteValues {
    let values = statement.values.iter().flat_map(|values| values.0.iter());
    RusqliteValues(
        values
            .map(|value| match value {
                Value::ChronoDateTimeUtc(at) => {
                    Value::String(at.as_ref().map(|at| stored_time(*at)))
                }
                other => other.clone(),
            })
            .map(RusqliteValue)
            .collect(),
    )
}

/// Runs `statement`, built for SQLite by SeaORM, and returns how many rows it changed.
/// The connection prepares a statement once and keeps it for the next run of the same SQL.
pub(super) fn execute(connection: &Connection, statement: &Statement) -> rusqlite::Result<usize> {
    let values = values(statement);
    connection.prepare_cached(&statement.sql)?.execute(&*values.as_params())
}

/// Runs `statement`, built for SQLite by SeaORM, each row read by `row`.
pub(super) fn query<T>(
    connection: &Connection,
    statement: &Statement,
    row: fn(&Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<Vec<T>> {
    let values = values(statement);
    let mut prepared = connection.prepare_cached(&statement.sql)?;
    prepared.query_map(&*values.as_params(), row)?.collect()
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone as _;
    use proptest::prelude::*;
    use sea_orm::{ConnectionTrait as _, DbBackend};

    use super::*;

    /// A time from whole seconds and nanoseconds, as the clock gives them.
    fn at(seconds: i64, nanos: u32) -> DateTime<Utc> {
        Utc.timestamp_opt(seconds, nanos).single().expect("a time")
    }

    proptest! {
        /// A stored time compares with another as the two times compare: a claim's
        /// `next_attempt_at <= ?` on the stored text, whatever fraction of a second either
        /// has (none, milliseconds, microseconds, nanoseconds).
        #[test]
        fn stored_times_compare_as_the_times_do(
            a in 1_600_000_000_i64..1_900_000_000,
            b in 1_600_000_000_i64..1_900_000_000,
            a_nanos in prop_oneof![Just(0_u32), 0_u32..1_000_000_000],
            b_nanos in prop_oneof![Just(0_u32), 0_u32..1_000_000_000],
        ) {
            let (a, b) = (at(a, a_nanos), at(b, b_nanos));
            prop_assert_eq!(stored_time(a).cmp(&stored_time(b)), a.cmp(&b));
        }
    }

    /// A time bound by sqlx and the same time bound here are stored as the same text:
    /// [`stored_time`]'s.
    #[tokio::test]
    async fn a_time_is_stored_as_sqlx_stores_it() {
        let dir = tempfile::tempdir().expect("a directory");
        let path = dir.path().join("t.db");
        let url = format!("sqlite://{}?mode=rwc", path.display());
        let db = sea_orm::Database::connect(&url).await.expect("sqlx's connection");
        db.execute_unprepared("CREATE TABLE t (by TEXT, at TEXT)").await.expect("a table");
        let connection = Connection::open(&path).expect("rusqlite's connection");
        for time in [at(1_764_180_000, 0), at(1_764_180_000, 500_000_000), at(1, 123_456_789)] {
            let insert = |by: &str| {
                let sql = "INSERT INTO t (by, at) VALUES (?, ?)";
                Statement::from_sql_and_values(DbBackend::Sqlite, sql, [by.into(), time.into()])
            };
            db.execute_raw(insert("sqlx")).await.expect("stored by sqlx");
            assert_eq!(execute(&connection, &insert("rusqlite")).expect("stored here"), 1);
            let select = Statement::from_string(DbBackend::Sqlite, "SELECT at FROM t ORDER BY by");
            let texts = query(&connection, &select, |row| row.get::<_, String>(0)).expect("read");
            assert_eq!(texts, [stored_time(time), stored_time(time)], "rusqlite's, then sqlx's");
            db.execute_unprepared("DELETE FROM t").await.expect("emptied");
        }
    }
}
