//! A pet's status and its orders never disagree, whatever sequence of calls came before: a
//! property test over random sequences of adding pets, placing orders, moving them, and
//! changing and removing pets, on the memory adapter and on SQLite.
//!
//! A model follows the calls: each pet's status, and the open order (`placed` or
//! `approved`) that holds it, if any. Each call must succeed or be refused exactly as the
//! model says: an order for an available pet is placed; a patch that moves a held pet's
//! status, and the removal of a held pet, are refused with the order that holds it. After
//! every call the stores agree with the model: every pet has its status, a removed pet is
//! gone, at most one order per pet is open and it is the pet's latest, and the inventory
//! counts the model's pets.

use std::collections::BTreeMap;
use std::sync::Arc;

use animal_store_domain::{
    CategoryId, ChangePetError, Inventory, KeyId, NewOrder, NewPet, Order, OrderId,
    OrderRepository, OrderStatus, PetChanges, PetId, PetName, PetPatch, PetRepository, PetStatus,
    PlaceOrderError, UpdateOrderError,
};
use animal_store_infra::testing::databases::SqliteFile;
use animal_store_infra::{MemoryOrderRepository, MemoryPetRepository};
use chrono::DateTime;
use proptest::prelude::*;

/// One call, its targets chosen by index among what exists when it runs.
#[derive(Debug, Clone)]
enum Call {
    AddPet(PetStatus),
    Place { pet: usize, owner: usize },
    Move { order: usize, owner: usize, to: OrderStatus },
    SetStatus { pet: usize, to: PetStatus },
    Remove { pet: usize },
}

fn call() -> impl Strategy<Value = Call> {
    let pet_status = || prop::sample::select(PetStatus::ALL.to_vec());
    let weighted_status = prop_oneof![4 => Just(PetStatus::Available), 1 => Just(PetStatus::Pending), 1 => Just(PetStatus::Sold)];
    let order_status = prop::sample::select(OrderStatus::ALL.to_vec());
    prop_oneof![
        2 => weighted_status.prop_map(Call::AddPet),
        3 => (0..8_usize, 0..2_usize).prop_map(|(pet, owner)| Call::Place { pet, owner }),
        3 => (0..16_usize, 0..2_usize, order_status).prop_map(|(order, owner, to)| Call::Move { order, owner, to }),
        2 => (0..8_usize, pet_status()).prop_map(|(pet, to)| Call::SetStatus { pet, to }),
        1 => (0..8_usize).prop_map(|pet| Call::Remove { pet }),
    ]
}

const OWNERS: [&str; 2] = ["ownera000000", "ownerb000000"];

/// The stores of one database.
struct Stores<'a> {
    pets: &'a dyn PetRepository,
    changes: &'a dyn PetChanges,
    orders: &'a dyn OrderRepository,
}

/// What the calls so far must have left.
#[derive(Default)]
struct Model {
    /// Every pet ever added, in order, and its status; `None` once removed.
    pets: BTreeMap<PetId, Option<PetStatus>>,
    /// The open order that holds a pet.
    holds: BTreeMap<PetId, OrderId>,
    /// Every order placed, with its owner, its pet and its status.
    orders: Vec<(OrderId, usize, PetId, OrderStatus)>,
}

impl Model {
    fn pet(&self, index: usize) -> Option<PetId> {
        self.pets.keys().nth(index % self.pets.len().max(1)).copied()
    }
}

/// Runs `calls` on the stores and checks the model after each.
async fn run(stores: &Stores<'_>, calls: &[Call]) {
    let owners: Vec<KeyId> = OWNERS.iter().map(|id| KeyId::new(id).expect("a key id")).collect();
    let mut model = Model::default();
    for (step, call) in calls.iter().enumerate() {
        let at = DateTime::from_timestamp(1_900_000_000 + i64::try_from(step).expect("small"), 0)
            .expect("an instant");
        apply(stores, &mut model, &owners, call, at, step).await;
        check(stores, &model, &owners, step).await;
    }
}

async fn apply(
    stores: &Stores<'_>,
    model: &mut Model,
    owners: &[KeyId],
    call: &Call,
    at: DateTime<chrono::Utc>,
    step: usize,
) {
    match *call {
        Call::AddPet(status) => {
            let pet = NewPet {
                name: PetName::new("Pet").expect("a name"),
                category_id: CategoryId::new(1).expect("a category"),
                status,
            };
            let pet = stores.pets.create(pet).await.expect("add a pet");
            model.pets.insert(pet.id, Some(status));
        }
        Call::Place { pet, owner } => {
            let Some(pet_id) = model.pet(pet) else { return };
            let placed = stores.orders.place(NewOrder { pet_id, owner: owners[owner].clone(), at });
            match (placed.await, model.pets[&pet_id]) {
                (Ok(order), Some(PetStatus::Available)) => {
                    model.pets.insert(pet_id, Some(PetStatus::Pending));
                    model.holds.insert(pet_id, order.id);
                    model.orders.push((order.id, owner, pet_id, OrderStatus::Placed));
                }
                (Err(PlaceOrderError::NoSuchPet(_)), None)
                | (
                    Err(PlaceOrderError::PetNotAvailable { .. }),
                    Some(PetStatus::Pending | PetStatus::Sold),
                ) => {}
                (outcome, status) => {
                    panic!("step {step}: placing for a pet {status:?}: {outcome:?}")
                }
            }
        }
        Call::Move { order, owner, to } => {
            let index = order % model.orders.len().max(1);
            let Some(&(id, placed_by, pet_id, status)) = model.orders.get(index) else {
                return;
            };
            let moved = stores.orders.update_status(&owners[owner], id, to, at).await;
            match (moved, placed_by == owner, status.move_to(to)) {
                (Ok(moved), true, Ok(pet_status)) => {
                    assert_eq!(moved.status, to, "step {step}");
                    model.pets.insert(pet_id, Some(pet_status));
                    model.orders[index].3 = to;
                    if !to.is_open() {
                        model.holds.remove(&pet_id);
                    }
                }
                (Err(UpdateOrderError::NotFound(_)), false, _)
                | (Err(UpdateOrderError::Transition(_)), true, Err(_)) => {}
                (outcome, own, rule) => panic!(
                    "step {step}: moving order {id} ({status}) to {to}, its owner's: {own}, \
                     the rules: {rule:?}: {outcome:?}"
                ),
            }
        }
        Call::SetStatus { pet, to } => {
            let Some(pet_id) = model.pet(pet) else { return };
            let patch = PetPatch { status: Some(to), ..PetPatch::default() };
            let held = model.holds.get(&pet_id).copied();
            match (stores.changes.update(pet_id, patch, None).await, model.pets[&pet_id]) {
                (Ok(changed), Some(status)) if held.is_none() || status == to => {
                    assert_eq!(changed.status, to, "step {step}");
                    model.pets.insert(pet_id, Some(to));
                }
                (Err(ChangePetError::Held { order, .. }), Some(_)) if held == Some(order) => {}
                (Err(ChangePetError::NotFound(_)), None) => {}
                (outcome, status) => {
                    panic!(
                        "step {step}: patching a pet {status:?} held by {held:?} to {to}: {outcome:?}"
                    )
                }
            }
        }
        Call::Remove { pet } => {
            let Some(pet_id) = model.pet(pet) else { return };
            let held = model.holds.get(&pet_id).copied();
            match (stores.changes.remove(pet_id, None).await, model.pets[&pet_id]) {
                (Ok(_), Some(_)) if held.is_none() => {
                    model.pets.insert(pet_id, None);
                }
                (Err(ChangePetError::Held { order, .. }), Some(_)) if held == Some(order) => {}
                (Err(ChangePetError::NotFound(_)), None) => {}
                (outcome, status) => {
                    panic!("step {step}: removing a pet {status:?} held by {held:?}: {outcome:?}")
                }
            }
        }
    }
}

async fn check(stores: &Stores<'_>, model: &Model, owners: &[KeyId], step: usize) {
    let mut by_pet: BTreeMap<PetId, Vec<Order>> = BTreeMap::new();
    for owner in owners {
        for order in stores.orders.list(owner, None, None, 1_000).await.expect("list orders") {
            assert_eq!(&order.owner, owner, "step {step}: another owner's order listed");
            by_pet.entry(order.pet_id).or_default().push(order);
        }
    }
    let mut counts = Vec::new();
    for (&pet_id, &status) in &model.pets {
        let found = stores.pets.get(pet_id).await.expect("get");
        assert_eq!(found.map(|pet| pet.status), status, "step {step}: pet {pet_id}");
        counts.extend(status.map(|status| (status, 1)));
        let mut mine = by_pet.remove(&pet_id).unwrap_or_default();
        mine.sort_by_key(|order| order.id);
        let open: Vec<_> = mine.iter().filter(|order| order.status.is_open()).collect();
        assert!(
            open.len() <= 1,
            "step {step}: pet {pet_id} has {} open orders: {mine:?}",
            open.len()
        );
        if let Some(open) = open.first() {
            assert_eq!(
                Some(open.id),
                mine.last().map(|order| order.id),
                "step {step}: an open order is the latest"
            );
            assert_eq!(
                status,
                Some(open.status.pet_status()),
                "step {step}: a held pet follows its order"
            );
            assert_eq!(model.holds.get(&pet_id), Some(&open.id), "step {step}: the model's hold");
        }
    }
    assert!(by_pet.is_empty(), "step {step}: orders for pets never added: {by_pet:?}");
    let inventory = stores.changes.inventory().await.expect("the inventory");
    assert_eq!(inventory, Inventory::of(counts), "step {step}: the inventory counts every pet");
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn memory_pets_and_their_orders_agree(calls in prop::collection::vec(call(), 1..60)) {
        let pets = Arc::new(MemoryPetRepository::new());
        let orders = MemoryOrderRepository::new(Arc::clone(&pets));
        runtime().block_on(run(&Stores { pets: &*pets, changes: &*pets, orders: &orders }, &calls));
    }
}

proptest! {
    // A new SQLite file per case: fewer cases, the same calls.
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn sqlite_pets_and_their_orders_agree(calls in prop::collection::vec(call(), 1..40)) {
        runtime().block_on(async {
            let file = SqliteFile::new();
            let db = file.open().await;
            let (pets, orders) = (db.pets(), db.orders());
            run(&Stores { pets: &pets, changes: &pets, orders: &orders }, &calls).await;
            db.close().await;
        });
    }
}
