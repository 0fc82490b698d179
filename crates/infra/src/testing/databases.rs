//! Fresh databases for tests: an SQLite file in a temporary directory, or a new database on
//! the PostgreSQL server the test run names. The adapters' tests and the black-box tests of
//! the binary both take theirs from here.

use std::sync::atomic::{AtomicU64, Ordering};

use sea_orm::ConnectionTrait;

use crate::sql::Database;

/// The variable that names a PostgreSQL server for tests: an admin URL such as
/// `postgres://animal@127.0.0.1:5432/postgres`. `cargo xtask ci` and `cargo xtask postgres`
/// start a throwaway server and set it.
pub const POSTGRES_URL_VARIABLE: &str = "ANIMAL_STORE_TEST_POSTGRES_URL";
/// When set, a missing PostgreSQL server fails the tests that need one instead of skipping
/// them. `cargo xtask ci` sets it.
pub const REQUIRE_POSTGRES_VARIABLE: &str = "ANIMAL_STORE_REQUIRE_POSTGRES";

/// An SQLite file in a temporary directory of its own, removed with it. The file does not
/// exist until a database is opened on it.
pub struct SqliteFile {
    /// The directory, for files a test puts beside the database.
    pub dir: tempfile::TempDir,
    /// `sqlite://` and the file's path.
    pub url: String,
}

impl SqliteFile {
    /// A new directory, and the URL of `store.db` inside it.
    ///
    /// # Panics
    ///
    /// When no temporary directory can be made.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let url = format!("sqlite://{}", dir.path().join("store.db").display());
        Self { dir, url }
    }

    /// The path of the write-ahead log beside the database.
    pub fn wal_path(&self) -> std::path::PathBuf {
        self.dir.path().join("store.db-wal")
    }

    /// Opens and migrates the database.
    ///
    /// # Panics
    ///
    /// When it cannot be opened or migrated.
    pub async fn open(&self) -> Database {
        open_migrated(&self.url).await
    }

    /// Opens the database as a witness: without a read cache, so that every read sees what
    /// is stored now, whoever wrote it.
    ///
    /// # Panics
    ///
    /// When it cannot be opened.
    pub async fn open_witness(&self) -> Database {
        let options = crate::sql::DatabaseOptions { read_cache_mib: 0, ..Default::default() };
        Database::connect_with(&self.url, options).await.expect("open the witness")
    }
}

impl Default for SqliteFile {
    fn default() -> Self {
        Self::new()
    }
}

/// The URL of a new, empty database on the test PostgreSQL server, or `None` when no server
/// is named (see [`POSTGRES_URL_VARIABLE`]); then the caller skips its test, and says so.
///
/// # Panics
///
/// When [`REQUIRE_POSTGRES_VARIABLE`] is set and no server is named, or when the server
/// refuses to create the database.
pub async fn fresh_postgres_url() -> Option<String> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let Ok(admin_url) = std::env::var(POSTGRES_URL_VARIABLE) else {
        assert!(
            std::env::var_os(REQUIRE_POSTGRES_VARIABLE).is_none(),
            "{REQUIRE_POSTGRES_VARIABLE} is set but {POSTGRES_URL_VARIABLE} is not"
        );
        eprintln!(
            "skipped: no PostgreSQL server (run through `cargo xtask ci` or `cargo xtask postgres`)"
        );
        return None;
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let name = format!("t_{}_{nanos}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
    let admin = sea_orm::Database::connect(&admin_url).await.expect("connect to PostgreSQL");
    admin
        .execute_unprepared(&format!("CREATE DATABASE {name}"))
        .await
        .expect("create a test database");
    admin.close().await.expect("close");
    let base = admin_url.rsplit_once('/').map_or(admin_url.as_str(), |(base, _)| base);
    Some(format!("{base}/{name}"))
}

/// A new, migrated database on the test PostgreSQL server, or `None` as for
/// [`fresh_postgres_url`].
///
/// # Panics
///
/// As [`fresh_postgres_url`], and when the database cannot be opened or migrated.
pub async fn fresh_postgres() -> Option<Database> {
    Some(open_migrated(&fresh_postgres_url().await?).await)
}

/// The start of an upgrade test of migration number `index` (counted from 0, in the order
/// of [`Database::migration_names`]): the database at `url` is brought to the migration
/// before it, `seed` (SQL written against that older schema) fills it, and then every
/// migration runs. The caller checks what the seeded rows became.
///
/// # Panics
///
/// When a step fails.
pub async fn upgraded(url: &str, index: u32, seed: &[&str]) -> Database {
    let db = Database::connect(url).await.expect("open the test database");
    db.migrate_first(index).await.expect("migrate to the previous version");
    let sql = sea_orm::Database::connect(url).await.expect("a connection for the seed");
    for statement in seed {
        sql.execute_unprepared(statement).await.unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
    sql.close().await.expect("close");
    db.migrate().await.expect("upgrade");
    db
}

async fn open_migrated(url: &str) -> Database {
    let db = Database::connect(url).await.expect("open the test database");
    db.migrate().await.expect("migrate the test database");
    db
}

/// The variable that names a Redis server for tests: `redis://127.0.0.1:PORT`. `cargo xtask
/// ci` and `cargo xtask redis` start a throwaway server and set it.
pub const REDIS_URL_VARIABLE: &str = "ANIMAL_STORE_TEST_REDIS_URL";
/// When set, a missing Redis server fails the tests that need one instead of skipping them.
/// `cargo xtask ci` sets it.
pub const REQUIRE_REDIS_VARIABLE: &str = "ANIMAL_STORE_REQUIRE_REDIS";

/// The URL of the test Redis server, or `None` when no server is named (see
/// [`REDIS_URL_VARIABLE`]); then the caller skips its test, and says so. Tests share the
/// server: each keeps its keys apart with a prefix of its own ([`unique_prefix`]).
///
/// # Panics
///
/// When [`REQUIRE_REDIS_VARIABLE`] is set and no server is named.
pub fn redis_url() -> Option<String> {
    let url = std::env::var(REDIS_URL_VARIABLE).ok();
    if url.is_none() {
        assert!(
            std::env::var_os(REQUIRE_REDIS_VARIABLE).is_none(),
            "{REQUIRE_REDIS_VARIABLE} is set but {REDIS_URL_VARIABLE} is not"
        );
        eprintln!("skipped: no Redis server (run through `cargo xtask ci` or `cargo xtask redis`)");
    }
    url
}

/// A key prefix no other test of any process uses.
pub fn unique_prefix() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("t{}-{nanos}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}
