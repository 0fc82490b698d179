//! What the SQLite adapter promises beyond the port contracts: durability across reopening,
//! idempotent migrations, and a write-ahead log that stays bounded under sustained inserts.

use animal_store_domain::{CategoryId, NewPet, PetId, PetName, PetRepository, PetStatus};
use animal_store_infra::Database;
use animal_store_infra::testing::databases::SqliteFile;

fn pet(i: usize) -> NewPet {
    NewPet {
        name: PetName::new(&format!("Pet {i}")).expect("valid"),
        category_id: CategoryId::new(1).expect("valid"),
        status: PetStatus::Available,
    }
}

#[tokio::test]
async fn pets_survive_closing_and_reopening_and_migrations_run_once() {
    let file = SqliteFile::new();
    let db = file.open().await;
    let stored = db.pets().create(pet(1)).await.expect("create");
    db.close().await;

    let db = file.open().await;
    db.migrate().await.expect("migrating an up-to-date database does nothing");
    assert_eq!(db.pets().get(stored.id).await.expect("get"), Some(stored));
    let next = db.pets().create(pet(2)).await.expect("create");
    assert_eq!(next.id, PetId::new(2), "ids go on after a restart");
    db.close().await;
}

#[tokio::test]
async fn the_database_file_is_created_when_missing() {
    let file = SqliteFile::new();
    assert!(!file.dir.path().join("store.db").exists());
    file.open().await.close().await;
    assert!(file.dir.path().join("store.db").exists());
}

/// Opening a new file switches it to WAL, which needs a lock SQLite does not wait for: two
/// connections opening it at once made one start in fifty fail with "database is locked".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_database_file_opens_every_time() {
    for attempt in 0..150 {
        let file = SqliteFile::new();
        let db = Database::connect(&file.url)
            .await
            .unwrap_or_else(|err| panic!("attempt {attempt}: {err}"));
        db.migrate().await.unwrap_or_else(|err| panic!("attempt {attempt}: {err}"));
        db.close().await;
    }
}

#[tokio::test]
async fn unsupported_urls_are_refused() {
    let err = Database::connect("mysql://localhost/db").await.err().expect("refused");
    assert!(err.to_string().contains("unsupported database URL"), "{err}");
}

/// Sequential inserts are the worst case: one transaction, hence at least one WAL frame
/// set, per pet. Without checkpoints 5,000 of them leave a WAL of tens of MiB; with them it
/// stays near SQLite's auto-checkpoint size (1,000 pages, 4 MiB), and never above the
/// `journal_size_limit` plus one checkpoint interval.
#[tokio::test]
async fn the_write_ahead_log_stays_bounded_under_sustained_inserts() {
    const BOUND: u64 = 16 * 1024 * 1024;
    let file = SqliteFile::new();
    let db = file.open().await;
    let pets = db.pets();
    let mut largest = 0;
    for i in 0..5_000 {
        pets.create(pet(i)).await.expect("create");
        if i % 250 == 0 {
            // Reads run beside the writes, as they would in a server.
            pets.list(None, None, 20).await.expect("list");
            largest = largest.max(std::fs::metadata(file.wal_path()).map_or(0, |m| m.len()));
        }
    }
    largest = largest.max(std::fs::metadata(file.wal_path()).map_or(0, |m| m.len()));
    assert!(largest <= BOUND, "the WAL grew to {largest} bytes");
    drop(pets);
    db.close().await;
    let after_close = std::fs::metadata(file.wal_path()).map_or(0, |m| m.len());
    assert_eq!(after_close, 0, "closing checkpoints and empties the WAL");
}

/// The same with a read between every two writes, as a server under a mix sees them: no
/// read may hold back the checkpoints.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_write_ahead_log_stays_bounded_with_reads_between_the_writes() {
    const BOUND: u64 = 16 * 1024 * 1024;
    let file = SqliteFile::new();
    let db = file.open().await;
    let pets = db.pets();
    let reading = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (pets, reading) = (db.pets(), std::sync::Arc::clone(&reading));
            tokio::spawn(async move {
                while reading.load(std::sync::atomic::Ordering::Relaxed) {
                    pets.list(None, None, 20).await.expect("list");
                }
            })
        })
        .collect();
    let mut largest = 0;
    for i in 0..5_000 {
        pets.create(pet(i)).await.expect("create");
        pets.list(None, None, 20).await.expect("list");
        if i % 250 == 0 {
            largest = largest.max(std::fs::metadata(file.wal_path()).map_or(0, |m| m.len()));
        }
    }
    reading.store(false, std::sync::atomic::Ordering::Relaxed);
    for reader in readers {
        reader.await.expect("a reader");
    }
    largest = largest.max(std::fs::metadata(file.wal_path()).map_or(0, |m| m.len()));
    assert!(largest <= BOUND, "the WAL grew to {largest} bytes");
    drop(pets);
    db.close().await;
}

/// The same with the reads of another server on the file, which the writer does not know
/// of: the WAL still starts over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_write_ahead_log_stays_bounded_with_another_server_reading() {
    const BOUND: u64 = 16 * 1024 * 1024;
    let file = SqliteFile::new();
    let (writing, reading) = (file.open().await, file.open_witness().await);
    let pets = writing.pets();
    let busy = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let reader = {
        let (pets, busy) = (reading.pets(), std::sync::Arc::clone(&busy));
        tokio::spawn(async move {
            while busy.load(std::sync::atomic::Ordering::Relaxed) {
                pets.list(None, None, 20).await.expect("list");
            }
        })
    };
    let mut largest = 0;
    for i in 0..5_000 {
        pets.create(pet(i)).await.expect("create");
        if i % 100 == 0 {
            largest = largest.max(std::fs::metadata(file.wal_path()).map_or(0, |m| m.len()));
        }
    }
    busy.store(false, std::sync::atomic::Ordering::Relaxed);
    reader.await.expect("the reader");
    largest = largest.max(std::fs::metadata(file.wal_path()).map_or(0, |m| m.len()));
    assert!(largest <= BOUND, "the WAL grew to {largest} bytes");
    drop(pets);
    reading.close().await;
    writing.close().await;
}

/// The bundled SQLite is built as `.cargo/config.toml` says: with the query planner
/// stability guarantee (without it every page query is parsed and planned again), and
/// without the process-wide mutexes of memory management and memory statistics.
#[tokio::test]
async fn sqlite_is_built_with_the_projects_options() {
    use sea_orm::ConnectionTrait as _;
    let connection = sea_orm::Database::connect("sqlite::memory:").await.unwrap();
    let options = connection.query_all_raw(sea_orm::Statement::from_string(
        sea_orm::DbBackend::Sqlite,
        "PRAGMA compile_options",
    ));
    let options: Vec<String> =
        options.await.unwrap().iter().map(|row| row.try_get_by_index(0).unwrap()).collect();
    assert!(options.iter().any(|option| option == "ENABLE_QPSG"), "{options:?}");
    assert!(options.iter().any(|option| option == "DEFAULT_MEMSTATUS=0"), "{options:?}");
    assert!(!options.iter().any(|option| option == "ENABLE_MEMORY_MANAGEMENT"), "{options:?}");
}

/// Concurrent adds share transactions, and on SQLite one statement inserts the pets of a
/// transaction: each caller still gets its own pet's id, and every pet is stored once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pets_added_together_each_get_their_own_id() {
    let file = SqliteFile::new();
    let db = file.open().await;
    let pets = db.pets();
    let adds: Vec<_> = (0..500)
        .map(|i| {
            let pets = pets.clone();
            tokio::spawn(async move { (i, pets.create(pet(i)).await.expect("create")) })
        })
        .collect();
    let mut ids = std::collections::HashSet::new();
    for add in adds {
        let (i, added) = add.await.expect("a task");
        assert_eq!(added.name.as_str(), format!("Pet {i}"));
        let stored = pets.get(added.id).await.expect("get").expect("stored under its id");
        assert_eq!(stored, added, "the id names the caller's own pet");
        assert!(ids.insert(added.id), "{:?} given twice", added.id);
    }
    let listed = pets.list(None, None, 1000).await.expect("list");
    assert_eq!(listed.len(), 500, "each pet stored once");
    db.close().await;
}

/// Pet reads are answered from the read cache until the writer commits (docs/architecture.md):
/// a write is read at once all the same, by the reads that follow its answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_read_after_a_write_sees_it() {
    let file = SqliteFile::new();
    let db = file.open().await;
    let pets = db.pets();
    for i in 0..50 {
        assert_eq!(pets.list(None, None, 100).await.expect("list").len(), i);
        let added = pets.create(pet(i)).await.expect("create");
        assert_eq!(pets.get(added.id).await.expect("get"), Some(added));
        assert_eq!(pets.list(None, None, 100).await.expect("list").len(), i + 1);
    }
    drop(pets);
    db.close().await;
}

/// Two servers on one file, which one process should serve: each reads what the other
/// wrote once the answers it kept before are as old as the read cache keeps them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_servers_writes_are_read_once_the_cache_lets_go() {
    let file = SqliteFile::new();
    let (first, second) = (file.open().await, file.open().await);
    for i in 0..3 {
        assert_eq!(first.pets().list(None, None, 100).await.expect("list").len(), i);
        let added = second.pets().create(pet(i)).await.expect("create");
        // Twice the cache's time to live, read every 50 ms: a bounded wait.
        let mut seen = Vec::new();
        for _ in 0..40 {
            seen = first.pets().list(None, None, 100).await.expect("list");
            if seen.len() > i {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        assert_eq!(seen.last(), Some(&added));
    }
    first.close().await;
    second.close().await;
}

/// Two servers on one file: the pets they add at once all get distinct ids, each stored
/// once, and once both have stopped, the next id follows the largest.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_writers_on_one_file_never_share_a_pet_id() {
    let file = SqliteFile::new();
    let (first, second) = (file.open().await, file.open().await);
    let adds: Vec<_> = (0..400)
        .map(|i| {
            let pets = if i % 2 == 0 { first.pets() } else { second.pets() };
            tokio::spawn(async move { pets.create(pet(i)).await.expect("create") })
        })
        .collect();
    let mut ids = std::collections::HashSet::new();
    for add in adds {
        let added = add.await.expect("a task");
        assert!(ids.insert(added.id), "{:?} given twice", added.id);
    }
    first.close().await;
    second.close().await;
    let db = file.open().await;
    let stored = db.pets().list(None, None, 1000).await.expect("list");
    assert_eq!(stored.len(), 400, "every pet stored once");
    let largest = stored.iter().map(|pet| pet.id.get()).max().expect("pets");
    let next = db.pets().create(pet(400)).await.expect("create");
    assert!(next.id.get() > largest, "{:?} after {largest}", next.id);
    db.close().await;
}

/// A row the service could not have written (an operator's own `UPDATE`) is an error when
/// read, alone or in a page, never a pet the service would answer with.
#[tokio::test]
async fn a_row_with_an_unknown_status_is_refused_when_read() {
    let file = SqliteFile::new();
    let db = file.open().await;
    let stored = db.pets().create(pet(1)).await.expect("create");
    let other = sea_orm::Database::connect(&file.url).await.expect("a connection of its own");
    let update = sea_orm::Statement::from_sql_and_values(
        sea_orm::DbBackend::Sqlite,
        "UPDATE pets SET status = 'lost' WHERE id = ?",
        [stored.id.get().into()],
    );
    let changed = sea_orm::ConnectionTrait::execute_raw(&other, update).await;
    assert_eq!(changed.expect("an operator's update").rows_affected(), 1);
    let names_the_status = |err: &dyn std::error::Error| {
        std::iter::successors(Some(err), |err| err.source()).any(|e| e.to_string().contains("lost"))
    };
    let err = db.pets().get(stored.id).await.expect_err("not a pet");
    assert!(names_the_status(&err), "{err:?}");
    let err = db.pets().list(None, None, 20).await.expect_err("not a page of pets");
    assert!(names_the_status(&err), "{err:?}");
    other.close().await.expect("closed");
    db.close().await;
}
