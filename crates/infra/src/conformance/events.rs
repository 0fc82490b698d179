//! The contract of [`EventLog`] and of the stores that write it: every change makes its
//! events, in the order of the changes, carrying the pet or order as the change left it; a
//! refused or replayed write makes none; a key sees every pet's events and its own orders'
//! only; the sweep removes the oldest, and a removed event's id is never given again.

use chrono::{DateTime, Duration, TimeZone as _, Utc};

use animal_store_domain::{
    Event, EventId, EventLog, EventObject, EventType, Fingerprint, IdempotencyKey,
    IdempotencyStore, IdempotentWrite, KeyId, KeyUse, NewOrder, Order, OrderRepository,
    OrderStatus, Pet, PetChanges, PetName, PetPatch, PetRepository, PetStatus, Precondition,
};

use super::idempotency::answers;
use super::new_pet;
use crate::testing::ManualClock;

/// The stores of one database, each starting empty.
pub struct EventStores<'a> {
    /// Where pets are added.
    pub pets: &'a dyn PetRepository,
    /// Where they are changed and removed.
    pub changes: &'a dyn PetChanges,
    /// Where orders are.
    pub orders: &'a dyn OrderRepository,
    /// Where keyed writes are recorded.
    pub idempotency: &'a dyn IdempotencyStore,
    /// Where the events of all of them are read.
    pub events: &'a dyn EventLog,
}

fn owner(name: &str) -> KeyId {
    KeyId::new(name).expect("a key id")
}

fn at(seconds: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_900_000_000, 0).single().expect("an instant") + Duration::seconds(seconds)
}

fn keyed(owner_name: &str, key: &str, when: i64) -> IdempotentWrite {
    IdempotentWrite {
        owner: owner(owner_name),
        idempotency_key: IdempotencyKey::new(key).expect("a key"),
        fingerprint: Fingerprint::of("POST", "/v1/x", key.as_bytes()),
        at: at(when),
    }
}

/// Every event `reader` sees, oldest first.
async fn all(events: &dyn EventLog, reader: &KeyId) -> Vec<Event> {
    events.list(reader, None, None, 10_000).await.expect("list the events")
}

/// The events after `after` that `reader` sees, as (type, object).
async fn since(
    events: &dyn EventLog,
    reader: &KeyId,
    after: Option<EventId>,
) -> Vec<(EventType, EventObject)> {
    let listed = events.list(reader, None, after, 10_000).await.expect("list the events");
    listed.into_iter().map(|event| (event.kind, event.object)).collect()
}

fn last(events: &[Event]) -> Option<EventId> {
    events.last().map(|event| event.id)
}

fn pet_event(kind: EventType, pet: &Pet) -> (EventType, EventObject) {
    (kind, EventObject::Pet(pet.clone()))
}

fn order_event(kind: EventType, order: &Order) -> (EventType, EventObject) {
    (kind, EventObject::Order(order.clone()))
}

fn with_status(pet: &Pet, status: PetStatus) -> Pet {
    Pet { status, ..pet.clone() }
}

/// Checks the events of `stores`.
pub async fn events(stores: &EventStores<'_>) {
    let (alice, bob) = (owner("alice0000000"), owner("bob000000000"));
    assert!(all(stores.events, &alice).await.is_empty(), "a new store has no events");
    let orders = changes_make_events(stores, &alice).await;
    refusals_make_none(stores, &alice, &orders).await;
    keyed_writes(stores, &alice).await;
    visibility(stores, &alice, &bob).await;
    sweep(stores, &alice).await;
}

/// Each kind of change makes its events, in order, with the object as the change left it.
async fn changes_make_events(stores: &EventStores<'_>, alice: &KeyId) -> Order {
    let rex = stores.pets.create(new_pet("Rex", 1, PetStatus::Available)).await.expect("add Rex");
    let max = stores.pets.create(new_pet("Max", 2, PetStatus::Available)).await.expect("add Max");
    let events = all(stores.events, alice).await;
    assert_eq!(
        events.iter().map(|e| (e.kind, e.object.clone())).collect::<Vec<_>>(),
        vec![pet_event(EventType::PetCreated, &rex), pet_event(EventType::PetCreated, &max)],
        "an added pet makes pet.created with the pet as stored"
    );
    assert!(events[0].id < events[1].id, "a later event has a greater id");
    let mark = last(&events);

    let placed = NewOrder { pet_id: rex.id, owner: alice.clone(), at: at(10) };
    let order = stores.orders.place(placed).await.expect("place an order");
    let approved = stores
        .orders
        .update_status(alice, order.id, OrderStatus::Approved, at(20))
        .await
        .expect("approve");
    let delivered = stores
        .orders
        .update_status(alice, order.id, OrderStatus::Delivered, at(30))
        .await
        .expect("deliver");
    let renamed = stores
        .changes
        .update(
            max.id,
            PetPatch { name: Some(PetName::new("Max II").expect("a name")), ..PetPatch::default() },
            None,
        )
        .await
        .expect("rename Max");
    let removed = stores.changes.remove(max.id, None).await.expect("remove Max");
    assert_eq!(
        since(stores.events, alice, mark).await,
        vec![
            order_event(EventType::OrderPlaced, &order),
            pet_event(EventType::PetUpdated, &with_status(&rex, PetStatus::Pending)),
            order_event(EventType::OrderUpdated, &approved),
            order_event(EventType::OrderUpdated, &delivered),
            pet_event(EventType::PetUpdated, &with_status(&rex, PetStatus::Sold)),
            pet_event(EventType::PetUpdated, &renamed),
            pet_event(EventType::PetDeleted, &removed),
        ],
        "an order's moves make order events, and pet.updated when its pet's status moves (not \
         on approval, which keeps it pending); a patch makes pet.updated, a removal \
         pet.deleted with the pet as it was"
    );
    let events = all(stores.events, alice).await;
    let placed_event = events.iter().find(|e| e.kind == EventType::OrderPlaced).expect("placed");
    assert_eq!(placed_event.created_at, order.updated_at, "an order's event has the order's time");
    delivered
}

/// A write the rules refuse, or that changes nothing, makes no event.
async fn refusals_make_none(stores: &EventStores<'_>, alice: &KeyId, delivered: &Order) {
    let mark = last(&all(stores.events, alice).await);
    let sold = delivered.pet_id;
    let again = NewOrder { pet_id: sold, owner: alice.clone(), at: at(40) };
    assert!(stores.orders.place(again).await.is_err(), "a sold pet cannot be ordered");
    let back = stores.orders.update_status(alice, delivered.id, OrderStatus::Cancelled, at(41));
    assert!(back.await.is_err(), "a delivered order is final");
    let unchanged = stores.changes.update(sold, PetPatch::default(), None).await;
    assert!(unchanged.is_ok(), "an empty patch is accepted");
    let refused = stores.changes.update(sold, PetPatch::default(), Some(Precondition::Absent));
    assert!(refused.await.is_err(), "a precondition that fails refuses the patch");
    assert!(
        since(stores.events, alice, mark).await.is_empty(),
        "refusals and no-ops make no event"
    );
}

/// A keyed write makes its events the first time only; a replay makes none.
async fn keyed_writes(stores: &EventStores<'_>, alice: &KeyId) {
    let mark = last(&all(stores.events, alice).await);
    let write = keyed("alice0000000", "create-1", 50);
    let pet = new_pet("Bella", 3, PetStatus::Available);
    let KeyUse::First((bella, _)) = stores
        .idempotency
        .create_pet(write.clone(), pet.clone(), answers())
        .await
        .expect("a keyed add")
    else {
        panic!("a new key adds its pet");
    };
    let replay = stores.idempotency.create_pet(write, pet, answers()).await;
    assert!(matches!(replay, Ok(KeyUse::Again(_))), "a retry replays: {replay:?}");
    let order = NewOrder { pet_id: bella.id, owner: alice.clone(), at: at(60) };
    let place = keyed("alice0000000", "order-1", 60);
    let placed = stores.idempotency.place_order(place.clone(), order.clone(), answers()).await;
    let Ok(KeyUse::First((Ok(placed), _))) = placed else { panic!("a keyed order is placed") };
    let replay = stores.idempotency.place_order(place, order, answers()).await;
    assert!(matches!(replay, Ok(KeyUse::Again(_))), "a retried order replays");
    assert_eq!(
        since(stores.events, alice, mark).await,
        vec![
            pet_event(EventType::PetCreated, &bella),
            order_event(EventType::OrderPlaced, &placed),
            pet_event(EventType::PetUpdated, &with_status(&bella, PetStatus::Pending)),
        ],
        "keyed writes make their events once"
    );
}

/// Every key sees the pets' events; an order's events only its owner's keys see; the
/// listing filters by type, starts after an id and stops at a count.
async fn visibility(stores: &EventStores<'_>, alice: &KeyId, bob: &KeyId) {
    let alices = all(stores.events, alice).await;
    let bobs = all(stores.events, bob).await;
    let pets_only: Vec<Event> =
        alices.iter().filter(|e| matches!(e.object, EventObject::Pet(_))).cloned().collect();
    assert_eq!(bobs, pets_only, "another key sees the pets' events and none of the orders'");
    let order_event = alices.iter().find(|e| e.kind == EventType::OrderPlaced).expect("placed");
    assert_eq!(
        stores.events.get(alice, order_event.id).await.expect("get").as_ref(),
        Some(order_event)
    );
    assert_eq!(stores.events.get(bob, order_event.id).await.expect("get"), None, "not another's");
    let pet_event = &bobs[0];
    assert_eq!(stores.events.get(bob, pet_event.id).await.expect("get").as_ref(), Some(pet_event));
    let beyond = EventId::new(last(&alices).expect("events").get() + 1);
    assert_eq!(stores.events.get(alice, beyond).await.expect("get"), None, "no such event");

    let created = stores
        .events
        .list(alice, Some(EventType::PetCreated), None, 100)
        .await
        .expect("list by type");
    assert!(created.len() == 3 && created.iter().all(|e| e.kind == EventType::PetCreated));
    let page = stores.events.list(alice, None, Some(alices[1].id), 2).await.expect("a page");
    assert_eq!(page, alices[2..4].to_vec(), "after an id, at most count events, in id order");
}

/// The sweep removes the events created before its bound, oldest first, a batch at a time;
/// ids go on growing.
async fn sweep(stores: &EventStores<'_>, alice: &KeyId) {
    let before = all(stores.events, alice).await;
    let none = stores.events.sweep(Utc.timestamp_opt(0, 0).single().expect("1970"), 10).await;
    assert_eq!(none.expect("sweep"), 0, "nothing is older than 1970");
    let future = Utc::now() + Duration::days(365 * 100);
    assert_eq!(stores.events.sweep(future, 2).await.expect("sweep"), 2, "a batch at most");
    let left = all(stores.events, alice).await;
    assert_eq!(left, before[2..].to_vec(), "the oldest go first");
    let mut swept = 2;
    while swept < before.len() {
        let removed = stores.events.sweep(future, 4).await.expect("sweep");
        assert!(removed > 0, "the sweep goes on until none is left");
        swept += removed;
    }
    assert!(all(stores.events, alice).await.is_empty(), "every event swept");
    let pet = stores.pets.create(new_pet("Luna", 4, PetStatus::Sold)).await.expect("add Luna");
    let after = all(stores.events, alice).await;
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].object, EventObject::Pet(pet));
    assert!(after[0].id > last(&before).expect("events"), "a swept event's id is never reused");
}

/// Checks that the stores record the time of `clock`, the one clock of the service, and not
/// the system's: each change's event carries the clock's time, to the second, as it stood
/// when the change was asked for. The stores start empty and take their time from `clock`.
pub async fn events_on_one_clock(stores: &EventStores<'_>, clock: &ManualClock) {
    let alice = owner("alice0000000");
    // 2033-05-18T03:33:20.750Z: years from the system's time, with a fraction to drop.
    let start = std::time::UNIX_EPOCH + std::time::Duration::from_millis(2_000_000_000_750);
    clock.set(start);
    let then = at(100_000_000);
    let rex = stores.pets.create(new_pet("Rex", 1, PetStatus::Available)).await.expect("add Rex");
    let patch = PetPatch { status: Some(PetStatus::Sold), ..PetPatch::default() };
    stores.changes.update(rex.id, patch, None).await.expect("sell Rex");
    let write = IdempotentWrite { at: then, ..keyed("alice0000000", "one-clock", 0) };
    let max = new_pet("Max", 2, PetStatus::Available);
    let created = stores.idempotency.create_pet(write, max, answers()).await;
    let Ok(KeyUse::First((max, _))) = created else { panic!("a keyed add: {created:?}") };
    let order = NewOrder { pet_id: max.id, owner: alice.clone(), at: then };
    stores.orders.place(order).await.expect("an order for Max");

    clock.advance(std::time::Duration::from_secs(3_600));
    stores.changes.remove(rex.id, None).await.expect("remove Rex");

    let times: Vec<(EventType, DateTime<Utc>)> =
        all(stores.events, &alice).await.into_iter().map(|e| (e.kind, e.created_at)).collect();
    let later = then + Duration::seconds(3_600);
    assert_eq!(
        times,
        vec![
            (EventType::PetCreated, then),
            (EventType::PetUpdated, then),
            (EventType::PetCreated, then),
            (EventType::OrderPlaced, then),
            (EventType::PetUpdated, then),
            (EventType::PetDeleted, later),
        ],
        "every event carries the clock's time, to the second"
    );
}
