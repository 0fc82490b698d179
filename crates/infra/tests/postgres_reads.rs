//! PostgreSQL's pet reads, on the reader pool: a connection the server terminated does not
//! fail the next read (the pool pings a connection before it hands it out), and a read
//! abandoned mid-query does not leave its connection to the next one.

use std::time::Duration;

use animal_store_domain::{CategoryId, NewPet, PetName, PetRepository, PetStatus};
use animal_store_infra::Database;
use animal_store_infra::testing::databases::fresh_postgres_url;
use sea_orm::{ConnectionTrait, DatabaseConnection, TransactionTrait};

async fn open(url: &str) -> (Database, DatabaseConnection) {
    let db = Database::connect(url).await.expect("open PostgreSQL");
    db.migrate().await.expect("migrate");
    let admin = sea_orm::Database::connect(url).await.expect("an admin connection");
    (db, admin)
}

fn new_pet(n: usize) -> NewPet {
    NewPet {
        name: PetName::new(&format!("pet {n}")).expect("a name"),
        category_id: CategoryId::new(1).expect("a category"),
        status: PetStatus::Available,
    }
}

async fn rows(admin: &DatabaseConnection, sql: &str) -> Vec<sea_orm::QueryResult> {
    let statement = sea_orm::Statement::from_string(admin.get_database_backend(), sql);
    admin.query_all_raw(statement).await.unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// Terminates the store's connections (every one but the admin's) and waits, at most 5 s,
/// until they are gone.
async fn terminate_connections(admin: &DatabaseConnection) {
    // In the select list: PostgreSQL may evaluate a WHERE clause's conditions in any order.
    let terminate = "SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity \
                     WHERE datname = current_database() AND pid <> pg_backend_pid()";
    let terminated = rows(admin, terminate).await;
    let pids: Vec<i32> =
        terminated.iter().map(|row| row.try_get("", "pid").expect("a pid")).collect();
    assert!(pids.len() >= 2, "the reads and the writer held connections: {pids:?}");
    let remaining = format!(
        "SELECT pid FROM pg_stat_activity WHERE pid IN ({})",
        pids.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")
    );
    for _ in 0..100 {
        if rows(admin, &remaining).await.is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the terminated connections did not end within 5 s");
}

#[tokio::test]
async fn reads_go_on_after_the_server_terminates_their_connections() {
    let Some(url) = fresh_postgres_url().await else {
        return;
    };
    let (db, admin) = open(&url).await;
    let pets = db.pets();
    let created = pets.create(new_pet(1)).await.expect("a pet");
    // Several connections open and go back to the pool.
    let reads = (0..8).map(|_| pets.list(None, None, 20));
    for read in futures_util::future::join_all(reads).await {
        assert_eq!(read.expect("a page").len(), 1);
    }

    terminate_connections(&admin).await;

    for _ in 0..3 {
        let page = pets.list(None, None, 20).await.expect("a page despite the lost connections");
        assert_eq!(page, vec![created.clone()]);
        assert_eq!(pets.get(created.id).await.expect("a pet"), Some(created.clone()));
    }
    db.close().await;
}

#[tokio::test]
async fn a_read_abandoned_mid_query_leaves_the_next_reads_their_own_answers() {
    let Some(url) = fresh_postgres_url().await else {
        return;
    };
    let (db, admin) = open(&url).await;
    let pets = db.pets();
    let mut created = Vec::new();
    for n in 0..3 {
        created.push(pets.create(new_pet(n)).await.expect("a pet"));
    }

    // Reads wait behind the lock, and are abandoned while they wait.
    let lock = admin.begin().await.expect("begin");
    lock.execute_unprepared("LOCK TABLE pets IN ACCESS EXCLUSIVE MODE").await.expect("lock");
    for _ in 0..4 {
        let abandoned = tokio::time::timeout(Duration::from_millis(50), pets.list(None, None, 1));
        let abandoned = abandoned.await;
        assert!(abandoned.is_err(), "the read waited for the lock: {abandoned:?}");
    }
    lock.commit().await.expect("unlock");

    for round in 0..20 {
        let limit = round % 3 + 1;
        let page = pets.list(None, None, limit).await.expect("a page");
        assert_eq!(page, created[..limit], "round {round}: the page of {limit}");
        let pet = &created[round % 3];
        assert_eq!(pets.get(pet.id).await.expect("a pet").as_ref(), Some(pet));
    }
    db.close().await;
}
