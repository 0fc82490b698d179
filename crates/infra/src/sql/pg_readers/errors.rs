//! tokio-postgres's errors as sqlx's, which the rest of the service classifies (see
//! [`failure`](super::super::failure)).

use std::borrow::Cow;
use std::sync::Arc;

use sea_orm::sqlx::Error;
use sea_orm::sqlx::error::{DatabaseError, ErrorKind};
use sea_orm::{DbErr, RuntimeErr};
use tokio_postgres::error::{DbError, Severity, SqlState};

/// A connection that could not be had: the database cannot be reached.
pub(super) fn connection_error(err: Error) -> DbErr {
    DbErr::Conn(RuntimeErr::SqlxError(Arc::new(err)))
}

/// Whether the server ends the connection with this error: a `FATAL` (terminated by an
/// administrator, the server shutting down) or a `PANIC`. The connection may not have seen
/// its end yet when the read gets the error.
pub(super) fn ends_the_connection(err: &tokio_postgres::Error) -> bool {
    // The untranslated severity: the other is in the server's language.
    err.as_db_error().is_some_and(|err| match err.parsed_severity() {
        Some(severity) => matches!(severity, Severity::Fatal | Severity::Panic),
        None => matches!(err.severity(), "FATAL" | "PANIC"),
    })
}

/// tokio-postgres's error as sqlx's, which the rest of the service classifies: the server's
/// error with its SQLSTATE; a connection that failed or closed as an I/O error, which may
/// pass; anything else (a value of the wrong type, say) as a decoding error, which will not.
pub(super) fn sqlx_error(err: tokio_postgres::Error) -> RuntimeErr {
    use std::error::Error as _;
    let err = if let Some(server) = err.as_db_error() {
        Error::Database(Box::new(ServerError(server.clone())))
    } else if err.is_closed()
        || err.source().is_some_and(<dyn std::error::Error>::is::<std::io::Error>)
    {
        Error::Io(std::io::Error::other(err))
    } else {
        Error::Decode(Box::new(err))
    };
    RuntimeErr::SqlxError(Arc::new(err))
}

/// An error the server answered, as sqlx's database error.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct ServerError(DbError);

impl DatabaseError for ServerError {
    fn message(&self) -> &str {
        self.0.message()
    }

    fn code(&self) -> Option<Cow<'_, str>> {
        Some(Cow::Borrowed(self.0.code().code()))
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
        match self.0.code() {
            code if *code == SqlState::UNIQUE_VIOLATION => ErrorKind::UniqueViolation,
            code if *code == SqlState::FOREIGN_KEY_VIOLATION => ErrorKind::ForeignKeyViolation,
            code if *code == SqlState::NOT_NULL_VIOLATION => ErrorKind::NotNullViolation,
            code if *code == SqlState::CHECK_VIOLATION => ErrorKind::CheckViolation,
            _ => ErrorKind::Other,
        }
    }
}
