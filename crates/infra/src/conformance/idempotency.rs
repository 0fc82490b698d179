//! The contract of [`IdempotencyStore`]: a keyed write is done once and its outcome kept for
//! a day, per owner; a key that was used answers its record and adds nothing; concurrent
//! writes with one key do the work once; the sweep removes old records a batch at a time.

use chrono::{DateTime, Duration, TimeZone as _, Utc};
use futures_util::future::join_all;

use std::sync::Arc;

use animal_store_domain::{
    AnswerEncoder, Fingerprint, IdempotencyKey, IdempotencyRecord, IdempotencyStore,
    IdempotentWrite, KeyId, KeyUse, NewOrder, Order, OrderRepository, Pet, PetId, PetRepository,
    PetStatus, PlaceOrderError, StoredAnswer,
};

use super::new_pet;

/// The stores of one database, each starting empty.
pub struct IdempotencyStores<'a> {
    /// Where pets are.
    pub pets: &'a dyn PetRepository,
    /// Where orders are.
    pub orders: &'a dyn OrderRepository,
    /// Where the records are, beside them.
    pub records: &'a dyn IdempotencyStore,
}

fn at(seconds: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_900_000_000, 0).single().expect("an instant") + Duration::seconds(seconds)
}

fn write(owner: &str, key: &str, body: &[u8], when: i64) -> IdempotentWrite {
    IdempotentWrite {
        owner: KeyId::new(owner).expect("a key id"),
        idempotency_key: IdempotencyKey::new(key).expect("a key"),
        fingerprint: Fingerprint::of("POST", "/v1/pets", body),
        at: at(when),
    }
}

/// The answer of a write that made `id`: naming what it made, as the API's do, so that two
/// writes never store the same record.
pub(super) fn created(id: i64) -> StoredAnswer {
    StoredAnswer::new(format!("created {id}").into_bytes())
}

/// The answer of an order refused because its animal is not available.
fn not_available() -> StoredAnswer {
    StoredAnswer::new(b"not available".to_vec())
}

/// The answers of these cases: a pet's and an order's name what the write made; of the
/// refusals, one for an animal not available, and none for a missing animal, which leaves
/// the key free.
pub(super) struct Answers;

impl AnswerEncoder for Answers {
    fn pet_created(&self, pet: &Pet) -> StoredAnswer {
        created(pet.id.get())
    }

    fn order_placed(&self, placed: &Result<Order, PlaceOrderError>) -> Option<StoredAnswer> {
        match placed {
            Ok(order) => Some(created(order.id.get())),
            Err(PlaceOrderError::PetNotAvailable { .. }) => Some(not_available()),
            Err(_) => None,
        }
    }
}

/// The answers of these cases, as the stores take them.
pub(super) fn answers() -> Arc<dyn AnswerEncoder> {
    Arc::new(Answers)
}

/// What a client's retry of `write` finds: the key's record, when it has an unexpired one
/// (the retry adds nothing then); `None` when the key is free (the retry adds a pet then).
async fn retry(
    records: &dyn IdempotencyStore,
    write: IdempotentWrite,
) -> Option<IdempotencyRecord> {
    let pet = new_pet("Retried", 1, PetStatus::Available);
    match records.create_pet(write, pet, answers()).await {
        Ok(KeyUse::Again(record)) => Some(record),
        Ok(KeyUse::First(_)) => None,
        Err(err) => panic!("a retry: {err}"),
    }
}

async fn count_pets(stores: &IdempotencyStores<'_>) -> usize {
    stores.pets.list(None, None, 10_000).await.expect("list").len()
}

/// Checks an [`IdempotencyStore`] and the stores it writes beside.
pub async fn idempotency_store(stores: &IdempotencyStores<'_>) {
    let records = stores.records;
    let first = write("ownera000000", "key-1", b"{\"name\":\"Rex\"}", 0);

    let done = records
        .create_pet(first.clone(), new_pet("Rex", 1, PetStatus::Available), answers())
        .await
        .expect("create");
    let KeyUse::First((pet, answer)) = done else { panic!("a new key does the work: {done:?}") };
    assert_eq!(answer, created(pet.id.get()), "the answer encoded for the pet");
    assert_eq!(
        stores.pets.get(pet.id).await.expect("get").as_ref(),
        Some(&pet),
        "the pet is stored"
    );
    let record = retry(records, write("ownera000000", "key-1", b"{}", 1)).await.expect("a record");
    assert_eq!(
        (record.fingerprint, &record.answer, record.created_at),
        (first.fingerprint, &created(pet.id.get()), at(0))
    );

    // A used key answers its record and adds nothing, whatever the request.
    let before = count_pets(stores).await;
    for body in [&b"{\"name\":\"Rex\"}"[..], b"{\"name\":\"Other\"}"] {
        let again = records
            .create_pet(
                write("ownera000000", "key-1", body, 5),
                new_pet("Rex", 1, PetStatus::Available),
                answers(),
            )
            .await
            .expect("create");
        assert!(matches!(&again, KeyUse::Again(found) if *found == record), "{again:?}");
    }
    assert_eq!(count_pets(stores).await, before, "a used key adds nothing");

    // Keys are scoped to their owner.
    let other = records
        .create_pet(
            write("ownerb000000", "key-1", b"{}", 6),
            new_pet("Bella", 1, PetStatus::Available),
            answers(),
        )
        .await
        .expect("create");
    assert!(matches!(other, KeyUse::First(_)), "another owner's key is another key");

    // After a day the record answers nothing, and the key can be used again.
    let later = records
        .create_pet(
            write("ownera000000", "key-1", b"{}", 86_400),
            new_pet("Rex", 1, PetStatus::Available),
            answers(),
        )
        .await
        .expect("create");
    let KeyUse::First((later, _)) = later else { panic!("an expired key does the work again") };
    let replaced =
        retry(records, write("ownera000000", "key-1", b"{}", 86_401)).await.expect("a record");
    assert_eq!(replaced.answer, created(later.id.get()));

    orders(stores).await;
    one_key_at_once(stores).await;
    many_keys_at_once(stores).await;
    sweeping(stores).await;
}

/// Orders: the placing is recorded, and so is a refusal the encoder answers; an outcome it
/// answers nothing for frees the key.
async fn orders(stores: &IdempotencyStores<'_>) {
    let records = stores.records;
    let pet =
        stores.pets.create(new_pet("Ordered", 1, PetStatus::Available)).await.expect("pet").id;
    let owner = KeyId::new("ownera000000").expect("a key id");
    let order = || NewOrder { pet_id: pet, owner: owner.clone(), at: at(100) };
    let placed = records
        .place_order(write("ownera000000", "order-1", b"{}", 100), order(), answers())
        .await
        .expect("place");
    let KeyUse::First((Ok(placed), answer)) = placed else { panic!("placed: {placed:?}") };
    assert_eq!(answer, Some(created(placed.id.get())));
    let again =
        records.place_order(write("ownera000000", "order-1", b"{}", 101), order(), answers()).await;
    assert!(matches!(again.expect("place"), KeyUse::Again(_)));
    assert_eq!(
        stores.orders.list(&owner, None, None, 100).await.expect("list").len(),
        1,
        "placed once"
    );

    let refused = records
        .place_order(write("ownera000000", "order-2", b"{}", 102), order(), answers())
        .await
        .expect("place");
    assert!(matches!(refused, KeyUse::First((Err(PlaceOrderError::PetNotAvailable { .. }), _))));
    let record = retry(records, write("ownera000000", "order-2", b"{}", 103)).await;
    assert_eq!(
        record.map(|r| r.answer),
        Some(not_available()),
        "a refusal of the operation is recorded"
    );

    let missing = NewOrder { pet_id: PetId::new(i64::MAX), owner: owner.clone(), at: at(104) };
    let unkept =
        records.place_order(write("ownera000000", "order-3", b"{}", 104), missing, answers()).await;
    assert!(matches!(unkept.expect("place"), KeyUse::First((Err(_), None))));
    let record = retry(records, write("ownera000000", "order-3", b"{}", 105)).await;
    assert!(record.is_none(), "an outcome the encoder answers nothing for leaves the key free");
}

/// Of concurrent writes with one key, one does the work.
async fn one_key_at_once(stores: &IdempotencyStores<'_>) {
    let before = count_pets(stores).await;
    let attempts = (0..16).map(|i| {
        stores.records.create_pet(
            write("ownerc000000", "contested", b"{}", 200 + i),
            new_pet("Contested", 1, PetStatus::Available),
            answers(),
        )
    });
    let outcomes = join_all(attempts).await;
    let done = outcomes.iter().filter(|o| matches!(o, Ok(KeyUse::First(_)))).count();
    let before_count = outcomes.iter().filter(|o| matches!(o, Ok(KeyUse::Again(_)))).count();
    assert_eq!(
        (done, before_count),
        (1, 15),
        "one does the work, the others find it: {outcomes:?}"
    );
    assert_eq!(count_pets(stores).await, before + 1, "one pet");
}

/// Concurrent writes with many keys, some of them twice and one used before: each key adds
/// one pet, whose record answers it, and that pet is stored (stores that add a batch's pets
/// together, then remove those of keys used before, must keep each key to its own pet).
async fn many_keys_at_once(stores: &IdempotencyStores<'_>) {
    let used = write("ownere000000", "many-used", b"{}", 300);
    records_of(stores, used.clone()).await;
    let before = count_pets(stores).await;
    let keys: Vec<String> =
        (0..24).map(|i| format!("many-{}", i % 16)).chain(["many-used".to_owned()]).collect();
    let attempts = keys.iter().map(|key| {
        stores.records.create_pet(
            write("ownere000000", key, b"{}", 301),
            new_pet(&format!("Pet {key}"), 1, PetStatus::Available),
            answers(),
        )
    });
    let outcomes = join_all(attempts).await;
    let done: Vec<_> = outcomes
        .iter()
        .filter_map(|o| match o {
            Ok(KeyUse::First((pet, _))) => Some(pet.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(done.len(), 16, "one pet per new key: {outcomes:?}");
    assert_eq!(count_pets(stores).await, before + 16);
    for pet in &done {
        let key = pet.name.as_str().trim_start_matches("Pet ");
        let record = retry(stores.records, write("ownere000000", key, b"{}", 302)).await;
        let record = record.expect("each key has its record");
        assert_eq!(record.answer, created(pet.id.get()), "{key}: its record names its own pet");
        let kept = stores.pets.get(pet.id).await.expect("get");
        assert_eq!(kept.as_ref(), Some(pet), "{key}: its pet is stored, not another's removed");
    }
}

async fn records_of(stores: &IdempotencyStores<'_>, write: IdempotentWrite) {
    let done =
        stores.records.create_pet(write, new_pet("Used", 1, PetStatus::Available), answers());
    assert!(matches!(done.await.expect("create"), KeyUse::First(_)));
}

/// The sweep removes records created before its instant, at most a batch at a time.
async fn sweeping(stores: &IdempotencyStores<'_>) {
    let records = stores.records;
    for i in 0..5 {
        let old = write("ownerd000000", &format!("old-{i}"), b"{}", 1_000 + i);
        records
            .create_pet(old, new_pet("Old", 1, PetStatus::Available), answers())
            .await
            .expect("create");
    }
    let fresh = write("ownerd000000", "fresh", b"{}", 5_000);
    records
        .create_pet(fresh.clone(), new_pet("Fresh", 1, PetStatus::Available), answers())
        .await
        .expect("create");
    // Everything before 1,005 s: the five old ones, and those of the checks above.
    let mut removed = 0;
    for _ in 0..100 {
        let swept = records.sweep(at(1_005), 2).await.expect("sweep");
        assert!(swept <= 2, "a batch at most: {swept}");
        if swept == 0 {
            break;
        }
        removed += swept;
    }
    assert!(removed >= 5, "the old records are gone: {removed}");
    for i in 0..5 {
        let old = write("ownerd000000", &format!("old-{i}"), b"{}", 1_010);
        assert!(retry(records, old).await.is_none(), "old-{i} is free again, within its day");
    }
    let again = write("ownerd000000", "fresh", b"{}", 5_001);
    assert!(retry(records, again).await.is_some(), "a newer record stays");
}
