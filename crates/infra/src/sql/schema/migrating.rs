//! Applying the migrations one process at a time. Any number of processes may start at once
//! on the same database (the replicas of a deployment, an operator's `keys` command beside a
//! starting server): each takes a lock held in the database itself, waits for it up to
//! [`LOCK_WAIT`] (saying once that it waits), and only then reads which migrations are
//! applied, so that each finds the work of the one before it done and none applies a
//! migration twice.
//!
//! - PostgreSQL: a session-level advisory lock (`pg_try_advisory_lock`) on the one
//!   connection the migrations run on, released when they end (or when the connection
//!   closes, should the process die).
//! - SQLite: the database's write lock, taken by `BEGIN IMMEDIATE`; the migrations run in
//!   that transaction, so that they are applied all together or not at all.

use std::future::Future;
use std::time::{Duration, Instant};

use sea_orm::{
    ConnectionTrait, DatabaseConnection, DbBackend, DbErr, SqliteTransactionMode, Statement,
    TransactionOptions, TransactionTrait,
};
use sea_orm_migration::{IntoSchemaManagerConnection, MigratorTrait};

use crate::sql::connection::connector::Backend;
use crate::sql::connection::failure::is_sqlite_busy;
use crate::sql::schema::migration::Migrator;
use crate::sql::schema::window;

/// How long a process waits for another's migrations before it gives up.
pub(crate) const LOCK_WAIT: Duration = Duration::from_secs(60);
/// How often it tries the lock again meanwhile.
const RETRY: Duration = Duration::from_millis(100);
/// The key of PostgreSQL's advisory lock: "animal-store migrations", as any number no other
/// lock of the service uses.
const PG_LOCK_KEY: i64 = 0x0a51_0e60_0001;

/// Applies the first `steps` pending migrations (all when `None`) on `connection`, a pool of
/// one connection to `backend`, holding the database's migration lock.
pub(crate) async fn apply(
    connection: &DatabaseConnection,
    backend: Backend,
    steps: Option<u32>,
) -> Result<(), DbErr> {
    match backend {
        Backend::Postgres => {
            wait_for(|| try_advisory_lock(connection)).await?;
            let applied = up(connection, steps).await;
            let unlock = Statement::from_sql_and_values(
                DbBackend::Postgres,
                "SELECT pg_advisory_unlock($1)",
                [PG_LOCK_KEY.into()],
            );
            let unlocked = connection.execute_raw(unlock).await;
            applied.and(unlocked.map(drop))
        }
        Backend::Sqlite => {
            // Tried without waiting, so that this process can say it waits.
            connection.execute_unprepared("PRAGMA busy_timeout = 0").await?;
            let immediate = TransactionOptions {
                sqlite_transaction_mode: Some(SqliteTransactionMode::Immediate),
                ..TransactionOptions::default()
            };
            let transaction = wait_for(|| async {
                match connection.begin_with_options(immediate).await {
                    Ok(transaction) => Ok(Some(transaction)),
                    Err(err) if is_sqlite_busy(&err) => Ok(None),
                    Err(err) => Err(err),
                }
            })
            .await?;
            up(&transaction, steps).await?;
            transaction.commit().await
        }
    }
}

/// Applies the first `steps` pending migrations (all when `None`) and, when that leaves the
/// database at this binary's level, records its window: under the lock, having read what is
/// applied only now. A database that a newer version migrated meanwhile is left as it is.
async fn up<C>(connection: &C, steps: Option<u32>) -> Result<(), DbErr>
where
    C: ConnectionTrait,
    for<'c> &'c C: IntoSchemaManagerConnection<'c>,
{
    let known = names();
    let unknown: Vec<String> =
        recorded(connection).await?.into_iter().filter(|name| !known.contains(name)).collect();
    if !unknown.is_empty() {
        return Err(DbErr::Custom(format!(
            "a newer version applied migrations this one does not know ({}) meanwhile; \
             nothing was changed: start again",
            unknown.join(", ")
        )));
    }
    Migrator::up(connection, steps).await?;
    if steps.is_none() {
        window::record(connection, known.len()).await?;
    }
    Ok(())
}

/// The names of this binary's migrations, oldest first.
pub(crate) fn names() -> Vec<String> {
    Migrator::migrations().iter().map(|migration| migration.name().to_owned()).collect()
}

/// The migrations the database records as applied (none when no migration touched it).
pub(crate) async fn recorded<C>(connection: &C) -> Result<Vec<String>, DbErr>
where
    C: ConnectionTrait,
    for<'c> &'c C: IntoSchemaManagerConnection<'c>,
{
    use sea_orm::EntityTrait as _;
    use sea_orm_migration::{SchemaManager, seaql_migrations};
    let table = Migrator::migration_table_name().to_string();
    if !SchemaManager::new(connection).has_table(table).await? {
        return Ok(Vec::new());
    }
    let rows = seaql_migrations::Entity::find().all(connection).await?;
    Ok(rows.into_iter().map(|row| row.version).collect())
}

/// Takes the advisory lock if no other session holds it.
async fn try_advisory_lock(connection: &DatabaseConnection) -> Result<Option<()>, DbErr> {
    let lock = Statement::from_sql_and_values(
        DbBackend::Postgres,
        "SELECT pg_try_advisory_lock($1) AS locked",
        [PG_LOCK_KEY.into()],
    );
    let row = connection.query_one_raw(lock).await?;
    let locked = row.map(|row| row.try_get::<bool>("", "locked")).transpose()?;
    Ok(locked.unwrap_or(false).then_some(()))
}

/// Tries `attempt` until it returns the lock, for at most [`LOCK_WAIT`].
async fn wait_for<T, F, Fut>(mut attempt: F) -> Result<T, DbErr>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>, DbErr>>,
{
    let started = Instant::now();
    let mut told = false;
    loop {
        if let Some(held) = attempt().await? {
            if told {
                tracing::info!("migration lock taken");
            }
            return Ok(held);
        }
        if started.elapsed() >= LOCK_WAIT {
            return Err(DbErr::Custom(format!(
                "another process held the database's migration lock for {} s; nothing was \
                 changed: start again once it is done",
                LOCK_WAIT.as_secs()
            )));
        }
        if !told {
            tracing::info!(
                wait_s = LOCK_WAIT.as_secs(),
                "another process is applying migrations: waiting for it"
            );
            told = true;
        }
        tokio::time::sleep(RETRY).await;
    }
}
