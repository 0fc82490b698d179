//! Every kind of page is served by an index, whatever the table's size: the first page
//! walks the primary key, a page after a cursor seeks into it, a page of one status seeks
//! into the `(status, id)` index; none sorts. Checked on the plans SQLite and PostgreSQL
//! choose for the repository's own queries, so that an index cannot silently go unused.

use animal_store_domain::{PetId, PetStatus};
use animal_store_infra::Database;
use animal_store_infra::testing::databases::{SqliteFile, fresh_postgres};

#[tokio::test]
async fn every_page_is_served_by_an_index_on_sqlite() {
    let file = SqliteFile::new();
    let db = file.open().await;
    let after = Some(PetId::new(500_000));
    let first = db.page_plan(None, None, None).await.expect("a plan");
    assert_eq!(first, ["SCAN pets"], "in primary-key order, stopping at the limit");
    let deep = db.page_plan(None, None, after).await.expect("a plan");
    assert_eq!(deep, ["SEARCH pets USING INTEGER PRIMARY KEY (rowid>?)"]);
    for cursor in [None, after] {
        let filtered = db.page_plan(None, Some(PetStatus::Pending), cursor).await.expect("a plan");
        assert_eq!(filtered.len(), 1, "{filtered:?}");
        assert!(
            filtered[0].starts_with("SEARCH pets USING INDEX pets_status_id (status=?"),
            "{filtered:?}"
        );
    }
    db.close().await;
}

#[tokio::test]
async fn every_page_is_served_by_an_index_on_postgres() {
    let Some(db) = fresh_postgres().await else {
        return;
    };
    let plans = plans_without_scans(&db).await;
    for (page, plan) in plans {
        let text = plan.join("\n");
        assert!(text.contains("Index"), "{page}: {text}");
        assert!(!text.contains("Sort"), "{page} sorts: {text}");
    }
    db.close().await;
}

/// On a near-empty table PostgreSQL rightly prefers scanning it whole, or gathering rows
/// through a bitmap and sorting them; with those off, the plan shows whether an index can
/// serve the page in order, as it does on a large table.
const PREFER_INDEXES: &str = "SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off";

async fn plans_without_scans(db: &Database) -> Vec<(&'static str, Vec<String>)> {
    let after = Some(PetId::new(500_000));
    let mut plans = Vec::new();
    for (page, status, cursor) in [
        ("first", None, None),
        ("deep", None, after),
        ("filtered", Some(PetStatus::Pending), None),
        ("filtered after a cursor", Some(PetStatus::Pending), after),
    ] {
        let plan = db.page_plan(Some(PREFER_INDEXES), status, cursor).await;
        plans.push((page, plan.expect("a plan")));
    }
    plans
}
