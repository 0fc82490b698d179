//! What a driver error means for the domain: the one place that decides which failures are
//! worth retrying (503) and which are bugs (500), for every SQL adapter.

use animal_store_domain::RepositoryError;
use sea_orm::{DbErr, RuntimeErr, SqlErr};
use thiserror::Error;

/// What a driver error means for the domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FailureKind {
    Duplicate,
    Unavailable,
    Backend,
}

impl FailureKind {
    /// Unique violations are duplicates. Trouble that retrying can get past is
    /// unavailability: no connection, a lost one, a busy or locked database, a full disk, an
    /// I/O error, a server shutting down, a conflict between transactions. Everything else
    /// (a bad statement, a violated constraint) is a backend failure: a bug.
    pub(super) fn of(err: &DbErr) -> Self {
        if matches!(err.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) {
            return Self::Duplicate;
        }
        let unavailable = match err {
            DbErr::ConnectionAcquire(_) => true,
            DbErr::Conn(RuntimeErr::SqlxError(e))
            | DbErr::Exec(RuntimeErr::SqlxError(e))
            | DbErr::Query(RuntimeErr::SqlxError(e)) => is_transient(e),
            _ => false,
        };
        if unavailable { Self::Unavailable } else { Self::Backend }
    }

    pub(super) fn with_source(
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
pub(super) fn is_unreachable(err: &DbErr) -> bool {
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

/// Whether retrying the operation later may succeed.
fn is_transient(err: &sea_orm::sqlx::Error) -> bool {
    use sea_orm::sqlx::Error;
    match err {
        Error::Database(db) => db.code().is_some_and(|code| is_transient_code(&code)),
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

/// Whether a database's error code (SQLite's result code, PostgreSQL's SQLSTATE) says the
/// trouble is the database's state, not the statement.
fn is_transient_code(code: &str) -> bool {
    if let Ok(sqlite) = code.parse::<i32>() {
        // The primary code is the low byte of an extended one: SQLITE_IOERR (10),
        // SQLITE_BUSY (5), SQLITE_LOCKED (6), SQLITE_READONLY (8), SQLITE_FULL (13).
        return matches!(sqlite & 0xff, 5 | 6 | 8 | 10 | 13);
    }
    // PostgreSQL: connection exceptions (08), insufficient resources such as a full disk
    // (53), operator intervention such as a terminated backend or a server shutting down
    // (57, a cancelled statement included), system errors (58), serialization failures and
    // deadlocks (40001, 40P01), a read-only transaction on a standby after a failover (25006).
    matches!(code.get(..2), Some("08" | "53" | "57" | "58"))
        || matches!(code, "40001" | "40P01" | "25006")
}

/// Turns a driver error into the domain's.
pub(super) fn repository_error(err: DbErr) -> RepositoryError {
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
pub(super) fn in_write(err: &RepositoryError) -> DbErr {
    DbErr::Custom(format!("{err}: {:?}", std::error::Error::source(err)))
}

pub(super) fn corrupt(table: &'static str, reason: impl std::fmt::Display) -> RepositoryError {
    RepositoryError::Backend(Box::new(CorruptRow { table, reason: reason.to_string() }))
}
