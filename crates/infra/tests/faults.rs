//! Runs the fault suite against the SQL adapters: a full database, a commit that fails and a
//! connection lost in the middle of a transaction.

use std::sync::Mutex;
use std::time::Duration;

use animal_store_infra::conformance::faults::{Fault, Stores, writes_under_fault};
use animal_store_infra::testing::databases::{SqliteFile, fresh_postgres_url};
use animal_store_infra::{Database, DatabaseOptions};
use async_trait::async_trait;
use sea_orm::{ConnectionTrait, DatabaseConnection, TransactionTrait};
use tokio::task::JoinHandle;

/// The pages the SQLite file under test may hold: room for the schema and a few pets.
const MAX_PAGES: u32 = 64;

/// Runs the suite on `db`, with a witness opened separately on `url`, without a read cache:
/// every read it makes sees what is stored.
async fn check(db: &Database, url: &str, fault: &dyn Fault, run: &str) {
    let options = DatabaseOptions { read_cache_mib: 0, ..DatabaseOptions::default() };
    let witness = Database::connect_with(url, options).await.expect("open the witness");
    let (pets, keys) = (db.pets(), db.keys());
    let (witness_pets, witness_keys, witness_events) =
        (witness.pets(), witness.keys(), witness.events());
    let stores = Stores {
        pets: &pets,
        keys: &keys,
        witness_pets: &witness_pets,
        witness_keys: &witness_keys,
        witness_events: &witness_events,
    };
    writes_under_fault(&stores, fault, run).await;
    witness.close().await;
}

async fn admin(url: &str) -> DatabaseConnection {
    sea_orm::Database::connect(url).await.expect("an admin connection")
}

async fn run_sql(connection: &impl ConnectionTrait, sql: &str) {
    connection.execute_unprepared(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// Another connection fills the file past the pages the store's connections may use:
/// SQLite answers "database or disk is full" to every write that needs a new page.
struct SqliteFull {
    admin: DatabaseConnection,
}

#[async_trait]
impl Fault for SqliteFull {
    fn name(&self) -> &'static str {
        "a full SQLite database"
    }

    fn is_transient(&self) -> bool {
        true
    }

    async fn inject(&self) {
        let bytes = (MAX_PAGES + 16) * 4096;
        run_sql(&self.admin, "CREATE TABLE ballast (b BLOB)").await;
        run_sql(&self.admin, &format!("INSERT INTO ballast VALUES (zeroblob({bytes}))")).await;
    }

    async fn heal(&self) {
        // The dropped pages go to the free list, where the store's writes find room.
        run_sql(&self.admin, "DROP TABLE ballast").await;
    }
}

/// A deferred foreign key that every new pet violates: SQLite refuses the COMMIT and keeps
/// the transaction open.
struct SqliteCommitFails {
    admin: DatabaseConnection,
}

#[async_trait]
impl Fault for SqliteCommitFails {
    fn name(&self) -> &'static str {
        "a failed SQLite COMMIT"
    }

    fn is_transient(&self) -> bool {
        false
    }

    async fn inject(&self) {
        for sql in [
            "CREATE TABLE fault_parent (id INTEGER PRIMARY KEY)",
            "CREATE TABLE fault_child (pet_id INTEGER REFERENCES fault_parent (id) \
             DEFERRABLE INITIALLY DEFERRED)",
            "CREATE TRIGGER fault_commit AFTER INSERT ON pets \
             BEGIN INSERT INTO fault_child VALUES (NEW.id); END",
        ] {
            run_sql(&self.admin, sql).await;
        }
    }

    async fn heal(&self) {
        for sql in
            ["DROP TRIGGER fault_commit", "DROP TABLE fault_child", "DROP TABLE fault_parent"]
        {
            run_sql(&self.admin, sql).await;
        }
    }
}

#[tokio::test]
async fn sqlite_writes_survive_a_full_database() {
    let file = SqliteFile::new();
    let options =
        DatabaseOptions { sqlite_max_pages: Some(MAX_PAGES), ..DatabaseOptions::default() };
    let db = Database::connect_with(&file.url, options).await.expect("open SQLite");
    db.migrate().await.expect("migrate");
    let fault = SqliteFull { admin: admin(&file.url).await };
    check(&db, &file.url, &fault, "full").await;
    // Twice: the store recovers from one episode into a state that survives the next.
    check(&db, &file.url, &fault, "full again").await;
    db.close().await;
}

/// A real full disk: the database lives on a small `tmpfs`, and a ballast file takes the
/// rest of it. SQLite then fails at COMMIT, when it appends the transaction to the WAL.
struct DiskFull {
    ballast: std::path::PathBuf,
}

#[async_trait]
impl Fault for DiskFull {
    fn name(&self) -> &'static str {
        "a full disk"
    }

    fn is_transient(&self) -> bool {
        true
    }

    async fn inject(&self) {
        use std::io::Write;
        let mut file = std::fs::File::create(&self.ballast).expect("create the ballast");
        let chunk = vec![0_u8; 16 * 1024];
        // Bounded: the file system is a few MiB.
        for _ in 0..4_096 {
            match file.write_all(&chunk).and_then(|()| file.sync_all()) {
                Ok(()) => {}
                Err(err) if err.kind() == std::io::ErrorKind::StorageFull => return,
                Err(err) => panic!("writing the ballast: {err}"),
            }
        }
        panic!("the file system never filled up");
    }

    async fn heal(&self) {
        std::fs::remove_file(&self.ballast).expect("remove the ballast");
    }
}

/// A small `tmpfs` mounted for one test, unmounted on drop.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    /// Mounts one, or says why it cannot (mounting needs root) and returns `None`.
    fn mount() -> Option<Self> {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=4m", "tmpfs"])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        if mounted {
            Some(Self { dir })
        } else {
            eprintln!("skipped: cannot mount a tmpfs (this test needs root)");
            None
        }
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(self.dir.path()).status();
    }
}

#[tokio::test]
async fn sqlite_writes_survive_a_full_disk() {
    let Some(disk) = SmallDisk::mount() else {
        return;
    };
    let url = format!("sqlite://{}", disk.dir.path().join("store.db").display());
    let db = Database::connect(&url).await.expect("open SQLite");
    db.migrate().await.expect("migrate");
    let fault = DiskFull { ballast: disk.dir.path().join("ballast") };
    check(&db, &url, &fault, "disk").await;
    check(&db, &url, &fault, "disk again").await;
    db.close().await;
}

#[tokio::test]
async fn sqlite_writes_survive_a_failed_commit() {
    let file = SqliteFile::new();
    let db = file.open().await;
    let fault = SqliteCommitFails { admin: admin(&file.url).await };
    check(&db, &file.url, &fault, "commit").await;
    check(&db, &file.url, &fault, "commit again").await;
    db.close().await;
}

/// A deferred constraint trigger that refuses every new pet when the transaction commits.
struct PostgresCommitFails {
    admin: DatabaseConnection,
}

#[async_trait]
impl Fault for PostgresCommitFails {
    fn name(&self) -> &'static str {
        "a failed PostgreSQL COMMIT"
    }

    fn is_transient(&self) -> bool {
        false
    }

    async fn inject(&self) {
        for sql in [
            "CREATE FUNCTION fault_refuse() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN RAISE EXCEPTION 'refused at commit'; END $$",
            "CREATE CONSTRAINT TRIGGER fault_commit AFTER INSERT ON pets \
             DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION fault_refuse()",
        ] {
            run_sql(&self.admin, sql).await;
        }
    }

    async fn heal(&self) {
        run_sql(&self.admin, "DROP TRIGGER fault_commit ON pets").await;
        run_sql(&self.admin, "DROP FUNCTION fault_refuse()").await;
    }
}

/// Locks the pets table, waits for the store's writer to queue behind the lock in the middle
/// of its transaction, terminates that connection (`pg_terminate_backend`), then unlocks.
struct PostgresConnectionLost {
    url: String,
    terminator: Mutex<Option<JoinHandle<()>>>,
}

#[async_trait]
impl Fault for PostgresConnectionLost {
    fn name(&self) -> &'static str {
        "a PostgreSQL connection lost mid-transaction"
    }

    fn is_transient(&self) -> bool {
        true
    }

    async fn inject(&self) {
        let locker = admin(&self.url).await;
        let lock = locker.begin().await.expect("begin");
        run_sql(&lock, "LOCK TABLE pets IN EXCLUSIVE MODE").await;
        let watcher = admin(&self.url).await;
        let terminator = tokio::spawn(async move {
            let waiting = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                           WHERE datname = current_database() AND wait_event_type = 'Lock'";
            let mut terminated = false;
            for _ in 0..400 {
                let rows = watcher.query_all_raw(sea_orm::Statement::from_string(
                    watcher.get_database_backend(),
                    waiting,
                ));
                if !rows.await.expect("look for lock waiters").is_empty() {
                    terminated = true;
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            lock.commit().await.expect("unlock");
            assert!(terminated, "no writer waited for the lock within 4 s");
        });
        *self.terminator.lock().expect("lock") = Some(terminator);
    }

    async fn heal(&self) {
        let terminator = self.terminator.lock().expect("lock").take();
        if let Some(terminator) = terminator {
            terminator.await.expect("the terminator");
        }
    }
}

#[tokio::test]
async fn postgres_writes_survive_a_failed_commit() {
    let Some(url) = fresh_postgres_url().await else {
        return;
    };
    let db = Database::connect(&url).await.expect("open PostgreSQL");
    db.migrate().await.expect("migrate");
    let fault = PostgresCommitFails { admin: admin(&url).await };
    check(&db, &url, &fault, "commit").await;
    check(&db, &url, &fault, "commit again").await;
    db.close().await;
}

#[tokio::test]
async fn postgres_writes_survive_a_lost_connection() {
    let Some(url) = fresh_postgres_url().await else {
        return;
    };
    let db = Database::connect(&url).await.expect("open PostgreSQL");
    db.migrate().await.expect("migrate");
    let fault = PostgresConnectionLost { url: url.clone(), terminator: Mutex::new(None) };
    check(&db, &url, &fault, "lost").await;
    check(&db, &url, &fault, "lost again").await;
    db.close().await;
}
