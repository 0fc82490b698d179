//! Claims of deliveries: several instances claiming from one PostgreSQL database at once
//! never claim the same delivery twice; on SQLite a process's claims pass over what it holds,
//! store nothing, and end with it; a delivery whose event is gone is removed.

use std::collections::BTreeSet;

use animal_store_domain::{
    ClaimLimits, EventSelection, KeyId, NewEndpoint, PetRepository, WebhookDeliveries,
    WebhookEndpoints, WebhookSecret, WebhookUrl,
};
use animal_store_infra::Database;
use animal_store_infra::testing::databases::{SqliteFile, fresh_postgres_url};
use chrono::{TimeZone as _, Utc};

/// Claims of up to `count` deliveries, `per_endpoint` of one endpoint's and of one owner's.
fn limits(count: usize, per_endpoint: usize) -> ClaimLimits {
    ClaimLimits { count, per_endpoint, per_owner: per_endpoint, ..ClaimLimits::default() }
}

/// Registers an endpoint for every event in `db`, then adds `count` pets: `count`
/// deliveries wait.
async fn queue(db: &Database, count: usize) {
    let endpoint = NewEndpoint {
        owner: KeyId::new("owner0000000").expect("a key id"),
        url: WebhookUrl::parse("https://hooks.example.com/", false).expect("an address"),
        events: EventSelection::EVERY,
        secret: WebhookSecret::generate(),
        at: Utc::now(),
    };
    db.webhooks().create(endpoint).await.expect("register");
    let pets = db.pets();
    for n in 0..count {
        let pet = animal_store_domain::NewPet {
            name: animal_store_domain::PetName::new(&format!("Pet {n}")).expect("a name"),
            category_id: animal_store_domain::CategoryId::new(1).expect("a category"),
            status: animal_store_domain::PetStatus::Available,
        };
        pets.create(pet).await.expect("add");
    }
    while db.webhooks().fan_out(100).await.expect("fan out") > 0 {}
}

#[tokio::test]
async fn instances_claiming_at_once_take_different_deliveries() {
    let Some(url) = fresh_postgres_url().await else {
        return;
    };
    let first = Database::connect(&url).await.expect("connect");
    first.migrate().await.expect("migrate");
    let second = Database::connect(&url).await.expect("connect");
    queue(&first, 120).await;
    let later = Utc.timestamp_opt(4_000_000_000, 0).single().expect("an instant");
    let until = later + chrono::Duration::seconds(60);
    let (a, b) = (first.webhooks(), second.webhooks());
    let mut claimed = Vec::new();
    let fifteen = limits(15, 100);
    for _ in 0..6 {
        let (x, y) = tokio::join!(a.claim(later, until, &fifteen), b.claim(later, until, &fifteen));
        claimed.extend(x.expect("claim").into_iter().chain(y.expect("claim")).map(|d| d.delivery));
    }
    let distinct: BTreeSet<_> = claimed.iter().collect();
    assert_eq!(distinct.len(), claimed.len(), "no delivery claimed twice");
    assert_eq!(claimed.len(), 120, "every delivery claimed once");
    assert!(a.claim(later, until, &limits(100, 100)).await.expect("claim").is_empty());
    first.close().await;
    second.close().await;
}

/// A delivery whose event a binary that did not know deliveries swept (during a rollback)
/// is removed by the first claim that finds it, not leased again and again.
#[tokio::test]
async fn a_delivery_whose_event_is_gone_is_removed() {
    let file = SqliteFile::new();
    let db = file.open().await;
    let endpoint = NewEndpoint {
        owner: KeyId::new("owner0000000").expect("a key id"),
        url: WebhookUrl::parse("https://hooks.example.com/", false).expect("an address"),
        events: EventSelection::EVERY,
        secret: WebhookSecret::generate(),
        at: Utc::now(),
    };
    let hooks = db.webhooks();
    hooks.create(endpoint).await.expect("register");
    let pet = animal_store_domain::NewPet {
        name: animal_store_domain::PetName::new("Rex").expect("a name"),
        category_id: animal_store_domain::CategoryId::new(1).expect("a category"),
        status: animal_store_domain::PetStatus::Available,
    };
    db.pets().create(pet).await.expect("add");
    hooks.fan_out(100).await.expect("fan out");
    assert_eq!(hooks.backlog().await.expect("backlog").pending, 1);
    let admin = sea_orm::Database::connect(&file.url).await.expect("connect");
    sea_orm::ConnectionTrait::execute_unprepared(&admin, "DELETE FROM events")
        .await
        .expect("sweep the events as an older binary would");
    admin.close().await.expect("close");
    let later = Utc.timestamp_opt(4_000_000_000, 0).single().expect("an instant");
    let due = hooks
        .claim(later, later + chrono::Duration::seconds(60), &limits(10, 10))
        .await
        .expect("claim");
    assert!(due.is_empty(), "nothing to deliver");
    assert_eq!(hooks.backlog().await.expect("backlog").pending, 0, "the orphan is removed");
    db.close().await;
}

/// On SQLite the process holds its leases: successive claims take the deliveries after
/// those it holds, none is written to the file, and a process that starts again finds every
/// one of them due.
#[tokio::test]
async fn sqlite_claims_pass_over_the_deliveries_the_process_holds() {
    let file = SqliteFile::new();
    let db = file.open().await;
    queue(&db, 30).await;
    let later = Utc.timestamp_opt(4_000_000_000, 0).single().expect("an instant");
    let until = later + chrono::Duration::seconds(60);
    let hooks = db.webhooks();
    let mut claimed = Vec::new();
    for _ in 0..3 {
        let due = hooks.claim(later, until, &limits(10, 100)).await.expect("claim");
        assert_eq!(due.len(), 10, "a claim takes as many as it asks for");
        claimed.extend(due.into_iter().map(|d| d.delivery));
    }
    let distinct: BTreeSet<_> = claimed.iter().collect();
    assert_eq!(distinct.len(), 30, "no delivery claimed twice");
    assert!(hooks.claim(later, until, &limits(10, 100)).await.expect("claim").is_empty());
    let admin = sea_orm::Database::connect(&file.url).await.expect("connect");
    let leased = sea_orm::ConnectionTrait::query_one_raw(
        &admin,
        sea_orm::Statement::from_string(
            sea_orm::DbBackend::Sqlite,
            "SELECT count(*) AS leased FROM webhook_deliveries WHERE leased_until IS NOT NULL",
        ),
    )
    .await
    .expect("count the leases stored")
    .expect("a row");
    assert_eq!(leased.try_get::<i64>("", "leased").expect("a count"), 0, "nothing stored");
    admin.close().await.expect("close");
    let all = limits(100, 100);
    let after_lease = hooks.claim(until, until + chrono::Duration::seconds(60), &all);
    assert_eq!(after_lease.await.expect("claim").len(), 30, "due again once the leases end");
    db.close().await;
    let again = file.open().await;
    let due = again.webhooks().claim(later, until, &limits(100, 100)).await.expect("claim");
    assert_eq!(due.len(), 30, "a new process holds nothing");
    again.close().await;
}
