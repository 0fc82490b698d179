//! `animal-store backup PATH`: a consistent copy of a serving SQLite database.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::harness::{Client, Db, Server, list_all};

/// Clients write while the backup runs; a server started on the copy has every pet
/// acknowledged before the backup began.
#[tokio::test]
async fn a_backup_taken_under_writes_restores_every_earlier_pet() {
    let db = Db::sqlite();
    let key = db.unlimited_key();
    let server = db.start();
    let acknowledged: Arc<Mutex<BTreeMap<i64, Value>>> = Arc::default();
    let running = Arc::new(AtomicBool::new(true));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (client, url) = (Client::new(&key), server.url("/v1/pets"));
            let (acknowledged, running) = (acknowledged.clone(), running.clone());
            tokio::spawn(async move {
                let mut i = 0;
                while running.load(Ordering::Relaxed) && i < 5_000 {
                    let body = format!(r#"{{"name":"writer {w} pet {i}","categoryId":1}}"#);
                    let resp = client.post(&url, &body).await;
                    assert_eq!(resp.status(), 201);
                    let pet: Value = resp.json().await.expect("a pet");
                    acknowledged.lock().expect("lock").insert(pet["id"].as_i64().unwrap(), pet);
                    i += 1;
                }
            })
        })
        .collect();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let before = acknowledged.lock().expect("lock").clone();
    assert!(!before.is_empty(), "writes landed before the backup");
    let copy = db.path().join("copy.db");
    let out = db.run(&["backup", copy.to_str().expect("a path")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    running.store(false, Ordering::Relaxed);
    for writer in writers {
        writer.await.expect("a writer");
    }
    drop(server);

    let restored_dir = tempfile::tempdir().expect("a directory");
    let restored = Server::start(
        &format!("sqlite://{}", copy.display()),
        restored_dir.path().to_path_buf(),
        &[],
    );
    let stored = list_all(&Client::new(&key), &restored).await;
    for (id, pet) in &before {
        assert_eq!(stored.get(id), Some(pet), "pet {id}, acknowledged before the backup");
    }
}

/// A target that cannot be written, or a database that cannot be backed up, is one line
/// and exit status 2, and writes nothing.
#[test]
fn bad_backup_targets_are_refused() {
    let db = Db::sqlite();
    db.key("free");
    let existing = db.path().join("taken.db");
    std::fs::write(&existing, b"keep me").expect("write");
    let missing = db.path().join("no/such/dir/copy.db");
    for (target, expected) in [
        (missing.to_str().unwrap(), "does not exist"),
        (existing.to_str().unwrap(), "exists already"),
    ] {
        let out = db.run(&["backup", target]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(expected) && stderr.lines().count() == 1, "{stderr}");
    }
    assert_eq!(std::fs::read(&existing).expect("read"), b"keep me", "nothing was overwritten");
}
