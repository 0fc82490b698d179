//! The contract of [`PetChanges`]: a change is decided on the pet as stored (it exists, the
//! precondition holds, no open order forbids it), applied whole or not at all, and the
//! inventory follows every write.

use chrono::{TimeZone as _, Utc};

use animal_store_domain::{
    ChangePetError, Inventory, KeyId, NewOrder, Order, OrderRepository, OrderStatus, Pet,
    PetChanges, PetId, PetName, PetPatch, PetRepository, PetStatus, PlaceOrderError, Precondition,
};

use super::new_pet;

/// The pets, their changes and their orders of one store, starting empty.
pub struct PetChangeStores<'a> {
    /// Where the pets are added and read.
    pub pets: &'a dyn PetRepository,
    /// Where they are changed, removed and counted.
    pub changes: &'a dyn PetChanges,
    /// Where their orders are.
    pub orders: &'a dyn OrderRepository,
}

fn counts(available: u64, pending: u64, sold: u64) -> Inventory {
    Inventory::of([
        (PetStatus::Available, available),
        (PetStatus::Pending, pending),
        (PetStatus::Sold, sold),
    ])
}

fn renamed(name: &str) -> PetPatch {
    PetPatch { name: Some(PetName::new(name).expect("a valid name")), ..PetPatch::default() }
}

fn to_status(status: PetStatus) -> PetPatch {
    PetPatch { status: Some(status), ..PetPatch::default() }
}

/// A precondition that holds for `pet` as it is now, and only for it.
fn as_now(pet: &Pet) -> Precondition {
    Precondition::Is(pet.clone())
}

async fn inventory(stores: &PetChangeStores<'_>) -> Inventory {
    stores.changes.inventory().await.expect("the inventory")
}

/// Checks a [`PetChanges`] and the stores it shares with.
pub async fn pet_changes(stores: &PetChangeStores<'_>) {
    let [rex, max, sold] = patches(stores).await;
    let rex = preconditions(stores, rex).await;
    let (rex, order) = holds(stores, rex).await;
    removals(stores, [rex, max, sold], order).await;
}

/// A patch changes what it names, and is what a read sees next; the counts follow.
async fn patches(stores: &PetChangeStores<'_>) -> [Pet; 3] {
    assert_eq!(inventory(stores).await, counts(0, 0, 0), "an empty store counts nothing");
    let mut pets = Vec::new();
    for (i, status) in
        [PetStatus::Available, PetStatus::Available, PetStatus::Pending, PetStatus::Sold]
            .into_iter()
            .enumerate()
    {
        let category = i64::try_from(i).expect("small") + 1;
        pets.push(
            stores
                .pets
                .create(new_pet(&format!("Pet {i}"), category, status))
                .await
                .expect("create"),
        );
    }
    let [rex, max, pending, sold] = <[Pet; 4]>::try_from(pets).expect("four pets");
    assert_eq!(pending.status, PetStatus::Pending);
    assert_eq!(inventory(stores).await, counts(2, 1, 1), "the inventory counts every pet added");

    // A patch changes what it names, and is what a read sees next.
    let changed = stores.changes.update(rex.id, renamed("Rex II"), None).await.expect("update");
    assert_eq!(changed, Pet { name: PetName::new("Rex II").expect("a name"), ..rex.clone() });
    assert_eq!(stores.pets.get(rex.id).await.expect("get"), Some(changed.clone()));
    let unchanged = stores.changes.update(rex.id, PetPatch::default(), None).await.expect("{}");
    assert_eq!(unchanged, changed, "an empty patch answers the pet unchanged");
    let everything = PetPatch {
        name: Some(PetName::new("Rex").expect("a name")),
        category_id: Some(animal_store_domain::CategoryId::new(9).expect("a category")),
        status: Some(PetStatus::Sold),
    };
    let rex = stores.changes.update(rex.id, everything, None).await.expect("update all");
    assert_eq!((rex.name.as_str(), rex.category_id.get(), rex.status), ("Rex", 9, PetStatus::Sold));
    assert_eq!(inventory(stores).await, counts(1, 1, 2), "a status moved moves its counts");
    let rex =
        stores.changes.update(rex.id, to_status(PetStatus::Available), None).await.expect("back");
    assert_eq!(inventory(stores).await, counts(2, 1, 1));
    [rex, max, sold]
}

/// A missing pet, a failed precondition: nothing changes. Of two changes made on one
/// reading, one is applied.
async fn preconditions(stores: &PetChangeStores<'_>, rex: Pet) -> Pet {
    let missing = PetId::new(rex.id.get() + 1_000);
    assert!(matches!(
        stores.changes.update(missing, renamed("X"), None).await,
        Err(ChangePetError::NotFound(id)) if id == missing
    ));
    assert!(matches!(
        stores.changes.remove(missing, None).await,
        Err(ChangePetError::NotFound(id)) if id == missing
    ));
    // The pet as it was before another change: not as stored.
    let stale =
        Precondition::Is(Pet { name: PetName::new("Not Rex").expect("a name"), ..rex.clone() });
    assert!(matches!(
        stores.changes.update(rex.id, to_status(PetStatus::Sold), Some(stale)).await,
        Err(ChangePetError::PreconditionFailed(id)) if id == rex.id
    ));
    assert!(matches!(
        stores.changes.remove(rex.id, Some(Precondition::Absent)).await,
        Err(ChangePetError::PreconditionFailed(_))
    ));
    assert_eq!(stores.pets.get(rex.id).await.expect("get"), Some(rex.clone()), "nothing changed");
    assert_eq!(inventory(stores).await, counts(2, 1, 1), "nothing counted");
    let rex =
        stores.changes.update(rex.id, renamed("Rex III"), Some(as_now(&rex))).await.expect("held");

    // Two changes made on one reading: one is applied, the other finds the pet changed.
    let (first, second) = futures_util::join!(
        stores.changes.update(rex.id, renamed("Left"), Some(as_now(&rex))),
        stores.changes.update(rex.id, renamed("Right"), Some(as_now(&rex))),
    );
    let won = [&first, &second].iter().filter(|outcome| outcome.is_ok()).count();
    let lost = [&first, &second]
        .iter()
        .filter(|outcome| matches!(outcome, Err(ChangePetError::PreconditionFailed(_))))
        .count();
    assert_eq!(
        (won, lost),
        (1, 1),
        "exactly one of two racing changes applies: {first:?} {second:?}"
    );
    let rex = first.or(second).expect("the winner");
    assert_eq!(stores.pets.get(rex.id).await.expect("get"), Some(rex.clone()));
    rex
}

/// An open order holds its pet's status, and the pet; a closed one holds nothing.
async fn holds(stores: &PetChangeStores<'_>, rex: Pet) -> (Pet, Order) {
    let alice = KeyId::new("aliceaaaaaaa").expect("a key id");
    let at = |s: i64| Utc.timestamp_opt(1_900_000_000 + s, 0).single().expect("an instant");
    let order = stores
        .orders
        .place(NewOrder { pet_id: rex.id, owner: alice.clone(), at: at(0) })
        .await
        .expect("placed");
    for status in [PetStatus::Available, PetStatus::Sold] {
        assert!(
            matches!(
                stores.changes.update(rex.id, to_status(status), None).await,
                Err(ChangePetError::Held { pet, order: by }) if pet == rex.id && by == order.id
            ),
            "an open order holds its pet's status"
        );
    }
    assert!(matches!(
        stores.changes.remove(rex.id, None).await,
        Err(ChangePetError::Held { order: by, .. }) if by == order.id
    ));
    let held = stores.changes.update(rex.id, renamed("Held"), None).await.expect("a name");
    assert_eq!(held.status, PetStatus::Pending, "its name changes, its status stays");
    let same = stores.changes.update(rex.id, to_status(PetStatus::Pending), None).await;
    assert_eq!(same.expect("the status it has").status, PetStatus::Pending);
    assert_eq!(inventory(stores).await, counts(1, 2, 1), "placing counted the pet pending");
    let approved =
        stores.orders.update_status(&alice, order.id, OrderStatus::Approved, at(1)).await;
    assert_eq!(approved.expect("approved").status, OrderStatus::Approved);
    assert!(matches!(stores.changes.remove(rex.id, None).await, Err(ChangePetError::Held { .. })));
    stores
        .orders
        .update_status(&alice, order.id, OrderStatus::Cancelled, at(2))
        .await
        .expect("cancelled");
    let freed = stores.changes.update(rex.id, to_status(PetStatus::Sold), None).await;
    let rex = freed.expect("a closed order holds nothing");
    assert_eq!(rex.status, PetStatus::Sold);
    (rex, order)
}

/// A removed pet is gone for good; its closed orders stay; its id is never given again.
async fn removals(stores: &PetChangeStores<'_>, [rex, max, sold]: [Pet; 3], order: Order) {
    let alice = order.owner.clone();
    let at = |s: i64| Utc.timestamp_opt(1_900_000_000 + s, 0).single().expect("an instant");
    let removed = stores.changes.remove(max.id, Some(as_now(&max))).await.expect("removed");
    assert_eq!(removed, max, "removing answers the pet as it was");
    assert_eq!(stores.pets.get(max.id).await.expect("get"), None);
    let listed = stores.pets.list(None, None, 100).await.expect("list");
    assert!(listed.iter().all(|pet| pet.id != max.id), "a removed pet is not listed");
    assert!(matches!(stores.changes.remove(max.id, None).await, Err(ChangePetError::NotFound(_))));
    assert!(matches!(
        stores.changes.update(max.id, renamed("Back"), None).await,
        Err(ChangePetError::NotFound(_))
    ));
    assert!(matches!(
        stores.orders.place(NewOrder { pet_id: max.id, owner: alice.clone(), at: at(3) }).await,
        Err(PlaceOrderError::NoSuchPet(id)) if id == max.id
    ));
    let closed = stores.changes.remove(rex.id, None).await.expect("a pet whose orders closed");
    assert_eq!(closed.id, rex.id);
    let kept = stores.orders.get(&alice, order.id).await.expect("get the order");
    assert_eq!(kept.map(|order| order.status), Some(OrderStatus::Cancelled), "its orders stay");
    let removed_last = stores.changes.remove(sold.id, None).await.expect("the newest pet");
    let next = stores.pets.create(new_pet("Next", 1, PetStatus::Available)).await.expect("create");
    assert!(
        next.id > removed_last.id,
        "ids are never given again: {} after {}",
        next.id,
        removed_last.id
    );
    assert_eq!(inventory(stores).await, counts(1, 1, 0), "removals uncount their pets");
}
