//! The retry use case over the memory store: a key is held while its request runs, and a
//! second request with it is refused until then; a key used before repeats its first
//! response, or refuses another request.

use std::sync::Arc;

use animal_store_domain::{
    Answer, AnswerEncoder, CategoryId, Fingerprint, IdempotencyKey, IdempotencyRefusal,
    IdempotencyService, KeyId, NewPet, Order, Pet, PetName, PetStatus, PlaceOrderError,
    StoredAnswer,
};
use animal_store_infra::{
    ManualClock, MemoryIdempotencyStore, MemoryOrderRepository, MemoryPetRepository,
};

fn service() -> IdempotencyService {
    let pets = Arc::new(MemoryPetRepository::new());
    let orders = Arc::new(MemoryOrderRepository::new(Arc::clone(&pets)));
    let store = Arc::new(MemoryIdempotencyStore::new(pets, orders));
    let clock = Arc::new(ManualClock::at_unix(1_900_000_000));
    IdempotencyService::new(store, clock, Arc::new(Answers))
}

/// Answers that name the pet a write added.
struct Answers;

impl AnswerEncoder for Answers {
    fn pet_created(&self, pet: &Pet) -> StoredAnswer {
        StoredAnswer::new(format!("created {}", pet.id).into_bytes())
    }

    fn order_placed(&self, _placed: &Result<Order, PlaceOrderError>) -> Option<StoredAnswer> {
        None
    }
}

fn rex() -> NewPet {
    NewPet {
        name: PetName::new("Rex").expect("a name"),
        category_id: CategoryId::new(1).expect("a category"),
        status: PetStatus::Available,
    }
}

#[tokio::test]
async fn a_running_key_is_refused_then_repeats_its_response() {
    let idempotency = service();
    let owner = KeyId::new("ownera000000").expect("a key id");
    let key = IdempotencyKey::new("k").expect("a key");
    let fingerprint = Fingerprint::of("POST", "/v1/pets", b"{}");
    let hold = idempotency.hold(&owner, key.clone(), fingerprint).expect("a new key runs");
    let second = idempotency.hold(&owner, key.clone(), fingerprint);
    assert!(matches!(second, Err(IdempotencyRefusal::InProgress)), "{second:?}");
    let other = KeyId::new("ownerb000000").expect("a key id");
    assert!(idempotency.hold(&other, key.clone(), fingerprint).is_ok(), "another owner's key");

    let done = idempotency.create_pet(&hold, rex()).await;
    let Ok(Answer::Done((pet, answer))) = done else { panic!("done: {done:?}") };
    assert_eq!(answer.as_bytes(), format!("created {}", pet.id).as_bytes());
    drop(hold);

    let again = idempotency.hold(&owner, key.clone(), fingerprint).expect("free again");
    let replay = idempotency.create_pet(&again, rex()).await;
    assert!(matches!(replay, Ok(Answer::Replay(ref r)) if *r == answer), "{replay:?}");
    drop(again);
    let other_request = Fingerprint::of("POST", "/v1/pets", b"[]");
    let other_hold = idempotency.hold(&owner, key, other_request).expect("free again");
    let refused = idempotency.create_pet(&other_hold, rex()).await;
    assert!(matches!(refused, Err(IdempotencyRefusal::KeyReused)), "{refused:?}");
}
