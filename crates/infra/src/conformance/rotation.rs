//! The rotation part of the [`ApiKeyStore`] suite: expiry and owner kept exactly, one
//! successor per key, and no rotation of a key that no longer works.

use std::time::{Duration, SystemTime};

use animal_store_domain::{ApiKey, ApiKeyStore, KeyId, Plan, RepositoryError, Rotation};
use futures_util::future::join_all;

use super::key;

/// A key of the line `of` belongs to, to succeed another.
fn successor(of: &ApiKey, created_secs: u64) -> ApiKey {
    let (new, _) = key(of.plan, None, created_secs);
    ApiKey { owner: of.owner.clone(), ..new }
}

fn at(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
}

async fn stored(store: &dyn ApiKeyStore, id: &KeyId) -> Option<ApiKey> {
    store.list().await.expect("list").into_iter().find(|key| key.id == *id)
}

/// Runs after the rest of the suite, on its own keys.
pub(super) async fn rotations(store: &dyn ApiKeyStore) {
    let now = at(1_800_000_000);
    let until = now + Duration::from_hours(24);

    // Expiry and owner round-trip.
    let (old, _) = key(Plan::Pro, Some("rotating"), 1_750_000_000);
    let old = ApiKey { expires_at: Some(at(1_900_000_000)), ..old };
    store.create(&old).await.expect("create");
    assert_eq!(stored(store, &old.id).await.as_ref(), Some(&old), "expiry kept exactly");

    // A rotation stores the successor and bounds the old key's life by the grace period.
    let new = successor(&old, 1_750_000_001);
    let rotated = store.rotate(&new, &old.id, now, until).await.expect("rotate");
    let expected =
        ApiKey { rotated_to: Some(new.id.clone()), expires_at: Some(until), ..old.clone() };
    assert_eq!(rotated, Rotation::Rotated(expected.clone()));
    assert_eq!(stored(store, &old.id).await, Some(expected.clone()), "the old key, rotated");
    let found = store.find_by_digest(&new.digest).await.expect("find");
    assert_eq!(found.as_ref(), Some(&new), "the successor, with the old key's owner");
    assert_eq!(new.owner, old.id);

    // One successor per key.
    let second = successor(&old, 1_750_000_002);
    let refused = store.rotate(&second, &old.id, now, until).await.expect("rotate");
    assert_eq!(refused, Rotation::Refused(expected), "a rotated key is not rotated again");
    assert!(stored(store, &second.id).await.is_none(), "nothing stored for a refusal");

    // The grace never extends a key: one that expires sooner keeps its expiry.
    let (soon, _) = key(Plan::Free, None, 1_750_000_003);
    let soon = ApiKey { expires_at: Some(now + Duration::from_mins(10)), ..soon };
    store.create(&soon).await.expect("create");
    let next = successor(&soon, 1_750_000_004);
    match store.rotate(&next, &soon.id, now, until).await.expect("rotate") {
        Rotation::Rotated(key) => assert_eq!(key.expires_at, soon.expires_at),
        other => panic!("a live key rotates: {other:?}"),
    }

    // Keys that no longer work are refused, and unknown ones not found.
    let (expired, _) = key(Plan::Free, None, 1_750_000_005);
    let expired = ApiKey { expires_at: Some(now), ..expired };
    store.create(&expired).await.expect("create");
    let refused = store.rotate(&successor(&expired, 1_750_000_006), &expired.id, now, until).await;
    assert!(matches!(refused.expect("rotate"), Rotation::Refused(_)), "expired at now");
    let (revoked, _) = key(Plan::Free, None, 1_750_000_007);
    store.create(&revoked).await.expect("create");
    store.revoke(&revoked.id, now).await.expect("revoke");
    let refused = store.rotate(&successor(&revoked, 1_750_000_008), &revoked.id, now, until).await;
    assert!(matches!(refused.expect("rotate"), Rotation::Refused(_)), "revoked");
    let unknown = KeyId::new("yyyyyyyyyyyy").expect("a valid id");
    let lost = store.rotate(&successor(&revoked, 1_750_000_009), &unknown, now, until).await;
    assert_eq!(lost.expect("rotate"), Rotation::NotFound);

    // A successor that clashes is a duplicate, and the old key is left as it was.
    let (clashing_old, _) = key(Plan::Free, None, 1_750_000_010);
    store.create(&clashing_old).await.expect("create");
    let clash = ApiKey { id: new.id.clone(), ..successor(&clashing_old, 1_750_000_011) };
    let duplicate = store.rotate(&clash, &clashing_old.id, now, until).await;
    assert!(matches!(duplicate, Err(RepositoryError::Duplicate)), "{duplicate:?}");
    assert_eq!(stored(store, &clashing_old.id).await, Some(clashing_old.clone()), "unchanged");

    // Two rotations at once: exactly one succeeds.
    let racing = [successor(&clashing_old, 1_750_000_012), successor(&clashing_old, 1_750_000_013)];
    let outcomes =
        join_all(racing.iter().map(|new| store.rotate(new, &clashing_old.id, now, until))).await;
    let won = outcomes.iter().filter(|o| matches!(o, Ok(Rotation::Rotated(_)))).count();
    assert_eq!(won, 1, "one successor per key, even at once: {outcomes:?}");
    let successors = racing.iter().map(|new| &new.id);
    let kept = join_all(successors.map(|id| stored(store, id))).await;
    assert_eq!(kept.iter().flatten().count(), 1, "only the winner's successor is stored");
}
