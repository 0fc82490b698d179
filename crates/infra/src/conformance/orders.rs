//! The contract of [`OrderRepository`]: orders reserve pets, each owner sees only its own,
//! moves follow the rules, and a pet's status always agrees with its orders.

use chrono::{DateTime, Duration, TimeZone as _, Utc};
use futures_util::future::join_all;

use animal_store_domain::{
    KeyId, NewOrder, Order, OrderId, OrderRepository, OrderStatus, PetId, PetRepository, PetStatus,
    PlaceOrderError, UpdateOrderError,
};

use super::new_pet;

/// The pet repository and the order repository of one store, both starting empty.
pub struct OrderStores<'a> {
    /// Where the pets are.
    pub pets: &'a dyn PetRepository,
    /// Where their orders are.
    pub orders: &'a dyn OrderRepository,
}

fn owner(id: &str) -> KeyId {
    KeyId::new(id).expect("a valid key id")
}

fn at(seconds: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_900_000_000, 0).single().expect("an instant") + Duration::seconds(seconds)
}

async fn pet_status(stores: &OrderStores<'_>, id: PetId) -> PetStatus {
    stores.pets.get(id).await.expect("get the pet").expect("the pet exists").status
}

async fn add_pet(stores: &OrderStores<'_>, name: &str, status: PetStatus) -> PetId {
    stores.pets.create(new_pet(name, 1, status)).await.expect("create a pet").id
}

async fn place(stores: &OrderStores<'_>, pet: PetId, by: &KeyId, when: i64) -> Order {
    let order = NewOrder { pet_id: pet, owner: by.clone(), at: at(when) };
    stores.orders.place(order).await.expect("the order is placed")
}

/// Checks an [`OrderRepository`] and the [`PetRepository`] it shares a store with.
pub async fn order_repository(stores: &OrderStores<'_>) {
    let (alice, bob) = (owner("aliceaaaaaaa"), owner("bobbbbbbbbbb"));
    let rex = add_pet(stores, "Rex", PetStatus::Available).await;
    let sold = add_pet(stores, "Sold", PetStatus::Sold).await;

    // Placing reserves the pet.
    let first = place(stores, rex, &alice, 0).await;
    let expected = NewOrder { pet_id: rex, owner: alice.clone(), at: at(0) }.placed(first.id);
    assert_eq!(first, expected, "the order is stored as placed, created and updated then");
    assert_eq!(pet_status(stores, rex).await, PetStatus::Pending, "placing reserves the pet");
    assert_eq!(stores.orders.get(&alice, first.id).await.expect("get"), Some(first.clone()));

    // Refusals change nothing.
    let again = NewOrder { pet_id: rex, owner: bob.clone(), at: at(1) };
    assert!(
        matches!(
            stores.orders.place(again).await,
            Err(PlaceOrderError::PetNotAvailable { pet, status: PetStatus::Pending }) if pet == rex
        ),
        "a reserved pet cannot be ordered"
    );
    let sold_order = NewOrder { pet_id: sold, owner: bob.clone(), at: at(1) };
    assert!(
        matches!(
            stores.orders.place(sold_order).await,
            Err(PlaceOrderError::PetNotAvailable { status: PetStatus::Sold, .. })
        ),
        "a sold pet cannot be ordered"
    );
    let missing = NewOrder { pet_id: PetId::new(9_999), owner: bob.clone(), at: at(1) };
    assert!(
        matches!(stores.orders.place(missing).await, Err(PlaceOrderError::NoSuchPet(id)) if id.get() == 9_999),
        "a missing pet cannot be ordered"
    );
    assert!(stores.orders.list(&bob, None, None, 100).await.expect("list").is_empty());
    assert_eq!(pet_status(stores, sold).await, PetStatus::Sold, "a refusal changes no pet");

    // Owners see their own orders only.
    assert_eq!(stores.orders.get(&bob, first.id).await.expect("get"), None, "another's order");
    let moved = stores.orders.update_status(&bob, first.id, OrderStatus::Cancelled, at(2)).await;
    assert!(matches!(moved, Err(UpdateOrderError::NotFound(id)) if id == first.id));
    assert_eq!(stores.orders.get(&alice, first.id).await.expect("get"), Some(first.clone()));
    assert_eq!(pet_status(stores, rex).await, PetStatus::Pending, "another's move changes nothing");

    moves(stores, &alice, first).await;
    pages(stores, &alice, &bob).await;
    one_order_per_pet(stores, &bob).await;
}

/// The allowed moves, the pet following each, and refusals that change nothing.
async fn moves(stores: &OrderStores<'_>, owner: &KeyId, order: Order) {
    let orders = stores.orders;
    let approved = orders.update_status(owner, order.id, OrderStatus::Approved, at(10)).await;
    let approved = approved.expect("placed -> approved");
    assert_eq!((approved.status, approved.updated_at), (OrderStatus::Approved, at(10)));
    assert_eq!(approved.created_at, order.created_at, "the placing time stays");
    assert_eq!(pet_status(stores, order.pet_id).await, PetStatus::Pending);

    let backwards = orders.update_status(owner, order.id, OrderStatus::Placed, at(11)).await;
    assert!(
        matches!(
            backwards,
            Err(UpdateOrderError::Transition(e)) if (e.from, e.to) == (OrderStatus::Approved, OrderStatus::Placed)
        ),
        "an order does not move back"
    );
    assert_eq!(orders.get(owner, order.id).await.expect("get"), Some(approved.clone()));

    let delivered = orders.update_status(owner, order.id, OrderStatus::Delivered, at(12)).await;
    assert_eq!(delivered.expect("approved -> delivered").status, OrderStatus::Delivered);
    assert_eq!(pet_status(stores, order.pet_id).await, PetStatus::Sold, "delivering sells");
    let cancel = orders.update_status(owner, order.id, OrderStatus::Cancelled, at(13)).await;
    assert!(matches!(cancel, Err(UpdateOrderError::Transition(_))), "delivered is final");
    assert_eq!(pet_status(stores, order.pet_id).await, PetStatus::Sold);

    // Cancelling frees the pet, which can be ordered again.
    let bella = add_pet(stores, "Bella", PetStatus::Available).await;
    let placed = place(stores, bella, owner, 20).await;
    let cancelled = orders.update_status(owner, placed.id, OrderStatus::Cancelled, at(21)).await;
    assert_eq!(cancelled.expect("placed -> cancelled").status, OrderStatus::Cancelled);
    assert_eq!(pet_status(stores, bella).await, PetStatus::Available, "cancelling frees");
    let unknown = orders.update_status(owner, OrderId::new(9_999), OrderStatus::Approved, at(22));
    assert!(matches!(unknown.await, Err(UpdateOrderError::NotFound(_))));
}

/// Pages by id, filtered by status, one owner's orders only.
async fn pages(stores: &OrderStores<'_>, alice: &KeyId, bob: &KeyId) {
    let mut bobs = Vec::new();
    for i in 0..5 {
        let pet = add_pet(stores, &format!("Pet {i}"), PetStatus::Available).await;
        bobs.push(place(stores, pet, bob, 30 + i).await);
    }
    let approved = stores.orders.update_status(bob, bobs[1].id, OrderStatus::Approved, at(40));
    bobs[1] = approved.await.expect("approve");
    let all = stores.orders.list(bob, None, None, 100).await.expect("list");
    assert_eq!(all, bobs, "an owner's orders, by id, and no one else's");
    let ids = |orders: &[Order]| orders.iter().map(|o| o.id).collect::<Vec<_>>();
    let first = stores.orders.list(bob, None, None, 2).await.expect("list");
    assert_eq!(ids(&first), ids(&bobs[..2]));
    let next = stores.orders.list(bob, None, Some(first[1].id), 2).await.expect("list");
    assert_eq!(ids(&next), ids(&bobs[2..4]), "the page after the cursor");
    let placed = stores.orders.list(bob, Some(OrderStatus::Placed), None, 100).await;
    let expected: Vec<_> =
        bobs.iter().filter(|o| o.status == OrderStatus::Placed).cloned().collect();
    assert_eq!(placed.expect("list"), expected, "the status filter");
    let alices = stores.orders.list(alice, None, None, 100).await.expect("list");
    assert!(alices.iter().all(|order| order.owner == *alice));
    assert!(!alices.is_empty());
}

/// Of concurrent orders for one pet, exactly one is placed.
async fn one_order_per_pet(stores: &OrderStores<'_>, owner: &KeyId) {
    let pet = add_pet(stores, "Contested", PetStatus::Available).await;
    let attempts = (0..16).map(|i| {
        stores.orders.place(NewOrder { pet_id: pet, owner: owner.clone(), at: at(50 + i) })
    });
    let outcomes = join_all(attempts).await;
    let placed = outcomes.iter().filter(|outcome| outcome.is_ok()).count();
    assert_eq!(placed, 1, "exactly one order is placed: {outcomes:?}");
    assert!(outcomes.iter().all(|outcome| matches!(
        outcome,
        Ok(_) | Err(PlaceOrderError::PetNotAvailable { status: PetStatus::Pending, .. })
    )));
    let orders = stores.orders.list(owner, None, None, 100).await.expect("list");
    assert_eq!(orders.iter().filter(|order| order.pet_id == pet).count(), 1);
}
