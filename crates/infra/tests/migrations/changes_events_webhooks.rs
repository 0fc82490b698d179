//! The upgrade tests of the migrations that let pets change, gave keys a scope, and added
//! events and webhooks.

use animal_store_domain::{
    ApiKey, ApiKeySecret, ApiKeyStore, ChangePetError, Environment, EventLog, EventObject,
    EventType, Inventory, KeyId, NewOrder, OrderId, OrderRepository, OrderStatus, PetChanges,
    PetId, PetRepository, PetStatus, Plan, Scope,
};
use animal_store_infra::testing::databases::{SqliteFile, fresh_postgres_url, upgraded};

use crate::digest_literal;

/// `m20261126_000007_pet_changes` on a database with pets and orders, open and closed: the
/// inventory counts the pets there were, the orders stay (on SQLite, through the rebuild of
/// their table) and a pet whose orders are closed can be removed, while one an open order
/// holds cannot.
async fn pets_can_change_on_a_database_with_orders(url: &str) {
    let at = "'2027-01-15 08:00:00+00:00'";
    let orders = format!(
        "INSERT INTO orders (pet_id, owner, status, created_at, updated_at) \
         VALUES (3, 'oldkey000001', 'placed', {at}, {at}), (4, 'oldkey000001', 'delivered', {at}, {at})"
    );
    let seed = [
        "INSERT INTO pets (name, category_id, status) VALUES ('A', 1, 'available'), \
         ('B', 1, 'available'), ('Held', 1, 'pending'), ('Sold', 1, 'sold')",
        orders.as_str(),
    ];
    let db = upgraded(url, 6, &seed).await;
    let counts = |available, pending, sold| {
        Inventory::of([
            (PetStatus::Available, available),
            (PetStatus::Pending, pending),
            (PetStatus::Sold, sold),
        ])
    };
    let pets = db.pets();
    assert_eq!(pets.inventory().await.expect("inventory"), counts(2, 1, 1), "the pets there were");
    let owner = KeyId::new("oldkey000001").expect("a key id");
    let delivered = db.orders().get(&owner, OrderId::new(2)).await.expect("get");
    assert_eq!(delivered.map(|order| order.status), Some(OrderStatus::Delivered));
    let removed = pets.remove(PetId::new(4), None).await.expect("a pet whose orders are closed");
    assert_eq!(removed.name.as_str(), "Sold");
    let kept = db.orders().get(&owner, OrderId::new(2)).await.expect("get");
    assert!(kept.is_some(), "the order of a removed pet stays");
    assert!(matches!(
        pets.remove(PetId::new(3), None).await,
        Err(ChangePetError::Held { order, .. }) if order == OrderId::new(1)
    ));
    let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).expect("an instant");
    let order = NewOrder { pet_id: PetId::new(1), owner, at };
    let placed = db.orders().place(order).await.expect("an order after the upgrade");
    assert_eq!(placed.id, OrderId::new(3), "order ids go on from the last");
    assert_eq!(pets.inventory().await.expect("inventory"), counts(1, 2, 0));
    db.close().await;
}

#[tokio::test]
async fn pets_can_change_on_a_database_with_orders_on_sqlite() {
    pets_can_change_on_a_database_with_orders(&SqliteFile::new().url).await;
}

#[tokio::test]
async fn pets_can_change_on_a_database_with_orders_on_postgres() {
    if let Some(url) = fresh_postgres_url().await {
        pets_can_change_on_a_database_with_orders(&url).await;
    }
}

/// `m20261126_000008_key_scopes` on a database with keys: they keep every right (`write`),
/// and a `read` key can be stored and read back.
async fn keys_gain_a_scope(url: &str) {
    let digest = digest_literal(url, "02");
    let seed = format!(
        "INSERT INTO api_keys (id, digest, name, plan, per_minute, per_day, environment, created_at, last_used_at, revoked_at, expires_at, rotated_to, lineage) \
         VALUES ('oldkey000002', {digest}, 'old', 'pro', NULL, NULL, 'production', 1700000000000, NULL, NULL, NULL, NULL, NULL)"
    );
    let db = upgraded(url, 7, &[seed.as_str()]).await;
    let keys = db.keys().list().await.expect("list");
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0].scope, Scope::Write, "a key issued before scopes can do everything");
    let (id, secret) = ApiKeySecret::generate(Environment::Production);
    let reader = ApiKey {
        owner: id.clone(),
        id,
        expires_at: None,
        rotated_to: None,
        name: None,
        plan: Plan::Free,
        scope: Scope::Read,
        environment: Environment::Production,
        digest: secret.digest(),
        created_at: std::time::SystemTime::UNIX_EPOCH,
        last_used_at: None,
        revoked_at: None,
    };
    db.keys().create(&reader).await.expect("a read key is stored");
    let found = db.keys().find_by_digest(&reader.digest).await.expect("find");
    assert_eq!(found.map(|key| key.scope), Some(Scope::Read));
    db.close().await;
}

#[tokio::test]
async fn keys_gain_a_scope_on_sqlite() {
    keys_gain_a_scope(&SqliteFile::new().url).await;
}

#[tokio::test]
async fn keys_gain_a_scope_on_postgres() {
    if let Some(url) = fresh_postgres_url().await {
        keys_gain_a_scope(&url).await;
    }
}

/// `m20261126_000009_events` on a database with pets and orders: what was there makes no
/// event; the next changes do, from id 1 on, old pets and orders included.
async fn events_join_a_database_with_orders(url: &str) {
    let seed = [
        "INSERT INTO pets (name, category_id, status) VALUES ('Old Rex', 2, 'pending')",
        "INSERT INTO pets (name, category_id, status) VALUES ('Old Max', 3, 'available')",
        "INSERT INTO orders (pet_id, owner, status, created_at, updated_at) \
         VALUES (1, 'oldkey000001', 'placed', '2027-01-15T08:00:00+00:00', '2027-01-15T08:00:00+00:00')",
    ];
    let db = upgraded(url, 8, &seed).await;
    let owner = KeyId::new("oldkey000001").expect("a key id");
    let events = db.events();
    assert!(events.list(&owner, None, None, 10).await.expect("list").is_empty(), "no event yet");
    let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).expect("an instant");
    let delivered = db
        .orders()
        .update_status(&owner, OrderId::new(1), OrderStatus::Delivered, at)
        .await
        .expect_err("placed cannot go to delivered");
    drop(delivered);
    let cancelled = db
        .orders()
        .update_status(&owner, OrderId::new(1), OrderStatus::Cancelled, at)
        .await
        .expect("an old order moves");
    let patch = animal_store_domain::PetPatch {
        name: Some(animal_store_domain::PetName::new("Max, renamed").expect("a name")),
        ..animal_store_domain::PetPatch::default()
    };
    db.pets().update(PetId::new(2), patch, None).await.expect("an old pet changes");
    let listed = events.list(&owner, None, None, 10).await.expect("list");
    let kinds: Vec<(i64, EventType)> = listed.iter().map(|e| (e.id.get(), e.kind)).collect();
    assert_eq!(
        kinds,
        [(1, EventType::OrderUpdated), (2, EventType::PetUpdated), (3, EventType::PetUpdated)],
        "the first events after the upgrade"
    );
    assert_eq!(listed[0].object, EventObject::Order(cancelled));
    db.close().await;
}

#[tokio::test]
async fn events_join_a_database_with_orders_on_sqlite() {
    events_join_a_database_with_orders(&SqliteFile::new().url).await;
}

#[tokio::test]
async fn events_join_a_database_with_orders_on_postgres() {
    if let Some(url) = fresh_postgres_url().await {
        events_join_a_database_with_orders(&url).await;
    }
}

/// `m20261126_000010_webhooks` on a database with events: endpoints can be registered, and
/// the events made afterwards, not those before, are queued for them.
async fn webhooks_join_a_database_with_events(url: &str) {
    let seed = ["INSERT INTO pets (name, category_id, status) VALUES ('Old Rex', 2, 'available')"];
    let db = upgraded(url, 9, &seed).await;
    let before = animal_store_domain::NewPet {
        name: animal_store_domain::PetName::new("Before").expect("a name"),
        category_id: animal_store_domain::CategoryId::new(1).expect("a category"),
        status: PetStatus::Available,
    };
    db.pets().create(before.clone()).await.expect("a pet before the endpoint");
    let owner = KeyId::new("oldkey000001").expect("a key id");
    let endpoint = animal_store_domain::NewEndpoint {
        owner,
        url: animal_store_domain::WebhookUrl::parse("https://hooks.example.com/", false)
            .expect("an address"),
        events: animal_store_domain::EventSelection::EVERY,
        secret: animal_store_domain::WebhookSecret::generate(),
        at: chrono::Utc::now(),
    };
    let hooks = db.webhooks();
    animal_store_domain::WebhookEndpoints::create(&hooks, endpoint).await.expect("register");
    let after = animal_store_domain::NewPet {
        name: animal_store_domain::PetName::new("After").expect("a name"),
        ..before
    };
    let added = db.pets().create(after).await.expect("a pet after the endpoint");
    animal_store_domain::WebhookDeliveries::fan_out(&hooks, 10).await.expect("fan out");
    let later = chrono::DateTime::from_timestamp(4_000_000_000, 0).expect("an instant");
    let due = animal_store_domain::WebhookDeliveries::claim(
        &hooks,
        later,
        later + chrono::Duration::seconds(60),
        &animal_store_domain::ClaimLimits {
            count: 10,
            per_endpoint: 10,
            per_owner: 10,
            ..Default::default()
        },
    )
    .await
    .expect("claim");
    let objects: Vec<EventObject> = due.into_iter().map(|d| d.event.object).collect();
    assert_eq!(objects, [EventObject::Pet(added)], "only what came after the endpoint");
    db.close().await;
}

#[tokio::test]
async fn webhooks_join_a_database_with_events_on_sqlite() {
    webhooks_join_a_database_with_events(&SqliteFile::new().url).await;
}

#[tokio::test]
async fn webhooks_join_a_database_with_events_on_postgres() {
    if let Some(url) = fresh_postgres_url().await {
        webhooks_join_a_database_with_events(&url).await;
    }
}

/// `m20261128_000011_webhook_hardening` on a database with an endpoint and pets: the
/// endpoint reads back as it was, and `listEvents` by type gives each key every pet's events
/// and its own orders', in id order, from the new index.
async fn events_by_type_on_a_database_with_webhooks(url: &str) {
    let seed = [
        "INSERT INTO pets (name, category_id, status) VALUES ('Old Rex', 2, 'available')",
        "INSERT INTO pets (name, category_id, status) VALUES ('Old Max', 3, 'available')",
        "INSERT INTO webhook_endpoints (owner, url, events, status, secret, created_at) \
         VALUES ('oldkey000001', 'https://hooks.example.com/', '*', 'enabled', \
         'whsec_MfKQ9r3Dvpn1c8bT2yJ0sL7aWx4eUh6Z', '2027-01-15T08:00:00+00:00')",
    ];
    let db = upgraded(url, 10, &seed).await;
    let (alice, bob) =
        (KeyId::new("oldkey000001").expect("an id"), KeyId::new("bob000000001").expect("an id"));
    let hooks = db.webhooks();
    let listed = animal_store_domain::WebhookEndpoints::list(&hooks, &alice).await.expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].status, animal_store_domain::EndpointStatus::Enabled);
    let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).expect("an instant");
    for (owner, pet) in [(&alice, 1), (&bob, 2)] {
        let order = NewOrder { owner: owner.clone(), pet_id: PetId::new(pet), at };
        db.orders().place(order).await.expect("an order");
    }
    for (reader, kind, ids) in [
        (&alice, EventType::OrderPlaced, vec![1]),
        (&bob, EventType::OrderPlaced, vec![3]),
        (&alice, EventType::PetUpdated, vec![2, 4]),
    ] {
        let events = db.events();
        let listed = events.list(reader, Some(kind), None, 10).await.expect("list");
        let got: Vec<i64> = listed.iter().map(|e| e.id.get()).collect();
        assert_eq!(got, ids, "{reader:?} {kind:?}");
        let after =
            events.list(reader, Some(kind), Some(animal_store_domain::EventId::new(ids[0])), 10);
        assert_eq!(after.await.expect("list").len(), ids.len() - 1);
    }
    db.close().await;
}

#[tokio::test]
async fn events_by_type_on_a_database_with_webhooks_on_sqlite() {
    events_by_type_on_a_database_with_webhooks(&SqliteFile::new().url).await;
}

#[tokio::test]
async fn events_by_type_on_a_database_with_webhooks_on_postgres() {
    if let Some(url) = fresh_postgres_url().await {
        events_by_type_on_a_database_with_webhooks(&url).await;
    }
}

/// `m20261202_000012_fan_out` on a database whose events the binary before queued in their
/// writes' transactions: none of them is queued again, an event written after the upgrade
/// is queued once for the endpoint registered before it, and an endpoint registered after
/// the upgrade gets only the events after it.
async fn deliveries_fan_out_after_the_upgrade(url: &str) {
    let object = r#"{"kind":"pet","id":1,"name":"Old Rex","category_id":1,"status":"available"}"#;
    let events = format!(
        "INSERT INTO events (id, event_type, owner, created_at, object) VALUES \
         (1, 'pet.created', NULL, '2027-01-15 08:00:00+00:00', '{object}'), \
         (2, 'pet.updated', NULL, '2027-01-15 08:00:01+00:00', '{object}')"
    );
    let counter =
        if url.starts_with("sqlite") { "SELECT 1" } else { "UPDATE event_counter SET last_id = 2" };
    let seed = [
        "INSERT INTO pets (name, category_id, status) VALUES ('Old Rex', 1, 'available')",
        events.as_str(),
        counter,
        "INSERT INTO webhook_endpoints (owner, url, events, status, secret, created_at) \
         VALUES ('oldkey000001', 'https://hooks.example.com/', '*', 'enabled', \
         'whsec_MfKQ9r3Dvpn1c8bT2yJ0sL7aWx4eUh6Z', '2027-01-15 08:00:00+00:00')",
        "INSERT INTO webhook_deliveries \
         (endpoint_id, event_id, attempts, next_attempt_at, leased_until, created_at) \
         VALUES (1, 2, 0, '2027-01-15 08:00:01+00:00', NULL, '2027-01-15 08:00:01+00:00')",
    ];
    let db = upgraded(url, 11, &seed).await;
    let hooks = db.webhooks();
    let fan_out = |batch| animal_store_domain::WebhookDeliveries::fan_out(&hooks, batch);
    assert_eq!(fan_out(10).await.expect("fan out"), 0, "the old events were queued");
    let pet = |name: &str| animal_store_domain::NewPet {
        name: animal_store_domain::PetName::new(name).expect("a name"),
        category_id: animal_store_domain::CategoryId::new(1).expect("a category"),
        status: PetStatus::Available,
    };
    db.pets().create(pet("New")).await.expect("a pet after the upgrade");
    let newcomer = animal_store_domain::NewEndpoint {
        owner: KeyId::new("newkey000001").expect("an id"),
        url: animal_store_domain::WebhookUrl::parse("https://hooks.example.com/n", false)
            .expect("an address"),
        events: animal_store_domain::EventSelection::EVERY,
        secret: animal_store_domain::WebhookSecret::generate(),
        at: chrono::Utc::now(),
    };
    let newcomer = animal_store_domain::WebhookEndpoints::create(&hooks, newcomer).await;
    let newcomer = newcomer.expect("register").id;
    db.pets().create(pet("Newer")).await.expect("a pet after the new endpoint");
    assert_eq!(fan_out(10).await.expect("fan out"), 2);
    assert_eq!(fan_out(10).await.expect("fan out"), 0, "each event once");
    let later = chrono::DateTime::from_timestamp(4_000_000_000, 0).expect("an instant");
    let limits = animal_store_domain::ClaimLimits {
        count: 10,
        per_endpoint: 10,
        per_owner: 10,
        ..Default::default()
    };
    let due = animal_store_domain::WebhookDeliveries::claim(
        &hooks,
        later,
        later + chrono::Duration::seconds(60),
        &limits,
    )
    .await
    .expect("claim");
    let mut got: Vec<(i64, i64)> =
        due.iter().map(|d| (d.endpoint.id.get(), d.event.id.get())).collect();
    got.sort_unstable();
    assert_eq!(got, [(1, 2), (1, 3), (1, 4), (newcomer.get(), 4)]);
    db.close().await;
}

#[tokio::test]
async fn deliveries_fan_out_after_the_upgrade_on_sqlite() {
    deliveries_fan_out_after_the_upgrade(&SqliteFile::new().url).await;
}

#[tokio::test]
async fn deliveries_fan_out_after_the_upgrade_on_postgres() {
    if let Some(url) = fresh_postgres_url().await {
        deliveries_fan_out_after_the_upgrade(&url).await;
    }
}
