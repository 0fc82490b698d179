//! When the database fails under the server: what clients see, and what is stored.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use sea_orm::{ConnectionTrait, DatabaseConnection};
use serde_json::Value;

use crate::harness::{Client, Db, Server, json, list_all};

/// The pages of ballast the test puts in the file, then drops to make room.
const BALLAST_PAGES: u32 = 128;

async fn sql(url: &str) -> DatabaseConnection {
    sea_orm::Database::connect(url).await.expect("open the database file")
}

async fn page_count(db: &DatabaseConnection) -> u32 {
    let row = db
        .query_one_raw(sea_orm::Statement::from_string(
            db.get_database_backend(),
            "PRAGMA page_count",
        ))
        .await
        .expect("PRAGMA page_count")
        .expect("a row");
    let pages: i64 = row.try_get_by_index(0).expect("a number");
    u32::try_from(pages).expect("a small file")
}

/// What one create answered.
enum Outcome {
    Stored(Value),
    Unavailable,
}

async fn create(client: &Client, server: &Server, name: &str) -> Outcome {
    let body = format!(r#"{{"name":"{name}","categoryId":4}}"#);
    let resp = client.post(&server.url("/v1/pets"), &body).await;
    match resp.status().as_u16() {
        201 => Outcome::Stored(json(resp).await),
        503 => {
            let retry_after =
                resp.headers().get("retry-after").map(|v| v.to_str().map(str::to_owned));
            assert_eq!(
                retry_after.and_then(Result::ok).as_deref(),
                Some("1"),
                "a 503 says when to retry"
            );
            let body = json(resp).await;
            assert_eq!(body["code"], "service_unavailable");
            assert_eq!(body["status"], 503);
            Outcome::Unavailable
        }
        status => {
            panic!("{name}: unexpected status {status}: {}", resp.text().await.unwrap_or_default())
        }
    }
}

/// Creates pets until one is stored, for at most 5 s, and returns it.
async fn writes_again(client: &Client, server: &Server) -> Value {
    for i in 0..50 {
        if let Outcome::Stored(pet) = create(client, server, &format!("after {i}")).await {
            return pet;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("writes did not succeed again within 5 s of the fault's end");
}

/// Runs a command and says whether it succeeded within `limit`.
fn succeeds_within(db: &Db, args: &[&str], limit: Duration) -> bool {
    let started = Instant::now();
    let out = db.run(args);
    assert!(
        started.elapsed() < limit,
        "`{}` took {:?}: something holds the database",
        args.join(" "),
        started.elapsed()
    );
    out.status.success()
}

/// The database file fills up under the server (a page limit stands in for a small disk),
/// then gets room again. Writes are 503 while full, reads and the key commands go on
/// working, writes succeed again without a restart, and after `kill -9` every pet
/// acknowledged with 201 is stored, while no pet answered 503 is.
#[tokio::test]
async fn a_full_database_answers_503_and_loses_no_acknowledged_pet() {
    let db = Db::sqlite();
    let key = db.unlimited_key();
    let admin = sql(&db.url).await;
    admin.execute_unprepared("CREATE TABLE ballast (b BLOB)").await.expect("create the ballast");
    let bytes = BALLAST_PAGES * 4096;
    admin
        .execute_unprepared(&format!("INSERT INTO ballast VALUES (zeroblob({bytes}))"))
        .await
        .expect("fill the ballast");
    // A few pages of room: a few hundred pets.
    let max_pages = (page_count(&admin).await + 4).to_string();
    let server =
        Server::start(&db.url, db.path().to_path_buf(), &["--sqlite-max-pages", &max_pages]);
    let client = Client::new(&key);

    let mut acknowledged = BTreeMap::new();
    let mut refused = BTreeSet::new();
    let mut refused_in_a_row = 0;
    for i in 0..5_000 {
        let name = format!("pet {i} {}", "x".repeat(40));
        match create(&client, &server, &name).await {
            Outcome::Stored(pet) => {
                refused_in_a_row = 0;
                acknowledged.insert(pet["id"].as_i64().expect("an id"), pet);
            }
            Outcome::Unavailable => {
                refused.insert(name);
                refused_in_a_row += 1;
                if refused_in_a_row == 20 {
                    break;
                }
            }
        }
    }
    assert!(acknowledged.len() >= 50, "only {} pets fitted", acknowledged.len());
    assert_eq!(refused_in_a_row, 20, "the database never filled up");

    // Full: reads still work, and nothing holds the write lock, so another process writes.
    assert_eq!(client.get(&server.url("/v1/pets?limit=1")).await.status(), 200);
    assert!(succeeds_within(&db, &["keys", "list"], Duration::from_secs(4)), "keys list");
    assert!(
        succeeds_within(&db, &["keys", "create", "--plan", "free"], Duration::from_secs(4)),
        "keys create works beside a full server"
    );

    // Room again: writes succeed by themselves, without a restart.
    admin.execute_unprepared("DROP TABLE ballast").await.expect("drop the ballast");
    let pet = writes_again(&client, &server).await;
    acknowledged.insert(pet["id"].as_i64().expect("an id"), pet);
    for i in 0..20 {
        match create(&client, &server, &format!("then {i}")).await {
            Outcome::Stored(pet) => acknowledged.insert(pet["id"].as_i64().expect("an id"), pet),
            Outcome::Unavailable => panic!("a write failed after recovery"),
        };
    }
    assert!(succeeds_within(&db, &["keys", "create", "--plan", "pro"], Duration::from_secs(4)));
    admin.close().await.expect("close");

    server.kill();
    let server = db.start();
    let stored = list_all(&client, &server).await;
    for (id, pet) in &acknowledged {
        assert_eq!(stored.get(id), Some(pet), "acknowledged pet {id} is lost or changed");
    }
    let refused_but_stored: Vec<_> = stored
        .values()
        .filter(|p| refused.contains(p["name"].as_str().unwrap_or_default()))
        .collect();
    assert!(refused_but_stored.is_empty(), "pets answered 503 were stored: {refused_but_stored:?}");
    assert_eq!(stored.len(), acknowledged.len(), "nothing else was stored");
}

/// PostgreSQL loses the server's connections again and again (`pg_terminate_backend`) while
/// clients write: every answer is 201 or a retryable 503, never a 500; writes succeed again
/// by themselves; every pet acknowledged with 201 is stored.
#[tokio::test]
async fn lost_postgres_connections_are_503_and_lose_no_acknowledged_pet() {
    let Some(db) = Db::postgres().await else {
        return;
    };
    let key = db.key("business");
    let server = db.start();
    let admin = sql(&db.url).await;
    let terminate = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                     WHERE datname = current_database() AND pid <> pg_backend_pid()";

    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (client, base) = (Client::new(&key), server.base.clone());
            tokio::spawn(async move {
                let mut acknowledged = BTreeMap::new();
                for i in 0..150 {
                    let body = format!(r#"{{"name":"writer {w} pet {i}","categoryId":5}}"#);
                    let resp = client.post(&format!("{base}/v1/pets"), &body).await;
                    match resp.status().as_u16() {
                        201 => {
                            let pet: Value = resp.json().await.expect("a pet");
                            acknowledged.insert(pet["id"].as_i64().expect("an id"), pet);
                        }
                        503 => assert!(resp.headers().contains_key("retry-after")),
                        status => {
                            panic!("status {status}: {}", resp.text().await.unwrap_or_default())
                        }
                    }
                }
                acknowledged
            })
        })
        .collect();
    for _ in 0..15 {
        admin.execute_unprepared(terminate).await.expect("terminate the server's connections");
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    let mut acknowledged = BTreeMap::new();
    for writer in writers {
        acknowledged.extend(writer.await.expect("a writer"));
    }

    let client = Client::new(&key);
    let pet = writes_again(&client, &server).await;
    acknowledged.insert(pet["id"].as_i64().expect("an id"), pet);
    let stored = list_all(&client, &server).await;
    for (id, pet) in &acknowledged {
        assert_eq!(stored.get(id), Some(pet), "acknowledged pet {id} is lost or changed");
    }
}
