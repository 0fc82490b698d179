//! What changing and removing pets needs: the `pet_counts` table that the inventory reads,
//! kept by triggers on `pets`, and orders that may name a removed pet.
//!
//! - `pet_counts` holds how many pets have each status, split into slots that the
//!   inventory adds up: one slot on SQLite, whose writes are serialised anyway; sixteen on
//!   PostgreSQL, one per writing connection's process id modulo 16, so that instances
//!   adding pets at once do not all wait on one row. Triggers on `pets`, not the service's
//!   code, keep it: every write to `pets` moves it, whichever binary made it.
//! - The foreign key from `orders.pet_id` to `pets` goes: a removed pet's closed orders
//!   stay. On SQLite that takes a rebuild of `orders` (see `rebuild.rs`).

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DbBackend;

use super::Compatibility;
use super::rebuild::rebuild_sqlite_table;

#[derive(DeriveIden)]
enum PetCounts {
    Table,
    Status,
    Slot,
    Pets,
}

#[derive(Clone, DeriveIden)]
enum Orders {
    Table,
    Id,
    PetId,
    Owner,
    Status,
    CreatedAt,
    UpdatedAt,
}

/// Expand: the binary before it still runs on the schema it leaves. It never reads the new
/// table, the triggers keep the counts for its writes too, and it wrote no order that the
/// foreign key refused.
pub const COMPATIBILITY: Compatibility = Compatibility::Expand;

/// The statuses counted, as `pets.status` spells them.
const STATUSES: [&str; 3] = ["available", "pending", "sold"];

/// The slots of PostgreSQL's counts.
const PG_SLOTS: u32 = 16;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &'static str {
        "m20261126_000007_pet_changes"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(PetCounts::Table)
                    .col(ColumnDef::new(PetCounts::Status).string_len(16).not_null())
                    .col(ColumnDef::new(PetCounts::Slot).integer().not_null())
                    .col(ColumnDef::new(PetCounts::Pets).big_integer().not_null())
                    .primary_key(Index::create().col(PetCounts::Status).col(PetCounts::Slot))
                    .to_owned(),
            )
            .await?;
        let connection = manager.get_connection();
        let backend = manager.get_database_backend();
        if backend == DbBackend::Postgres {
            // The previous binary may be writing meanwhile (an Expand migration runs beside
            // it): no pet is added, moved or removed between the counts below and the
            // triggers that take over from them. SQLite migrates under its write lock.
            connection.execute_unprepared("LOCK TABLE pets IN SHARE ROW EXCLUSIVE MODE").await?;
        }
        // Slot 0 starts with the pets there are, counted in one statement; the others, with
        // none.
        let slots = if backend == DbBackend::Postgres { PG_SLOTS } else { 1 };
        let statuses =
            STATUSES.map(|status| format!("SELECT '{status}' AS status")).join(" UNION ALL ");
        connection
            .execute_unprepared(&format!(
                "INSERT INTO pet_counts (status, slot, pets) \
                 SELECT statuses.status, 0, COUNT(pets.id) \
                 FROM ({statuses}) AS statuses \
                 LEFT JOIN pets ON pets.status = statuses.status \
                 GROUP BY statuses.status"
            ))
            .await?;
        for status in STATUSES {
            for slot in 1..slots {
                connection
                    .execute_unprepared(&format!(
                        "INSERT INTO pet_counts (status, slot, pets) VALUES ('{status}', {slot}, 0)"
                    ))
                    .await?;
            }
        }
        if backend == DbBackend::Postgres {
            for statement in PG_COUNTING {
                connection.execute_unprepared(statement).await?;
            }
            // Under the lock on `pets`, this waits for the orders' writes in flight. One that
            // holds an order and waits for `pets` deadlocks with it: PostgreSQL breaks the
            // deadlock by undoing one side, the writer's batch (answered 503, retried) or this
            // migration (`migrate` again).
            connection
                .execute_unprepared("ALTER TABLE orders DROP CONSTRAINT IF EXISTS orders_pet_id")
                .await?;
        } else {
            for statement in SQLITE_COUNTING {
                connection.execute_unprepared(statement).await?;
            }
            orders_without_foreign_key(manager).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let connection = manager.get_connection();
        let drops: &[&str] = if manager.get_database_backend() == DbBackend::Postgres {
            &[
                "DROP TRIGGER pet_counts_added ON pets",
                "DROP TRIGGER pet_counts_moved ON pets",
                "DROP TRIGGER pet_counts_removed ON pets",
                "DROP FUNCTION pet_counts_added()",
                "DROP FUNCTION pet_counts_moved()",
                "DROP FUNCTION pet_counts_removed()",
            ]
        } else {
            &[
                "DROP TRIGGER pet_counts_added",
                "DROP TRIGGER pet_counts_moved",
                "DROP TRIGGER pet_counts_removed",
            ]
        };
        for statement in drops {
            connection.execute_unprepared(statement).await?;
        }
        manager.drop_table(Table::drop().table(PetCounts::Table).to_owned()).await
    }
}

/// SQLite's triggers: one count moved per row.
const SQLITE_COUNTING: [&str; 3] = [
    "CREATE TRIGGER pet_counts_added AFTER INSERT ON pets BEGIN \
         UPDATE pet_counts SET pets = pets + 1 WHERE status = NEW.status AND slot = 0; \
     END",
    "CREATE TRIGGER pet_counts_moved AFTER UPDATE OF status ON pets \
         WHEN OLD.status <> NEW.status BEGIN \
         UPDATE pet_counts SET pets = pets - 1 WHERE status = OLD.status AND slot = 0; \
         UPDATE pet_counts SET pets = pets + 1 WHERE status = NEW.status AND slot = 0; \
     END",
    "CREATE TRIGGER pet_counts_removed AFTER DELETE ON pets BEGIN \
         UPDATE pet_counts SET pets = pets - 1 WHERE status = OLD.status AND slot = 0; \
     END",
];

/// PostgreSQL's triggers: one update per statement and status (a batch of added pets moves
/// each count once), in the slot of the writing connection. Each first locks its slot's
/// rows in one order (`ORDER BY status`), so that two transactions whose connections share a
/// slot wait for each other instead of locking its rows in opposite orders.
const PG_COUNTING: [&str; 6] = [
    "CREATE FUNCTION pet_counts_added() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
         PERFORM 1 FROM pet_counts WHERE slot = pg_backend_pid() % 16 ORDER BY status FOR UPDATE; \
         UPDATE pet_counts SET pets = pet_counts.pets + added.n \
         FROM (SELECT status, COUNT(*) AS n FROM added_rows GROUP BY status) AS added \
         WHERE pet_counts.status = added.status AND pet_counts.slot = pg_backend_pid() % 16; \
         RETURN NULL; \
     END $$",
    "CREATE FUNCTION pet_counts_moved() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
         PERFORM 1 FROM pet_counts WHERE slot = pg_backend_pid() % 16 ORDER BY status FOR UPDATE; \
         UPDATE pet_counts SET pets = pet_counts.pets + moved.n \
         FROM (SELECT status, SUM(n) AS n FROM ( \
                 SELECT status, COUNT(*) AS n FROM new_rows GROUP BY status \
                 UNION ALL \
                 SELECT status, -COUNT(*) AS n FROM old_rows GROUP BY status) AS both_sides \
               GROUP BY status HAVING SUM(n) <> 0) AS moved \
         WHERE pet_counts.status = moved.status AND pet_counts.slot = pg_backend_pid() % 16; \
         RETURN NULL; \
     END $$",
    "CREATE FUNCTION pet_counts_removed() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
         PERFORM 1 FROM pet_counts WHERE slot = pg_backend_pid() % 16 ORDER BY status FOR UPDATE; \
         UPDATE pet_counts SET pets = pet_counts.pets - removed.n \
         FROM (SELECT status, COUNT(*) AS n FROM removed_rows GROUP BY status) AS removed \
         WHERE pet_counts.status = removed.status AND pet_counts.slot = pg_backend_pid() % 16; \
         RETURN NULL; \
     END $$",
    "CREATE TRIGGER pet_counts_added AFTER INSERT ON pets REFERENCING NEW TABLE AS added_rows \
     FOR EACH STATEMENT EXECUTE FUNCTION pet_counts_added()",
    "CREATE TRIGGER pet_counts_moved AFTER UPDATE ON pets \
     REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows \
     FOR EACH STATEMENT EXECUTE FUNCTION pet_counts_moved()",
    "CREATE TRIGGER pet_counts_removed AFTER DELETE ON pets REFERENCING OLD TABLE AS removed_rows \
     FOR EACH STATEMENT EXECUTE FUNCTION pet_counts_removed()",
];

/// Rebuilds SQLite's `orders` as it was created, without its foreign key to `pets`.
async fn orders_without_foreign_key(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    #[derive(DeriveIden)]
    enum OrdersRebuilt {
        Table,
    }
    let create = Table::create()
        .table(OrdersRebuilt::Table)
        .col(ColumnDef::new(Orders::Id).big_integer().not_null().auto_increment().primary_key())
        .col(ColumnDef::new(Orders::PetId).big_integer().not_null())
        .col(ColumnDef::new(Orders::Owner).string_len(32).not_null())
        .col(ColumnDef::new(Orders::Status).string_len(16).not_null())
        .col(ColumnDef::new(Orders::CreatedAt).timestamp_with_time_zone().not_null())
        .col(ColumnDef::new(Orders::UpdatedAt).timestamp_with_time_zone().not_null())
        .to_owned();
    let index = |name: &str, columns: &[Orders]| {
        let mut index = Index::create();
        index.name(name).table(Orders::Table);
        for column in columns {
            index.col(column.clone());
        }
        index.clone()
    };
    let indexes = vec![
        index("orders_owner_id", &[Orders::Owner, Orders::Id]),
        index("orders_owner_status_id", &[Orders::Owner, Orders::Status, Orders::Id]),
        index("orders_pet_id_index", &[Orders::PetId]),
    ];
    rebuild_sqlite_table(manager, "orders", "orders_rebuilt", create, indexes).await
}
