//! The SQLite files hold key digests: the database, its `-wal` and `-shm` files and its
//! backups are created readable by their owner only.

use std::os::unix::fs::PermissionsExt;

use crate::harness::{Client, Db};

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

#[tokio::test]
async fn database_files_and_backups_are_the_owners_alone() {
    let db = Db::sqlite();
    let key = db.key("free");
    let server = db.start();
    let resp =
        Client::new(&key).post(&server.url("/v1/pets"), r#"{"name":"Rex","categoryId":1}"#).await;
    assert_eq!(resp.status(), 201);
    let file = db.path().join("store.db");
    for path in [file.clone(), file.with_extension("db-wal"), file.with_extension("db-shm")] {
        assert_eq!(mode(&path), 0o600, "{}", path.display());
    }
    let copy = db.path().join("copy.db");
    let out = db.run(&["backup", copy.to_str().expect("a UTF-8 path")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(mode(&copy), 0o600, "the backup");
}
