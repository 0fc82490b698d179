//! Why a database could not be opened, migrated or backed up.

use sea_orm::DbErr;
use thiserror::Error;

/// Why a database could not be opened or migrated.
#[derive(Debug, Error)]
pub enum DatabaseError {
    /// The URL names no supported database; it holds the URL, password masked.
    #[error("unsupported database URL {0:?}: expected sqlite://PATH, postgres://... or memory://")]
    UnsupportedUrl(String),
    /// The database could not be opened. (The cause is the source, not part of this
    /// message: a chain of causes prints each once.)
    #[error("cannot open the database")]
    Connect(#[source] DbErr),
    /// The schema could not be brought up to date.
    #[error("cannot migrate the database")]
    Migrate(#[source] DbErr),
}

/// Why a backup was not made.
#[derive(Debug, Error)]
pub enum BackupError {
    /// Only SQLite databases are backed up by the service.
    #[error("backup copies SQLite databases; for PostgreSQL use its own tools, such as pg_dump")]
    NotSqlite,
    /// The path is not UTF-8.
    #[error("the backup path must be UTF-8")]
    Path,
    /// The file of the copy could not be created.
    #[error("cannot create the file of the copy")]
    Create(#[source] std::io::Error),
    /// SQLite could not write the copy.
    #[error("the copy failed")]
    Copy(#[source] DbErr),
}
