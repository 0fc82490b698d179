//! What a store promises when its database fails: a full disk, a commit that fails, a
//! connection lost in the middle of a transaction.
//!
//! An adapter's test describes a [`Fault`] it can turn on and off in the database under the
//! store, and runs [`writes_under_fault`]. The suite checks what clients rely on: every write
//! reported stored is stored, as a fresh connection sees it; every write reported failed
//! stored nothing; nothing stays locked; and writes succeed again by themselves once the
//! fault is gone, without reopening the store.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use animal_store_domain::{
    ApiKeyStore, EventLog, EventObject, EventType, KeyId, PetId, PetRepository, PetStatus, Plan,
    RepositoryError,
};
use async_trait::async_trait;
use futures_util::future::join_all;

use super::{key, new_pet};

/// A fault a test can cause in the database under a store.
#[async_trait]
pub trait Fault: Send + Sync {
    /// What it is, for failure messages.
    fn name(&self) -> &str;

    /// Whether the failures it causes are worth retrying (a full disk, a lost connection),
    /// so that the store must report them as [`RepositoryError::Unavailable`].
    fn is_transient(&self) -> bool;

    /// Turns the fault on. Writes that start afterwards fail (at least those that need
    /// what the fault takes away) until [`Fault::heal`]; the fault may also end by itself
    /// once it has made a write fail, as a lost connection does.
    async fn inject(&self);

    /// Turns the fault off, and waits until it is off.
    async fn heal(&self);
}

/// The stores under test, and a second pair over the same database through connections of
/// their own: what they read is what another process would.
pub struct Stores<'a> {
    /// The pet repository under test.
    pub pets: &'a dyn PetRepository,
    /// The key store under test, sharing the pets' database (and writer, if any).
    pub keys: &'a dyn ApiKeyStore,
    /// Pets over the same database, opened separately.
    pub witness_pets: &'a dyn PetRepository,
    /// Keys over the same database, opened separately.
    pub witness_keys: &'a dyn ApiKeyStore,
    /// The events over the same database, opened separately.
    pub witness_events: &'a dyn EventLog,
}

/// The ids of the pets whose `pet.created` event `events` holds, of those whose name
/// starts with `prefix`, in the order of the events.
async fn announced(events: &dyn EventLog, prefix: &str) -> Vec<PetId> {
    let reader = KeyId::new("witness00000").expect("a key id");
    let all = events.list(&reader, Some(EventType::PetCreated), None, 100_000).await;
    all.expect("list the events")
        .into_iter()
        .filter_map(|event| match event.object {
            EventObject::Pet(pet) if pet.name.as_str().starts_with(prefix) => Some(pet.id),
            _ => None,
        })
        .collect()
}

/// How many pets are written while the fault is on: enough to need new pages of a full
/// SQLite file and to fill several group commits.
const WRITES_UNDER_FAULT: usize = 96;

/// Checks that writes under `fault` keep every promise above. `run` names the pets of this
/// run, so that one database can go through several faults.
pub async fn writes_under_fault(stores: &Stores<'_>, fault: &dyn Fault, run: &str) {
    let Stores { pets, keys, witness_pets, witness_keys, witness_events } = *stores;
    let name = fault.name();
    let long = "x".repeat(60);
    let pet = |label: String| new_pet(&format!("{run} {label} {long}"), 3, PetStatus::Available);
    let before = pets.create(pet("before".into())).await.expect("a write before the fault");
    let (live, _) = key(Plan::Free, Some("live"), 1_700_000_000);
    keys.create(&live).await.expect("a key stored before the fault");

    fault.inject().await;
    let pet_writes = join_all((0..WRITES_UNDER_FAULT).map(|i| pets.create(pet(format!("#{i}")))));
    let (issued, _) = key(Plan::Pro, Some("during"), 1_700_000_001);
    let (pet_results, issue, touch) = tokio::join!(
        pet_writes,
        keys.create(&issued),
        keys.touch(&live.id, SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_050)),
    );
    fault.heal().await;

    // Failures are reported as such, and as retryable when they are.
    let failures: Vec<&RepositoryError> =
        pet_results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(!failures.is_empty(), "{name}: no write failed, so the fault did not bite");
    for err in failures.iter().copied().chain(issue.as_ref().err()).chain(touch.as_ref().err()) {
        if fault.is_transient() {
            assert!(
                matches!(err, RepositoryError::Unavailable(_)),
                "{name}: a retryable failure is reported as unavailable, got {err:?}"
            );
        }
    }

    // Writes succeed again by themselves, and nothing is left locked: the store writes,
    // and so does another connection to the same database.
    let after = pets.create(pet("after".into())).await.unwrap_or_else(|err| {
        panic!("{name}: writes succeed again once the fault is gone, got {err:?}")
    });
    let witnessed = witness_pets
        .create(pet("witness".into()))
        .await
        .unwrap_or_else(|err| panic!("{name}: the database is not left locked, got {err:?}"));
    let (late, _) = key(Plan::Business, Some("after"), 1_700_000_002);
    keys.create(&late).await.unwrap_or_else(|err| panic!("{name}: keys are stored again: {err:?}"));

    // Every pet reported stored is stored, exactly; no pet reported failed is.
    let mut expected: BTreeMap<_, _> =
        pet_results.iter().filter_map(|r| r.as_ref().ok()).map(|p| (p.id, p.clone())).collect();
    expected.extend([before, after, witnessed].map(|p| (p.id, p)));
    let found: BTreeMap<_, _> = witness_pets
        .list(None, None, 100_000)
        .await
        .expect("list through the witness")
        .into_iter()
        .filter(|p| p.name.as_str().starts_with(&format!("{run} ")))
        .map(|p| (p.id, p))
        .collect();
    assert_eq!(found, expected, "{name}: what is stored is exactly what was acknowledged");
    let mut events = announced(witness_events, &format!("{run} ")).await;
    events.sort_unstable();
    assert_eq!(
        events,
        found.keys().copied().collect::<Vec<_>>(),
        "{name}: a pet and its event are stored together, or neither is"
    );

    // The same for keys: found if and only if reported stored.
    for (key, stored) in [(&live, true), (&issued, issue.is_ok()), (&late, true)] {
        let found = witness_keys.find_by_digest(&key.digest).await.expect("find");
        assert_eq!(found.is_some(), stored, "{name}: key {} stored iff acknowledged", key.id);
    }
    let live_now = witness_keys.find_by_digest(&live.digest).await.expect("find").expect("live");
    assert_eq!(
        live_now.last_used_at.is_some(),
        touch.is_ok(),
        "{name}: a last use is recorded iff acknowledged"
    );
}

/// Checks a store that may fail on any call (an adapter wrapped in
/// [`FaultyPetRepository`](crate::faults::FaultyPetRepository), say): every write reported
/// stored is there, every write reported failed stored nothing, as `witness` (the same store,
/// unwrapped or opened apart) sees it, and once the failures stop, writes succeed again.
/// `heal` stops the failures.
pub async fn failed_writes_store_nothing(
    pets: &dyn PetRepository,
    keys: &dyn ApiKeyStore,
    witness: &Stores<'_>,
    heal: &(dyn Fn() + Sync),
) {
    let mut failures = 0;
    for i in 0..30 {
        let name = format!("flaky #{i}");
        if let Ok(pet) = pets.create(new_pet(&name, 5, PetStatus::Pending)).await {
            let found = witness.witness_pets.get(pet.id).await.expect("get");
            assert_eq!(found.as_ref(), Some(&pet), "a pet reported stored is stored");
        } else {
            failures += 1;
            let all = witness.witness_pets.list(None, None, 100_000).await.expect("list");
            assert!(
                all.iter().all(|p| p.name.as_str() != name),
                "a pet reported failed is not stored"
            );
        }
        let (key, _) = key(Plan::Free, Some("flaky"), 1_700_000_000 + i);
        let stored = keys.create(&key).await.is_ok();
        let found = witness.witness_keys.find_by_digest(&key.digest).await.expect("find");
        assert_eq!(found.is_some(), stored, "a key is stored iff reported stored");
    }
    assert!(failures > 0, "no write failed: the store under test never failed");
    let stored: Vec<PetId> = witness
        .witness_pets
        .list(None, None, 100_000)
        .await
        .expect("list")
        .into_iter()
        .filter(|pet| pet.name.as_str().starts_with("flaky #"))
        .map(|pet| pet.id)
        .collect();
    assert_eq!(
        announced(witness.witness_events, "flaky #").await,
        stored,
        "a pet reported stored has its event; a failed write left none"
    );
    heal();
    pets.create(new_pet("steady", 5, PetStatus::Sold))
        .await
        .unwrap_or_else(|err| panic!("writes succeed again once the failures stop: {err:?}"));
}
