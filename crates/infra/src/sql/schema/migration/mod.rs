//! Schema migrations, the same for SQLite and PostgreSQL, one file each, oldest first.
//!
//! A migration's file is named for the day it was written and its rank; its `name()` is what
//! the `seaql_migrations` table records, so it never changes once released (the first two
//! keep their original short names).
//!
//! Each file declares its [`Compatibility`]: whether the binary before it still runs on the
//! schema it leaves. A database's schema level is how many migrations it has; a binary's, how
//! many it knows. From these the database records which binaries may run on it (see
//! `window.rs`), so that the binary of the previous release keeps running beside an
//! expand-only upgrade, and can be rolled back to without a restore. `cargo xtask tidy`
//! refuses a migration that drops or renames a table or a column and calls itself `Expand`.

mod m20261122_000001_create_pets;
mod m20261122_000002_create_api_keys;
mod m20261123_000003_key_lifecycle;
mod m20261123_000004_create_orders;
mod m20261123_000005_create_idempotency_keys;
mod m20261123_000006_drop_idempotency_created_at_index;
mod m20261126_000007_pet_changes;
mod m20261126_000008_key_scopes;
mod m20261126_000009_events;
mod m20261126_000010_webhooks;
mod m20261128_000011_webhook_hardening;
mod m20261202_000012_fan_out;
mod m20261202_000013_stored_answers;
mod rebuild;

use sea_orm_migration::prelude::*;

/// Whether the binary before a migration still runs on the schema the migration leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compatibility {
    /// It does: a new table, a nullable column, an index added or dropped. The previous
    /// binary may run beside this schema, and a rollback to it needs no restore.
    Expand,
    /// It does not: a table or column dropped or renamed, a constraint the previous binary's
    /// writes would break, a meaning it would get wrong. Ships a release after the code that
    /// stopped needing what it removes.
    Contract,
}

/// One migration and its declared compatibility.
struct Step {
    migration: Box<dyn MigrationTrait>,
    compatibility: Compatibility,
}

impl Step {
    fn new(migration: impl MigrationTrait + 'static, compatibility: Compatibility) -> Self {
        Self { migration: Box::new(migration), compatibility }
    }
}

/// Every migration, oldest first: the one list.
fn steps() -> Vec<Step> {
    use m20261122_000001_create_pets as m1;
    use m20261122_000002_create_api_keys as m2;
    use m20261123_000003_key_lifecycle as m3;
    use m20261123_000004_create_orders as m4;
    use m20261123_000005_create_idempotency_keys as m5;
    use m20261123_000006_drop_idempotency_created_at_index as m6;
    use m20261126_000007_pet_changes as m7;
    use m20261126_000008_key_scopes as m8;
    use m20261126_000009_events as m9;
    use m20261126_000010_webhooks as m10;
    use m20261128_000011_webhook_hardening as m11;
    use m20261202_000012_fan_out as m12;
    use m20261202_000013_stored_answers as m13;
    vec![
        Step::new(m1::Migration, m1::COMPATIBILITY),
        Step::new(m2::Migration, m2::COMPATIBILITY),
        Step::new(m3::Migration, m3::COMPATIBILITY),
        Step::new(m4::Migration, m4::COMPATIBILITY),
        Step::new(m5::Migration, m5::COMPATIBILITY),
        Step::new(m6::Migration, m6::COMPATIBILITY),
        Step::new(m7::Migration, m7::COMPATIBILITY),
        Step::new(m8::Migration, m8::COMPATIBILITY),
        Step::new(m9::Migration, m9::COMPATIBILITY),
        Step::new(m10::Migration, m10::COMPATIBILITY),
        Step::new(m11::Migration, m11::COMPATIBILITY),
        Step::new(m12::Migration, m12::COMPATIBILITY),
        Step::new(m13::Migration, m13::COMPATIBILITY),
    ]
}

/// The oldest schema level whose binaries still run on the schema of this binary's every
/// migration: the level of the last `Contract` migration (a binary that knows it), or 1.
pub(super) fn oldest_admitted_level() -> usize {
    steps()
        .iter()
        .rposition(|step| step.compatibility == Compatibility::Contract)
        .map_or(1, |index| index + 1)
}

/// All migrations, oldest first.
pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        steps().into_iter().map(|step| step.migration).collect()
    }
}
