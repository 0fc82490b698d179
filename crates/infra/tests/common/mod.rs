//! Test databases: a fresh SQLite file or a fresh PostgreSQL database per test.

#![allow(dead_code)]

use animal_store_infra::Database;
use rand::Rng;
use sea_orm::ConnectionTrait;

/// A migrated SQLite database in a temporary directory, removed on drop.
pub struct SqliteFile {
    pub dir: tempfile::TempDir,
    pub url: String,
}

impl SqliteFile {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let url = format!("sqlite://{}", dir.path().join("store.db").display());
        Self { dir, url }
    }

    pub fn wal_path(&self) -> std::path::PathBuf {
        self.dir.path().join("store.db-wal")
    }

    pub async fn open(&self) -> Database {
        let db = Database::connect(&self.url).await.expect("open SQLite");
        db.migrate().await.expect("migrate SQLite");
        db
    }
}

/// The URL of a fresh, empty PostgreSQL database, or `None` when no server is configured.
///
/// `cargo xtask ci` starts a server and sets `ANIMAL_STORE_TEST_POSTGRES_URL`; it also sets
/// `ANIMAL_STORE_REQUIRE_POSTGRES`, which turns a missing server into a failure instead of a
/// skip.
pub async fn fresh_postgres() -> Option<String> {
    let Ok(admin_url) = std::env::var("ANIMAL_STORE_TEST_POSTGRES_URL") else {
        assert!(
            std::env::var_os("ANIMAL_STORE_REQUIRE_POSTGRES").is_none(),
            "ANIMAL_STORE_REQUIRE_POSTGRES is set but ANIMAL_STORE_TEST_POSTGRES_URL is not"
        );
        eprintln!(
            "skipped: no PostgreSQL server (run through `cargo xtask ci` or `cargo xtask postgres`)"
        );
        return None;
    };
    let name = format!("t_{:016x}", rand::rng().random::<u64>());
    let admin = sea_orm::Database::connect(&admin_url).await.expect("connect to PostgreSQL");
    admin
        .execute_unprepared(&format!("CREATE DATABASE {name}"))
        .await
        .expect("create a test database");
    admin.close().await.expect("close");
    let base = admin_url.rsplit_once('/').map_or(admin_url.as_str(), |(base, _)| base);
    Some(format!("{base}/{name}"))
}

pub async fn open_postgres() -> Option<Database> {
    let url = fresh_postgres().await?;
    let db = Database::connect(&url).await.expect("open PostgreSQL");
    db.migrate().await.expect("migrate PostgreSQL");
    Some(db)
}
