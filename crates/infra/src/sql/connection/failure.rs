//! What a driver error means for the domain: the one place that decides which failures are
//! worth retrying (503) and which are bugs (500), for every SQL adapter.

use animal_store_domain::RepositoryError;
use sea_orm::{DbErr, RuntimeErr, SqlErr};
use thiserror::Error;

/// What a driver error means for the domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FailureKind {
    Duplicate,
    Unavailable,
    Backend,
}

impl FailureKind {
    /// Unique violations are duplicates. Trouble that retrying can get past is
    /// unavailability: no connection, a lost one, a busy or locked database, a full disk, an
    /// I/O error, a server shutting down, a conflict between transactions. Everything else
    /// (a bad statement, a violated constraint) is a backend failure: a bug.
    pub(crate) fn of(err: &DbErr) -> Self {
        if matches!(err.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) {
            return Self::Duplicate;
        }
        let unavailable =
            matches!(err, DbErr::ConnectionAcquire(_)) || sqlx_error(err).is_some_and(is_transient);
        if unavailable { Self::Unavailable } else { Self::Backend }
    }

    pub(crate) fn with_source(
        self,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> RepositoryError {
        match self {
            Self::Duplicate => RepositoryError::Duplicate,
            Self::Unavailable => RepositoryError::Unavailable(Box::new(source)),
            Self::Backend => RepositoryError::Backend(Box::new(source)),
        }
    }
}

/// Whether a failure says the database cannot be reached at all: no connection could be
/// opened or had from the pool in time, or the server refuses new connections. Such a
/// failure will be every request's until the database is back (see `reachability.rs`). A
/// connection lost mid-query (an I/O error, a terminated backend) is not one: the next
/// connection may well work, and a failover or a killed connection must not stop requests.
pub(crate) fn is_unreachable(err: &DbErr) -> bool {
    use sea_orm::sqlx::Error;
    match err {
        DbErr::ConnectionAcquire(_) | DbErr::Conn(_) => true,
        DbErr::Exec(RuntimeErr::SqlxError(e)) | DbErr::Query(RuntimeErr::SqlxError(e)) => {
            match e.as_ref() {
                Error::PoolTimedOut => true,
                // PostgreSQL: the server is starting up or shutting down (57P03).
                Error::Database(db) => db.code().is_some_and(|code| code == "57P03"),
                _ => false,
            }
        }
        _ => false,
    }
}

/// Whether a statement failed because the server ended its connection (a restart, a
/// failover, an administrator's `pg_terminate_backend`), or the connection broke: the same
/// statement on another connection may well succeed.
pub(crate) fn is_lost_connection(err: &DbErr) -> bool {
    use sea_orm::sqlx::Error;
    let Some(e) = sqlx_error(err) else { return false };
    match e {
        Error::Io(_) | Error::Protocol(_) | Error::WorkerCrashed => true,
        // A connection exception (08), a terminated backend (57P01), a server that is
        // shutting down (57P02, 57P03).
        Error::Database(db) => db.code().is_some_and(|code| {
            code.starts_with("08") || matches!(code.as_ref(), "57P01" | "57P02" | "57P03")
        }),
        _ => false,
    }
}

/// The driver's error under `err`, when the driver raised it (connecting, or running a
/// statement).
fn sqlx_error(err: &DbErr) -> Option<&sea_orm::sqlx::Error> {
    match err {
        DbErr::Conn(RuntimeErr::SqlxError(e))
        | DbErr::Exec(RuntimeErr::SqlxError(e))
        | DbErr::Query(RuntimeErr::SqlxError(e)) => Some(e.as_ref()),
        _ => None,
    }
}

/// Whether retrying the operation later may succeed.
fn is_transient(err: &sea_orm::sqlx::Error) -> bool {
    use sea_orm::sqlx::Error;
    use sea_orm::sqlx::sqlite::SqliteError;
    match err {
        // SQLite's codes are numbers, and so are most of PostgreSQL's SQLSTATEs ("53100"):
        // which database answered decides how its code reads.
        Error::Database(db) if db.try_downcast_ref::<SqliteError>().is_some() => {
            db.code().and_then(|code| code.parse().ok()).is_some_and(is_transient_sqlite_code)
        }
        Error::Database(db) => db.code().is_some_and(|code| is_transient_sqlstate(&code)),
        Error::Io(_)
        | Error::Tls(_)
        | Error::Protocol(_)
        | Error::PoolTimedOut
        | Error::PoolClosed
        | Error::WorkerCrashed
        | Error::BeginFailed => true,
        _ => false,
    }
}

/// Whether SQLite refused `err`'s statement for a lock another connection holds
/// (`SQLITE_BUSY`, `SQLITE_LOCKED`).
pub(crate) fn is_sqlite_busy(err: &DbErr) -> bool {
    use sea_orm::sqlx::Error;
    use sea_orm::sqlx::sqlite::SqliteError;
    let Some(e) = sqlx_error(err) else { return false };
    match e {
        Error::Database(db) if db.try_downcast_ref::<SqliteError>().is_some() => db
            .code()
            .is_some_and(|code| code.parse::<i32>().is_ok_and(|code| matches!(code & 0xff, 5 | 6))),
        _ => false,
    }
}

/// Whether SQLite's (extended) result code says the trouble is the database's state, not
/// the statement.
fn is_transient_sqlite_code(code: i32) -> bool {
    // The primary code is the low byte of an extended one: SQLITE_IOERR (10), SQLITE_BUSY
    // (5), SQLITE_LOCKED (6), SQLITE_READONLY (8), SQLITE_FULL (13).
    matches!(code & 0xff, 5 | 6 | 8 | 10 | 13)
}

/// Whether PostgreSQL's SQLSTATE says the trouble is the database's state, not the
/// statement: connection exceptions (08), insufficient resources such as a full disk (53),
/// operator intervention such as a terminated backend or a server shutting down (57, a
/// cancelled statement included), system errors (58), serialization failures and deadlocks
/// (40001, 40P01), a read-only transaction on a standby after a failover (25006).
fn is_transient_sqlstate(code: &str) -> bool {
    matches!(code.get(..2), Some("08" | "53" | "57" | "58"))
        || matches!(code, "40001" | "40P01" | "25006")
}

/// Turns a driver error into the domain's.
pub(crate) fn repository_error(err: DbErr) -> RepositoryError {
    FailureKind::of(&err).with_source(err)
}

/// A stored row that no longer satisfies the domain's rules (edited by hand, say).
#[derive(Debug, Error)]
#[error("a stored {table} row is invalid: {reason}")]
struct CorruptRow {
    table: &'static str,
    reason: String,
}

/// A domain error met inside a write's transaction, as the error that undoes it (a job of
/// the writer leaves decisions in its output, and only failures in its error).
pub(crate) fn in_write(err: &RepositoryError) -> DbErr {
    DbErr::Custom(format!("{err}: {:?}", std::error::Error::source(err)))
}

pub(crate) fn corrupt(table: &'static str, reason: impl std::fmt::Display) -> RepositoryError {
    RepositoryError::Backend(Box::new(CorruptRow { table, reason: reason.to_string() }))
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;
    use std::sync::Arc;

    use sea_orm::sqlx::error::{DatabaseError, ErrorKind};
    use sea_orm::{ConnectionTrait, Database};

    use super::*;

    /// An error PostgreSQL answered, as sqlx hands it on: its SQLSTATE and message.
    #[derive(Debug, Error)]
    #[error("{severity}: {message}")]
    struct Answered {
        severity: &'static str,
        code: &'static str,
        message: &'static str,
    }

    impl DatabaseError for Answered {
        fn message(&self) -> &str {
            self.message
        }
        fn code(&self) -> Option<Cow<'_, str>> {
            Some(Cow::Borrowed(self.code))
        }
        fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
            self
        }
        fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
            self
        }
        fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
            self
        }
        fn kind(&self) -> ErrorKind {
            ErrorKind::Other
        }
    }

    fn postgres(severity: &'static str, code: &'static str) -> DbErr {
        let answered = Answered { severity, code, message: "as the server said" };
        DbErr::Query(RuntimeErr::SqlxError(Arc::new(sea_orm::sqlx::Error::Database(Box::new(
            answered,
        )))))
    }

    /// A transaction's failure, as the writer hands it to every caller of its batch.
    #[derive(Debug, Error)]
    #[error(transparent)]
    struct Transaction(Arc<DbErr>);

    /// Every shape a failed write reaches the domain in: the statement's, the commit's,
    /// and the writer's transaction that wraps either.
    fn every_wrapping(err: impl Fn() -> DbErr) -> Vec<(&'static str, RepositoryError)> {
        let exec = match err() {
            DbErr::Query(runtime) => DbErr::Exec(runtime),
            other => other,
        };
        vec![
            ("a query", repository_error(err())),
            ("a statement", repository_error(exec)),
            ("a transaction", FailureKind::of(&err()).with_source(Transaction(Arc::new(err())))),
        ]
    }

    #[test]
    fn postgres_states_that_retrying_may_cure_are_unavailability_however_wrapped() {
        // A full disk PANICs the server (53100), and its SQLSTATE is all digits.
        for (severity, code) in [
            ("PANIC", "53100"),
            ("ERROR", "53200"),
            ("FATAL", "57P01"),
            ("ERROR", "57014"),
            ("FATAL", "08006"),
            ("ERROR", "40001"),
            ("ERROR", "40P01"),
            ("ERROR", "25006"),
            ("FATAL", "58030"),
        ] {
            for (wrapping, failure) in every_wrapping(|| postgres(severity, code)) {
                assert!(
                    matches!(failure, RepositoryError::Unavailable(_)),
                    "{severity} {code} in {wrapping} is unavailability, got {failure:?}"
                );
            }
        }
    }

    #[test]
    fn postgres_states_of_a_wrong_statement_are_backend_failures() {
        for code in ["42601", "42P01", "23502", "22003", "10000", "13000"] {
            for (wrapping, failure) in every_wrapping(|| postgres("ERROR", code)) {
                assert!(
                    matches!(failure, RepositoryError::Backend(_)),
                    "{code} in {wrapping} is a backend failure, got {failure:?}"
                );
            }
        }
    }

    #[tokio::test]
    async fn a_full_sqlite_database_is_unavailability_and_a_wrong_statement_is_not() {
        let db = Database::connect("sqlite::memory:").await.expect("an in-memory database");
        for statement in ["PRAGMA max_page_count = 3", "CREATE TABLE t (b BLOB)"] {
            db.execute_unprepared(statement).await.expect("set up");
        }
        let full = db
            .execute_unprepared("INSERT INTO t VALUES (zeroblob(1000000))")
            .await
            .expect_err("more than the database may hold");
        assert!(
            matches!(repository_error(full), RepositoryError::Unavailable(_)),
            "SQLITE_FULL is retried later"
        );
        let wrong =
            db.execute_unprepared("INSERT INTO missing VALUES (1)").await.expect_err("no table");
        assert!(matches!(repository_error(wrong), RepositoryError::Backend(_)));
    }
}
