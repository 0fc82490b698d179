//! What a command does with the database's schema when it opens it: migrate it, require it
//! up to date, or run beside a newer version's migrations when their window admits this
//! binary (`docs/operations.md#upgrading-without-downtime`).

use animal_store_infra::{Database, SchemaStatus};
use anyhow::Context;

/// What a command does with the database's schema when it opens it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schema {
    /// Applies the migrations it lacks (`serve --migrate auto`, `migrate`).
    Migrate,
    /// Applies nothing, and refuses a database that lacks a migration (`serve --migrate
    /// never`).
    Require,
    /// Applies the migrations of a new database, one no migration touched yet, and refuses
    /// one that lacks some (`keys`): a database that has a schema may have servers running on
    /// it, and only an operator's `migrate` moves their schema on.
    MigrateNew,
    /// Leaves the schema as it is (`backup`, `migrate --dry-run`).
    AsIs,
}

/// Brings `db`'s schema to what `schema` says, or says in one line why it cannot.
pub(crate) async fn prepare(db: &Database, schema: Schema) -> anyhow::Result<()> {
    let status =
        db.schema_status().await.context("cannot read which migrations the database has")?;
    if !status.unknown.is_empty() {
        return newer(&status);
    }
    let missing = || {
        format!(
            "the database lacks {} migration(s) this version needs ({})",
            status.pending.len(),
            status.pending.join(", ")
        )
    };
    match schema {
        Schema::AsIs => Ok(()),
        Schema::Migrate => {
            db.migrate().await.context("cannot bring the database schema up to date")
        }
        Schema::MigrateNew if status.applied == 0 => {
            db.migrate().await.context("cannot bring the database schema up to date")
        }
        Schema::Require | Schema::MigrateNew if status.pending.is_empty() => Ok(()),
        Schema::Require => anyhow::bail!(
            "{}: run `animal-store migrate` with this version first, or serve with --migrate auto",
            missing()
        ),
        Schema::MigrateNew => anyhow::bail!(
            "{}: `keys` commands migrate only a new database; run `animal-store migrate` with \
             this version first",
            missing()
        ),
    }
}

/// A database a newer version migrated (it has migrations this binary does not know): this
/// binary runs on it, migrating nothing, when the window the newer version recorded admits
/// its level, and refuses in one line otherwise.
fn newer(status: &SchemaStatus) -> anyhow::Result<()> {
    let level = Database::schema_level();
    let newer = status.unknown.join(", ");
    let Some(window) = status.window else {
        anyhow::bail!(
            "the database has migrations this version does not know ({newer}), and no record \
             of which versions run on it: run the version that migrated it, or a newer one"
        );
    };
    if !status.pending.is_empty() {
        anyhow::bail!(
            "the database has migrations this version does not know ({newer}) and lacks some \
             it knows ({}): run the version that migrated it, or a newer one",
            status.pending.join(", ")
        );
    }
    if !window.admits(level) {
        anyhow::bail!(
            "the database is at schema level {}, which runs versions of schema level {} or newer; \
             this version is at schema level {level}: run a version of schema level {} or newer \
             (`animal-store --version` says a version's level)",
            window.level,
            window.oldest_level,
            window.oldest_level
        );
    }
    tracing::info!(
        schema = level,
        database_schema = window.level,
        oldest_schema = window.oldest_level,
        newer_migrations = %newer,
        "the database is at a newer schema level that still runs this version: running \
         alongside its newer migrations, applying none"
    );
    Ok(())
}
