//! Migrations through the real binary: replicas started at once on a new database all come
//! up, `serve --migrate never` refuses a database that lacks a migration and changes
//! nothing, `migrate --dry-run` lists what `migrate` then applies, `keys` commands migrate a
//! new database only, and a database a newer version migrated is refused.

use std::process::{Command, Output};

use animal_store_infra::{Database, SchemaStatus};

use crate::harness::{BIN, Client, Db, Server};

/// How many servers start at once.
const REPLICAS: usize = 8;

/// The migrations `db` has, as the service reads them.
async fn status(db: &Db) -> SchemaStatus {
    let database = Database::connect(&db.url).await.expect("the database opens");
    let status = database.schema_status().await.expect("the status reads");
    database.close().await;
    status
}

/// `serve --migrate never` on `db`, which must exit by itself (it refuses to start).
fn serve_never(db: &Db) -> Output {
    let mut child = Command::new(BIN)
        .args(["serve", "--bind", "127.0.0.1:0", "--migrate", "never"])
        .env_clear()
        .env("DATABASE_URL", &db.url)
        .current_dir(db.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    for _ in 0..200 {
        if child.try_wait().expect("try_wait").is_some() {
            return child.wait_with_output().expect("its output");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    panic!("serve --migrate never did not refuse within 10 s");
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).trim().to_owned()
}

/// Starts [`REPLICAS`] servers at once on `db`, which no migration touched yet, and checks
/// that each serves and that the schema is whole.
async fn replicas_start_together(db: &Db) {
    let servers: Vec<Server> = std::thread::scope(|scope| {
        let starting: Vec<_> = (0..REPLICAS)
            .map(|_| scope.spawn(|| Server::start(&db.url, db.path().to_path_buf(), &[])))
            .collect();
        starting.into_iter().map(|server| server.join().expect("a server starts")).collect()
    });
    let key = db.key("free");
    for (n, server) in servers.iter().enumerate() {
        let client = Client::new(&key);
        let created = client
            .post(&server.url("/v1/pets"), &format!(r#"{{"name":"Pet {n}","categoryId":1}}"#))
            .await;
        assert_eq!(created.status(), 201, "server {n}");
        let listed = client.get(&server.url("/v1/pets?limit=100")).await;
        assert_eq!(listed.status(), 200, "server {n}");
    }
    // Each server reads the others' writes once its read cache lets go of the page it
    // answered before them, within a second: read every 100 ms, for at most 3 s.
    let mut listed = serde_json::Value::Null;
    for _ in 0..30 {
        listed = Client::new(&key)
            .get(&servers[0].url("/v1/pets?limit=100"))
            .await
            .json()
            .await
            .expect("JSON");
        if listed.as_array().map(Vec::len) == Some(REPLICAS) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(listed.as_array().map(Vec::len), Some(REPLICAS), "{listed}");
    let status = status(db).await;
    assert!(status.pending.is_empty() && status.unknown.is_empty(), "{status:?}");
    assert_eq!(status.applied, Database::migration_names().len());
}

#[tokio::test]
async fn replicas_starting_together_on_a_new_sqlite_database_all_serve() {
    replicas_start_together(&Db::sqlite()).await;
}

#[tokio::test]
async fn replicas_starting_together_on_a_new_postgresql_database_all_serve() {
    let Some(db) = Db::postgres().await else { return };
    replicas_start_together(&db).await;
}

#[tokio::test]
async fn a_database_that_lacks_a_migration_is_migrated_only_when_asked() {
    let db = Db::sqlite();
    let names = Database::migration_names();
    let older = u32::try_from(names.len() - 1).expect("a count");
    {
        let database = Database::connect(&db.url).await.expect("the database opens");
        database.migrate_first(older).await.expect("the older schema");
        database.close().await;
    }
    let last = names.last().expect("a migration").clone();

    // serve --migrate never: one line naming the migration, exit 2, nothing changed.
    let refused = serve_never(&db);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    let line = stderr(&refused);
    assert_eq!(line.lines().filter(|l| l.starts_with("error:")).count(), 1, "{line}");
    assert!(line.contains(&last) && line.contains("animal-store migrate"), "{line}");
    assert_eq!(status(&db).await.pending, std::slice::from_ref(&last));

    // A keys command does not move on a schema servers may run on.
    let keys = db.run(&["keys", "list"]);
    assert_eq!(keys.status.code(), Some(2), "{}", stderr(&keys));
    assert!(stderr(&keys).contains(&last), "{}", stderr(&keys));
    assert_eq!(status(&db).await.pending, std::slice::from_ref(&last));

    // migrate --dry-run lists it and applies nothing; migrate applies it.
    let dry = db.run(&["migrate", "--dry-run"]);
    assert!(dry.status.success(), "{}", stderr(&dry));
    assert_eq!(String::from_utf8_lossy(&dry.stdout).trim(), last);
    assert_eq!(status(&db).await.pending, std::slice::from_ref(&last));
    let migrated = db.run(&["migrate"]);
    assert!(migrated.status.success(), "{}", stderr(&migrated));
    assert_eq!(String::from_utf8_lossy(&migrated.stdout).trim(), last);
    let now = status(&db).await;
    assert!(now.pending.is_empty(), "{now:?}");
    let again = db.run(&["migrate", "--dry-run"]);
    assert!(again.status.success() && again.stdout.is_empty(), "{}", stderr(&again));

    // Now the servers that migrate nothing start.
    let key = db.key("free");
    let server = Server::start(&db.url, db.path().to_path_buf(), &["--migrate", "never"]);
    assert_eq!(Client::new(&key).get(&server.url("/v1/pets")).await.status(), 200);
}

#[tokio::test]
async fn keys_commands_migrate_a_new_database() {
    let db = Db::sqlite();
    let key = db.key("free");
    assert!(key.starts_with("as_live_"));
    let status = status(&db).await;
    assert!(status.pending.is_empty(), "{status:?}");
}

/// A newer version's migration, as it leaves the database: its record beside this
/// version's, and, when `window` is given, the window (level, oldest level) it records.
async fn migrate_as_a_newer_version(db: &Db, future: &str, window: Option<(usize, usize)>) {
    use sea_orm::ConnectionTrait as _;
    let connection = sea_orm::Database::connect(&db.url).await.expect("the database opens");
    connection
        .execute_unprepared(&format!(
            "INSERT INTO seaql_migrations (version, applied_at) VALUES ('{future}', 0)"
        ))
        .await
        .expect("a newer version's record");
    let window = match window {
        Some((level, oldest)) => {
            format!("UPDATE schema_window SET level = {level}, oldest_level = {oldest}")
        }
        None => "DROP TABLE schema_window".to_owned(),
    };
    connection.execute_unprepared(&window).await.expect("the newer version's window");
    connection.close().await.expect("closed");
}

/// Every command refuses `db` with exit 2 and a line that contains each of `words`, and
/// changes nothing.
async fn every_command_refuses(db: &Db, words: &[&str]) {
    let before = status(db).await;
    for args in [&["migrate"][..], &["keys", "list"], &["migrate", "--dry-run"]] {
        let out = db.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        for word in words {
            assert!(stderr(&out).contains(word), "{args:?} lacks {word}: {}", stderr(&out));
        }
    }
    let refused = serve_never(db);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    let line = stderr(&refused);
    assert_eq!(line.lines().filter(|l| l.starts_with("error:")).count(), 1, "{line}");
    assert_eq!(status(db).await, before);
}

#[tokio::test]
async fn migrate_records_which_schema_levels_run_on_the_database() {
    let db = Db::sqlite();
    assert!(db.run(&["migrate"]).status.success());
    let window = status(&db).await.window.expect("a window");
    assert_eq!(window.level, Database::migration_names().len());
    assert!(window.admits(window.level) && window.oldest_level <= window.level, "{window:?}");
}

#[tokio::test]
async fn a_database_a_newer_version_migrated_without_a_window_is_refused() {
    let db = Db::sqlite();
    assert!(db.run(&["migrate"]).status.success());
    let future = "m20990101_000001_from_a_newer_version";
    migrate_as_a_newer_version(&db, future, None).await;
    every_command_refuses(&db, &[future]).await;
    assert_eq!(status(&db).await.unknown, [future.to_owned()]);
}

/// On `db`, migrated by this version and then by a newer one whose migration is compatible
/// (`Expand`), this version serves, with or without `--migrate never`, and applies nothing;
/// past a newer `Contract` migration every command refuses, naming both levels.
async fn a_newer_schema_runs_this_version_while_its_window_admits_it(db: &Db) {
    assert!(db.run(&["migrate"]).status.success());
    let level = Database::migration_names().len();
    let future = "m20990101_000001_from_a_newer_version";
    migrate_as_a_newer_version(db, future, Some((level + 1, level))).await;
    let before = status(db).await;
    assert_eq!(before.unknown, [future.to_owned()]);

    let key = db.key("free");
    for extra in [&[][..], &["--migrate", "never"]] {
        let server = Server::start(&db.url, db.path().to_path_buf(), extra);
        let client = Client::new(&key);
        let created =
            client.post(&server.url("/v1/pets"), r#"{"name":"Rex","categoryId":1}"#).await;
        assert_eq!(created.status(), 201, "{extra:?}");
        assert_eq!(client.get(&server.url("/v1/pets")).await.status(), 200, "{extra:?}");
        let line = server.stderr_line(|l| l.contains("running alongside").then(|| l.to_owned()));
        assert!(line.contains(future), "{line}");
    }
    let dry = db.run(&["migrate", "--dry-run"]);
    assert!(dry.status.success() && dry.stdout.is_empty(), "{}", stderr(&dry));
    let migrated = db.run(&["migrate"]);
    assert!(migrated.status.success() && migrated.stdout.is_empty(), "{}", stderr(&migrated));
    assert_eq!(status(db).await, before, "nothing applied, the newer window kept");

    migrate_as_a_newer_version(db, "m20990101_000002_a_contract", Some((level + 2, level + 2)))
        .await;
    let (database, oldest) = ((level + 2).to_string(), (level + 2).to_string());
    every_command_refuses(db, &["schema level", &database, &oldest, &level.to_string()]).await;
}

#[tokio::test]
async fn a_newer_sqlite_schema_runs_this_version_while_its_window_admits_it() {
    a_newer_schema_runs_this_version_while_its_window_admits_it(&Db::sqlite()).await;
}

#[tokio::test]
async fn a_newer_postgresql_schema_runs_this_version_while_its_window_admits_it() {
    let Some(db) = Db::postgres().await else { return };
    a_newer_schema_runs_this_version_while_its_window_admits_it(&db).await;
}

#[tokio::test]
async fn the_build_says_its_version_and_schema_level() {
    let (version, level) = (env!("CARGO_PKG_VERSION"), Database::migration_names().len());
    let out = Command::new(BIN).arg("--version").output().expect("the binary runs");
    assert!(out.status.success());
    let printed = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert_eq!(printed, format!("animal-store {version} (schema {level})"));
    let db = Db::sqlite();
    let server = Server::start(&db.url, db.path().to_path_buf(), &[]);
    let metrics = reqwest::get(server.url("/metrics")).await.expect("metrics");
    let metrics = metrics.text().await.expect("text");
    let build = format!("animal_store_build_info{{version=\"{version}\",schema=\"{level}\"}} 1");
    assert!(metrics.lines().any(|line| line == build), "{build} in:\n{metrics}");
    let line = server.stderr_line(|l| l.contains("listening on").then(|| l.to_owned()));
    assert!(line.contains(&format!("schema={level}")) && line.contains(version), "{line}");
}
