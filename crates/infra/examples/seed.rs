//! Fills a database with pets fast, for `cargo xtask load`: migrates it, then inserts `N`
//! pets in one statement per 100,000 (a recursive query that numbers the rows), far faster
//! than through the API or the writer, whose durable commits the benchmark measures
//! separately. Statuses cycle available, pending, sold; categories 1 to 10. Then `N`
//! events the same way: each pet's `pet.created`, but every 100th an `order.placed` of
//! another key than the one the load reads with, so that a listing of one type reads past
//! rows that are not the reader's. A PostgreSQL database is dropped and created anew first;
//! an SQLite file is expected not to exist. On PostgreSQL the tables are then vacuumed and
//! analysed, as autovacuum would have done.
//!
//! `cargo run --release -p animal-store-infra --example seed -- DATABASE_URL N`

use animal_store_infra::Database;
use sea_orm::ConnectionTrait;

/// Rows per statement: big enough to be quick, small enough for one transaction's memory.
const CHUNK: u64 = 100_000;

/// Drops and creates the database `url` names, on its server.
async fn fresh_postgres_database(url: &str) -> anyhow::Result<()> {
    let (server, name) =
        url.rsplit_once('/').ok_or_else(|| anyhow::anyhow!("no database in {url}"))?;
    let admin = sea_orm::Database::connect(format!("{server}/postgres")).await?;
    admin.execute_unprepared(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await?;
    admin.execute_unprepared(&format!("CREATE DATABASE {name}")).await?;
    admin.close().await?;
    Ok(())
}

/// Inserts `count` events, ids 1 to `count` (see the module's documentation); on
/// PostgreSQL, `event_counter` then gives the next ids after them. The delivery worker's
/// position is moved past them, as a server that wrote them would have moved it: they
/// predate every webhook endpoint, so they have no deliveries, and a worker that walked
/// them at start would hold the writer while the load is measured.
async fn seed_events(connection: &sea_orm::DatabaseConnection, count: u64) -> anyhow::Result<()> {
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, false);
    let mut done = 0;
    while done < count {
        let rows = CHUNK.min(count - done);
        let insert = format!(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {rows}) \
             INSERT INTO events (id, event_type, owner, created_at, object) \
             SELECT i + {done}, \
                    CASE (i + {done}) % 100 WHEN 0 THEN 'order.placed' ELSE 'pet.created' END, \
                    CASE (i + {done}) % 100 WHEN 0 THEN 'loadother000' ELSE NULL END, \
                    '{now}', \
                    CASE (i + {done}) % 100 \
                      WHEN 0 THEN '{{\"kind\":\"order\",\"id\":' || (i + {done}) || \
                        ',\"pet_id\":1,\"owner\":\"loadother000\",\"status\":\"placed\",\
                        \"created_at\":1800000000,\"updated_at\":1800000000}}' \
                      ELSE '{{\"kind\":\"pet\",\"id\":' || (i + {done}) || \
                        ',\"name\":\"Pet ' || (i + {done}) || '\",\"category_id\":1,\
                        \"status\":\"available\"}}' \
                    END \
             FROM n"
        );
        connection.execute_unprepared(&insert).await?;
        done += rows;
    }
    if connection.get_database_backend() == sea_orm::DbBackend::Postgres {
        let counter = format!("UPDATE event_counter SET last_id = {count}");
        connection.execute_unprepared(&counter).await?;
    }
    let fanned = format!("UPDATE webhook_fan_out SET last_event_id = {count} WHERE id = 1");
    connection.execute_unprepared(&fanned).await?;
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(url), Some(count)) = (args.next(), args.next()) else {
        anyhow::bail!("usage: seed DATABASE_URL N");
    };
    let count: u64 = count.parse()?;
    if url.starts_with("postgres") {
        fresh_postgres_database(&url).await?;
    }
    let db = Database::connect(&url).await?;
    db.migrate().await?;
    db.close().await;
    let connection = sea_orm::Database::connect(&url).await?;
    let mut done = 0;
    while done < count {
        let rows = CHUNK.min(count - done);
        let insert = format!(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {rows}) \
             INSERT INTO pets (name, category_id, status) \
             SELECT 'Pet ' || (i + {done}), (i % 10) + 1, \
                    CASE i % 3 WHEN 0 THEN 'available' WHEN 1 THEN 'pending' ELSE 'sold' END \
             FROM n"
        );
        connection.execute_unprepared(&insert).await?;
        done += rows;
    }
    seed_events(&connection, count).await?;
    // On PostgreSQL, the table as a server that has run a while sees it: statistics
    // gathered and the visibility map set, so that autovacuum does not start on it while it
    // is measured. (SQLite gathers no statistics unless asked, and a server never asks.)
    if url.starts_with("postgres") {
        connection.execute_unprepared("VACUUM ANALYZE pets").await?;
        connection.execute_unprepared("VACUUM ANALYZE events").await?;
    }
    connection.close().await?;
    println!("{count}");
    Ok(())
}
