//! The retry use case over the memory store: a key is held while its request runs, and a
//! second request with it is refused until then; a key used before replays or is refused.

use std::sync::Arc;

use animal_store_domain::{
    Begun, CategoryId, Fingerprint, IdempotencyKey, KeyId, NewPet, PetName, PetStatus,
    RetryRefusal, RetryService, StoredResponse,
};
use animal_store_infra::{
    ManualClock, MemoryIdempotencyStore, MemoryOrderRepository, MemoryPetRepository,
};

fn service() -> RetryService {
    let pets = Arc::new(MemoryPetRepository::new());
    let orders = Arc::new(MemoryOrderRepository::new(Arc::clone(&pets)));
    let store = Arc::new(MemoryIdempotencyStore::new(pets, orders));
    RetryService::new(store, Arc::new(ManualClock::at_unix(1_900_000_000)))
}

#[tokio::test]
async fn a_running_key_is_refused_then_replayed() {
    let retries = service();
    let owner = KeyId::new("ownera000000").expect("a key id");
    let key = IdempotencyKey::new("k").expect("a key");
    let fingerprint = Fingerprint::of("POST", "/v1/pets", b"{}");
    let Ok(Begun::Fresh(claim)) = retries.begin(&owner, key.clone(), fingerprint).await else {
        panic!("a new key runs");
    };
    let second = retries.begin(&owner, key.clone(), fingerprint).await;
    assert!(matches!(second, Err(RetryRefusal::InProgress)), "{second:?}");
    let other = KeyId::new("ownerb000000").expect("a key id");
    assert!(
        matches!(retries.begin(&other, key.clone(), fingerprint).await, Ok(Begun::Fresh(_))),
        "another owner's key"
    );

    let pet = NewPet {
        name: PetName::new("Rex").expect("a name"),
        category_id: CategoryId::new(1).expect("a category"),
        status: PetStatus::Available,
    };
    let response = StoredResponse { status: 201, body: "{\"id\":1}".to_owned(), location: None };
    let stored = response.clone();
    retries.create_pet(&claim, pet, Box::new(move |_| stored)).await.expect("the pet");
    drop(claim);
    let replay = retries.begin(&owner, key.clone(), fingerprint).await;
    assert!(matches!(replay, Ok(Begun::Replay(ref r)) if *r == response), "{replay:?}");
    let reused = retries.begin(&owner, key, Fingerprint::of("POST", "/v1/pets", b"[]")).await;
    assert!(matches!(reused, Err(RetryRefusal::KeyReused)), "{reused:?}");
}
