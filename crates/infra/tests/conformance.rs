//! Runs each port's conformance suite against every adapter of that port.

use std::sync::Arc;

use animal_store_domain::{ApiKeyStore, EventLog, PetRepository};
use animal_store_infra::conformance::faults::Stores;
use animal_store_infra::conformance::{
    EventStores, IdempotencyStores, OrderStores, PetChangeStores, WebhookStores,
};
use animal_store_infra::faults::{Faults, FaultyApiKeyStore, FaultyPetRepository, Injector};
use animal_store_infra::testing::databases::{SqliteFile, fresh_postgres};
use animal_store_infra::{
    CachedApiKeyStore, Database, ManualClock, MemoryApiKeyStore, MemoryIdempotencyStore,
    MemoryOrderRepository, MemoryPetRepository, SystemClock, conformance,
};

#[tokio::test]
async fn memory_pet_repository() {
    conformance::pet_repository(&MemoryPetRepository::new()).await;
}

#[tokio::test]
async fn sqlite_pet_repository() {
    let file = SqliteFile::new();
    let db = file.open().await;
    conformance::pet_repository(&db.pets()).await;
    db.close().await;
}

#[tokio::test]
async fn postgres_pet_repository() {
    let Some(db) = fresh_postgres().await else {
        return;
    };
    conformance::pet_repository(&db.pets()).await;
    db.close().await;
}

#[tokio::test]
async fn memory_order_repository() {
    let pets = Arc::new(MemoryPetRepository::new());
    let orders = MemoryOrderRepository::new(Arc::clone(&pets));
    conformance::order_repository(&OrderStores { pets: &*pets, orders: &orders }).await;
}

#[tokio::test]
async fn sqlite_order_repository() {
    let file = SqliteFile::new();
    let db = file.open().await;
    conformance::order_repository(&OrderStores { pets: &db.pets(), orders: &db.orders() }).await;
    db.close().await;
}

#[tokio::test]
async fn postgres_order_repository() {
    let Some(db) = fresh_postgres().await else {
        return;
    };
    conformance::order_repository(&OrderStores { pets: &db.pets(), orders: &db.orders() }).await;
    db.close().await;
}

#[tokio::test]
async fn memory_pet_changes() {
    let pets = Arc::new(MemoryPetRepository::new());
    let orders = MemoryOrderRepository::new(Arc::clone(&pets));
    conformance::pet_changes(&PetChangeStores { pets: &*pets, changes: &*pets, orders: &orders })
        .await;
}

#[tokio::test]
async fn sqlite_pet_changes() {
    let file = SqliteFile::new();
    let db = file.open().await;
    let (pets, orders) = (db.pets(), db.orders());
    conformance::pet_changes(&PetChangeStores { pets: &pets, changes: &pets, orders: &orders })
        .await;
    db.close().await;
}

#[tokio::test]
async fn postgres_pet_changes() {
    let Some(db) = fresh_postgres().await else {
        return;
    };
    let (pets, orders) = (db.pets(), db.orders());
    conformance::pet_changes(&PetChangeStores { pets: &pets, changes: &pets, orders: &orders })
        .await;
    db.close().await;
}

#[tokio::test]
async fn memory_idempotency_store() {
    let pets = Arc::new(MemoryPetRepository::new());
    let orders = Arc::new(MemoryOrderRepository::new(Arc::clone(&pets)));
    let records = MemoryIdempotencyStore::new(Arc::clone(&pets), Arc::clone(&orders));
    let stores = IdempotencyStores { pets: &*pets, orders: &*orders, records: &records };
    conformance::idempotency_store(&stores).await;
}

#[tokio::test]
async fn sqlite_idempotency_store() {
    let file = SqliteFile::new();
    let db = file.open().await;
    let stores =
        IdempotencyStores { pets: &db.pets(), orders: &db.orders(), records: &db.idempotency() };
    conformance::idempotency_store(&stores).await;
    db.close().await;
}

#[tokio::test]
async fn postgres_idempotency_store() {
    let Some(db) = fresh_postgres().await else {
        return;
    };
    let stores =
        IdempotencyStores { pets: &db.pets(), orders: &db.orders(), records: &db.idempotency() };
    conformance::idempotency_store(&stores).await;
    db.close().await;
}

#[tokio::test]
async fn memory_api_key_store() {
    conformance::api_key_store(&MemoryApiKeyStore::new()).await;
}

#[tokio::test]
async fn sqlite_api_key_store() {
    let file = SqliteFile::new();
    let db = file.open().await;
    conformance::api_key_store(&db.keys()).await;
    db.close().await;
}

#[tokio::test]
async fn postgres_api_key_store() {
    let Some(db) = fresh_postgres().await else {
        return;
    };
    conformance::api_key_store(&db.keys()).await;
    db.close().await;
}

#[tokio::test]
async fn cached_memory_api_key_store() {
    let store = CachedApiKeyStore::new(
        std::sync::Arc::new(MemoryApiKeyStore::new()),
        std::sync::Arc::new(SystemClock),
    );
    conformance::api_key_store(&store).await;
}

#[tokio::test]
async fn cached_sqlite_api_key_store() {
    let file = SqliteFile::new();
    let db = file.open().await;
    let store =
        CachedApiKeyStore::new(std::sync::Arc::new(db.keys()), std::sync::Arc::new(SystemClock));
    conformance::api_key_store(&store).await;
    db.close().await;
}

/// Every third call of the wrapped stores fails, until the suite heals them.
fn every_third_call_fails() -> Arc<Injector> {
    Injector::new(Faults { fail_every: Some(3), ..Faults::default() })
}

async fn failed_writes_store_nothing(
    pets: Arc<dyn PetRepository>,
    keys: Arc<dyn ApiKeyStore>,
    witness_pets: &dyn PetRepository,
    witness_keys: &dyn ApiKeyStore,
    witness_events: &dyn EventLog,
) {
    let injector = every_third_call_fails();
    let faulty_pets = FaultyPetRepository::new(pets, injector.clone());
    let faulty_keys = FaultyApiKeyStore::new(keys, injector.clone());
    let stores = Stores {
        pets: &faulty_pets,
        keys: &faulty_keys,
        witness_pets,
        witness_keys,
        witness_events,
    };
    let heal = move || injector.set(Faults::default());
    conformance::faults::failed_writes_store_nothing(&faulty_pets, &faulty_keys, &stores, &heal)
        .await;
}

#[tokio::test]
async fn memory_stores_that_fail_store_nothing() {
    let (pets, keys) = (Arc::new(MemoryPetRepository::new()), Arc::new(MemoryApiKeyStore::new()));
    let witness_events: &dyn EventLog = pets.as_ref();
    failed_writes_store_nothing(
        pets.clone(),
        keys.clone(),
        pets.as_ref(),
        keys.as_ref(),
        witness_events,
    )
    .await;
}

#[tokio::test]
async fn sqlite_stores_that_fail_store_nothing() {
    let file = SqliteFile::new();
    let (db, witness) = (file.open().await, file.open_witness().await);
    let (pets, keys) = (Arc::new(db.pets()), Arc::new(db.keys()));
    failed_writes_store_nothing(pets, keys, &witness.pets(), &witness.keys(), &witness.events())
        .await;
    db.close().await;
    witness.close().await;
}

#[tokio::test]
async fn postgres_stores_that_fail_store_nothing() {
    let Some(db) = fresh_postgres().await else {
        return;
    };
    let (pets, keys) = (Arc::new(db.pets()), Arc::new(db.keys()));
    failed_writes_store_nothing(pets, keys, &db.pets(), &db.keys(), &db.events()).await;
    db.close().await;
}

#[tokio::test]
async fn memory_events() {
    let pets = Arc::new(MemoryPetRepository::new());
    let orders = Arc::new(MemoryOrderRepository::new(Arc::clone(&pets)));
    let idempotency = MemoryIdempotencyStore::new(Arc::clone(&pets), Arc::clone(&orders));
    conformance::events(&EventStores {
        pets: &*pets,
        changes: &*pets,
        orders: &*orders,
        idempotency: &idempotency,
        events: &*pets,
    })
    .await;
}

#[tokio::test]
async fn sqlite_events() {
    let file = SqliteFile::new();
    let db = file.open().await;
    let (pets, orders, idempotency, events) =
        (db.pets(), db.orders(), db.idempotency(), db.events());
    conformance::events(&EventStores {
        pets: &pets,
        changes: &pets,
        orders: &orders,
        idempotency: &idempotency,
        events: &events,
    })
    .await;
    db.close().await;
}

#[tokio::test]
async fn postgres_events() {
    let Some(db) = fresh_postgres().await else {
        return;
    };
    let (pets, orders, idempotency, events) =
        (db.pets(), db.orders(), db.idempotency(), db.events());
    conformance::events(&EventStores {
        pets: &pets,
        changes: &pets,
        orders: &orders,
        idempotency: &idempotency,
        events: &events,
    })
    .await;
    db.close().await;
}

/// The stores of `db` on `clock`, and the one-clock case run on them.
async fn sql_events_on_one_clock(db: Database) {
    let clock = ManualClock::at_unix(0);
    let db = db.with_clock(Arc::new(clock.clone()));
    let (pets, orders, idempotency, events) =
        (db.pets(), db.orders(), db.idempotency(), db.events());
    let stores = EventStores {
        pets: &pets,
        changes: &pets,
        orders: &orders,
        idempotency: &idempotency,
        events: &events,
    };
    conformance::events_on_one_clock(&stores, &clock).await;
    db.close().await;
}

#[tokio::test]
async fn memory_events_on_one_clock() {
    let clock = ManualClock::at_unix(0);
    let pets = Arc::new(MemoryPetRepository::with_clock(Arc::new(clock.clone())));
    let orders = Arc::new(MemoryOrderRepository::new(Arc::clone(&pets)));
    let idempotency = MemoryIdempotencyStore::new(Arc::clone(&pets), Arc::clone(&orders));
    let stores = EventStores {
        pets: &*pets,
        changes: &*pets,
        orders: &*orders,
        idempotency: &idempotency,
        events: &*pets,
    };
    conformance::events_on_one_clock(&stores, &clock).await;
}

#[tokio::test]
async fn sqlite_events_on_one_clock() {
    let file = SqliteFile::new();
    sql_events_on_one_clock(file.open().await).await;
}

#[tokio::test]
async fn postgres_events_on_one_clock() {
    let Some(db) = fresh_postgres().await else {
        return;
    };
    sql_events_on_one_clock(db).await;
}

#[tokio::test]
async fn memory_webhooks() {
    let pets = Arc::new(MemoryPetRepository::new());
    let orders = MemoryOrderRepository::new(Arc::clone(&pets));
    conformance::webhooks(&WebhookStores {
        pets: &*pets,
        orders: &orders,
        events: &*pets,
        endpoints: &*pets,
        deliveries: &*pets,
    })
    .await;
}

#[tokio::test]
async fn sqlite_webhooks() {
    let file = SqliteFile::new();
    let db = file.open().await;
    let (pets, orders, events, hooks) = (db.pets(), db.orders(), db.events(), db.webhooks());
    conformance::webhooks(&WebhookStores {
        pets: &pets,
        orders: &orders,
        events: &events,
        endpoints: &hooks,
        deliveries: &hooks,
    })
    .await;
    db.close().await;
}

#[tokio::test]
async fn postgres_webhooks() {
    let Some(db) = fresh_postgres().await else {
        return;
    };
    let (pets, orders, events, hooks) = (db.pets(), db.orders(), db.events(), db.webhooks());
    conformance::webhooks(&WebhookStores {
        pets: &pets,
        orders: &orders,
        events: &events,
        endpoints: &hooks,
        deliveries: &hooks,
    })
    .await;
    db.close().await;
}

#[tokio::test]
async fn memory_delivery_ends() {
    let keys = Arc::new(MemoryApiKeyStore::new());
    let pets = Arc::new(MemoryPetRepository::new().with_keys(Arc::clone(&keys)));
    let orders = MemoryOrderRepository::new(Arc::clone(&pets));
    let stores = WebhookStores {
        pets: &*pets,
        orders: &orders,
        events: &*pets,
        endpoints: &*pets,
        deliveries: &*pets,
    };
    conformance::delivery_ends(&stores, &*keys).await;
}

/// The delivery ends of `db`'s stores, its keys owning the endpoints.
async fn sql_delivery_ends(db: &Database) {
    let (pets, orders, events, hooks) = (db.pets(), db.orders(), db.events(), db.webhooks());
    let stores = WebhookStores {
        pets: &pets,
        orders: &orders,
        events: &events,
        endpoints: &hooks,
        deliveries: &hooks,
    };
    conformance::delivery_ends(&stores, &db.keys()).await;
}

#[tokio::test]
async fn sqlite_delivery_ends() {
    let file = SqliteFile::new();
    let db = file.open().await;
    sql_delivery_ends(&db).await;
    db.close().await;
}

#[tokio::test]
async fn postgres_delivery_ends() {
    let Some(db) = fresh_postgres().await else {
        return;
    };
    sql_delivery_ends(&db).await;
    db.close().await;
}
