//! A pet's status and its orders never disagree, whatever sequence of calls came before: a
//! property test over random sequences of adding pets, placing orders and moving them, on
//! the memory adapter and on SQLite.
//!
//! After every call: a pet with an order has the status its latest order gives it
//! (`OrderStatus::pet_status`), a pet without one keeps the status it was added with, at most
//! one order per pet is still open (`placed` or `approved`), and it is the pet's latest.

use std::collections::BTreeMap;
use std::sync::Arc;

use animal_store_domain::{
    CategoryId, KeyId, NewOrder, NewPet, Order, OrderId, OrderRepository, OrderStatus, PetId,
    PetName, PetRepository, PetStatus,
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
}

fn call() -> impl Strategy<Value = Call> {
    let pet_status = prop_oneof![4 => Just(PetStatus::Available), 1 => Just(PetStatus::Pending), 1 => Just(PetStatus::Sold)];
    let order_status = prop::sample::select(OrderStatus::ALL.to_vec());
    prop_oneof![
        1 => pet_status.prop_map(Call::AddPet),
        2 => (0..8_usize, 0..2_usize).prop_map(|(pet, owner)| Call::Place { pet, owner }),
        3 => (0..16_usize, 0..2_usize, order_status).prop_map(|(order, owner, to)| Call::Move { order, owner, to }),
    ]
}

const OWNERS: [&str; 2] = ["ownera000000", "ownerb000000"];

/// Runs `calls` on the stores and checks the invariant after each.
async fn run(pets: &dyn PetRepository, orders: &dyn OrderRepository, calls: &[Call]) {
    let owners: Vec<KeyId> = OWNERS.iter().map(|id| KeyId::new(id).expect("a key id")).collect();
    let mut added: BTreeMap<PetId, PetStatus> = BTreeMap::new();
    let mut placed: Vec<OrderId> = Vec::new();
    for (step, call) in calls.iter().enumerate() {
        let at = DateTime::from_timestamp(1_900_000_000 + i64::try_from(step).expect("small"), 0)
            .expect("an instant");
        match call {
            Call::AddPet(status) => {
                let pet = NewPet {
                    name: PetName::new("Pet").expect("a name"),
                    category_id: CategoryId::new(1).expect("a category"),
                    status: *status,
                };
                let pet = pets.create(pet).await.expect("add a pet");
                added.insert(pet.id, *status);
            }
            Call::Place { pet, owner } => {
                let Some(&pet_id) = added.keys().nth(*pet % added.len().max(1)) else { continue };
                let order = NewOrder { pet_id, owner: owners[*owner].clone(), at };
                if let Ok(order) = orders.place(order).await {
                    placed.push(order.id);
                }
            }
            Call::Move { order, owner, to } => {
                let Some(&id) = placed.get(*order % placed.len().max(1)) else { continue };
                let _ = orders.update_status(&owners[*owner], id, *to, at).await;
            }
        }
        check(pets, orders, &owners, &added, step).await;
    }
}

async fn check(
    pets: &dyn PetRepository,
    orders: &dyn OrderRepository,
    owners: &[KeyId],
    added: &BTreeMap<PetId, PetStatus>,
    step: usize,
) {
    let mut by_pet: BTreeMap<PetId, Vec<Order>> = BTreeMap::new();
    for owner in owners {
        for order in orders.list(owner, None, None, 1_000).await.expect("list orders") {
            assert_eq!(&order.owner, owner, "step {step}: another owner's order listed");
            by_pet.entry(order.pet_id).or_default().push(order);
        }
    }
    for (&pet_id, &initial) in added {
        let pet = pets.get(pet_id).await.expect("get").expect("the pet exists");
        let mut mine = by_pet.remove(&pet_id).unwrap_or_default();
        mine.sort_by_key(|order| order.id);
        let open: Vec<_> = mine
            .iter()
            .filter(|order| matches!(order.status, OrderStatus::Placed | OrderStatus::Approved))
            .collect();
        assert!(
            open.len() <= 1,
            "step {step}: pet {pet_id} has {} open orders: {mine:?}",
            open.len()
        );
        let expected = mine.last().map_or(initial, |latest| latest.status.pet_status());
        assert_eq!(pet.status, expected, "step {step}: pet {pet_id} and its orders {mine:?}");
        if let Some(open) = open.first() {
            assert_eq!(
                Some(open.id),
                mine.last().map(|order| order.id),
                "step {step}: an open order is the latest"
            );
        }
    }
    assert!(by_pet.is_empty(), "step {step}: orders for pets never added: {by_pet:?}");
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
        runtime().block_on(run(&*pets, &orders, &calls));
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
            run(&db.pets(), &db.orders(), &calls).await;
            db.close().await;
        });
    }
}
