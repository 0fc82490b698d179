//! Key expiry and rotation through the real binary: `keys create --expires-in`, `keys
//! rotate`, what `keys list` shows, and what the server answers each key.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::harness::{Client, Db, json};

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("after 1970").as_secs()
}

/// The line of `keys list` for the key `id`.
fn listed(db: &Db, id: &str) -> String {
    let out = db.run(&["keys", "list"]);
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .find(|line| line.starts_with(id))
        .unwrap_or_else(|| panic!("no line for {id}"))
        .to_owned()
}

fn id_of(key: &str) -> &str {
    key.split('_').nth(2).expect("a key id")
}

#[tokio::test]
async fn an_expired_key_is_refused_like_any_invalid_key() {
    let db = Db::sqlite();
    let out = db.run(&["keys", "create", "--plan", "free", "--expires-in", "1h"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let key = String::from_utf8(out.stdout).expect("utf-8").trim().to_owned();
    let line = listed(&db, id_of(&key));
    assert!(line.contains("\tactive\t") && line.contains("\texpires="), "{line}");

    let start = now();
    let (server, clock) = db.start_at(start);
    let client = Client::new(&key);
    assert_eq!(client.get(&server.url("/v1/pets")).await.status(), 200);
    clock.set(start + 3_601);
    let expired = client.get(&server.url("/v1/pets")).await;
    assert_eq!(expired.status(), 401);
    let stranger = Client::new("as_live_aaaaaaaaaaaa_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    let unknown = stranger.get(&server.url("/v1/pets")).await;
    assert_eq!(json(expired).await, json(unknown).await, "the same 401 as an unknown key");

    let out = db.run(&["keys", "create", "--plan", "free", "--expires-in", "soon"]);
    assert_eq!(out.status.code(), Some(2), "an invalid duration is refused");
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a duration"));
}

#[tokio::test]
async fn a_rotated_key_shares_its_quota_then_stops_after_the_grace() {
    let db = Db::sqlite();
    let old = db.key("free");
    let start = now();
    let (server, clock) = db.start_at(start);
    let pets = server.url("/v1/pets");
    let old_client = Client::new(&old);
    for _ in 0..30 {
        assert_eq!(old_client.get(&pets).await.status(), 200);
    }

    let out = db.run(&["keys", "rotate", id_of(&old), "--grace", "1h"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let new = String::from_utf8(out.stdout).expect("utf-8").trim().to_owned();
    assert!(new.starts_with("as_live_") && !new.contains('\n'), "the new key alone: {new:?}");
    let old_line = listed(&db, id_of(&old));
    assert!(old_line.contains(&format!("\trotated_to={}", id_of(&new))), "{old_line}");
    assert!(old_line.contains("\texpires="), "{old_line}");
    let new_line = listed(&db, id_of(&new));
    assert!(new_line.contains("\tfree\t60/min\t1000/day\tactive\t"), "{new_line}");
    assert!(new_line.contains(&format!("\tline={}", id_of(&old))), "{new_line}");

    // One quota for both: 30 spent by the old key, 30 left for either.
    let new_client = Client::new(&new);
    for i in 0..30 {
        let client = if i % 2 == 0 { &new_client } else { &old_client };
        assert_eq!(client.get(&pets).await.status(), 200, "request {i} of the shared 60");
    }
    let refused = new_client.get(&pets).await;
    assert_eq!(refused.status(), 429, "the 61st of the minute, whichever key sends it");
    assert_eq!(old_client.get(&pets).await.status(), 429);

    // Past the grace (which began at the rotation, after `start`), the old key is refused
    // as any invalid key; the new one works.
    clock.set(start + 3_900);
    assert_eq!(old_client.get(&pets).await.status(), 401);
    assert_eq!(new_client.get(&pets).await.status(), 200);

    let again = db.run(&["keys", "rotate", id_of(&old)]);
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("was rotated already"));
    let unknown = db.run(&["keys", "rotate", "zzzzzzzzzzzz"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no key has id zzzzzzzzzzzz"));
}
