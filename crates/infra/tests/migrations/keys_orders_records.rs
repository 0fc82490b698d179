//! The upgrade tests of the migrations that added keys, orders and idempotency records.

use animal_store_domain::{
    ApiKey, ApiKeySecret, ApiKeyStore, Environment, Fingerprint, IdempotencyKey, IdempotencyStore,
    IdempotentWrite, KeyId, KeyUse, NewOrder, OrderRepository, PetRepository, PetStatus, Plan,
    Rotation, StoredResponse,
};
use animal_store_infra::testing::databases::{SqliteFile, fresh_postgres_url, upgraded};

use crate::digest_literal;

/// `m0002_create_api_keys` on a database that holds pets: the pets stay, keys can be stored.
async fn api_keys_join_a_database_with_pets(url: &str) {
    let seed = ["INSERT INTO pets (name, category_id, status) VALUES ('Old Rex', 2, 'sold')"];
    let db = upgraded(url, 1, &seed).await;
    let pets = db.pets().list(None, None, 10).await.expect("list");
    assert_eq!(pets.len(), 1);
    assert_eq!((pets[0].name.as_str(), pets[0].category_id.get()), ("Old Rex", 2));
    let (id, secret) = ApiKeySecret::generate(Environment::Production);
    let key = ApiKey {
        owner: id.clone(),
        id,
        expires_at: None,
        rotated_to: None,
        name: None,
        plan: Plan::Free,
        scope: animal_store_domain::Scope::Write,
        environment: Environment::Production,
        digest: secret.digest(),
        created_at: std::time::SystemTime::UNIX_EPOCH,
        last_used_at: None,
        revoked_at: None,
    };
    db.keys().create(&key).await.expect("a key is stored after the upgrade");
    db.close().await;
}

#[tokio::test]
async fn api_keys_join_a_database_with_pets_on_sqlite() {
    api_keys_join_a_database_with_pets(&SqliteFile::new().url).await;
}

#[tokio::test]
async fn api_keys_join_a_database_with_pets_on_postgres() {
    if let Some(url) = fresh_postgres_url().await {
        api_keys_join_a_database_with_pets(&url).await;
    }
}

/// `m20261123_000003_key_lifecycle` on a database with keys: they keep working, without
/// expiry, each its own line, and can then be rotated.
async fn keys_gain_a_lifecycle(url: &str) {
    // A 32-byte digest, written as each database writes bytes.
    let digest = digest_literal(url, "01");
    let seed = format!(
        "INSERT INTO api_keys (id, digest, name, plan, per_minute, per_day, environment, created_at, last_used_at, revoked_at) \
         VALUES ('oldkey000001', {digest}, 'old', 'pro', NULL, NULL, 'production', 1700000000000, NULL, NULL)"
    );
    let db = upgraded(url, 2, &[seed.as_str()]).await;
    let keys = db.keys().list().await.expect("list");
    assert_eq!(keys.len(), 1);
    let old = &keys[0];
    assert_eq!(old.id.as_str(), "oldkey000001");
    assert_eq!((old.expires_at, old.rotated_to.as_ref()), (None, None), "no expiry, not rotated");
    assert_eq!(old.owner, old.id, "its own line");
    let (id, secret) = ApiKeySecret::generate(Environment::Production);
    let successor = ApiKey {
        owner: old.id.clone(),
        id,
        name: old.name.clone(),
        plan: old.plan,
        scope: animal_store_domain::Scope::Write,
        environment: old.environment,
        digest: secret.digest(),
        created_at: std::time::SystemTime::UNIX_EPOCH
            + std::time::Duration::from_secs(1_800_000_000),
        last_used_at: None,
        revoked_at: None,
        expires_at: None,
        rotated_to: None,
    };
    let now = successor.created_at;
    let rotated = db
        .keys()
        .rotate(&successor, &old.id, now, now + std::time::Duration::from_secs(60))
        .await
        .expect("rotate");
    assert!(matches!(rotated, Rotation::Rotated(_)), "an old key rotates: {rotated:?}");
    db.close().await;
}

#[tokio::test]
async fn keys_gain_a_lifecycle_on_sqlite() {
    keys_gain_a_lifecycle(&SqliteFile::new().url).await;
}

#[tokio::test]
async fn keys_gain_a_lifecycle_on_postgres() {
    if let Some(url) = fresh_postgres_url().await {
        keys_gain_a_lifecycle(&url).await;
    }
}

/// `m20261123_000004_create_orders` on a database with pets and keys: they stay, and its
/// pets can be ordered.
async fn orders_join_a_database_with_pets(url: &str) {
    let seed = ["INSERT INTO pets (name, category_id, status) VALUES ('Old Rex', 2, 'available')"];
    let db = upgraded(url, 3, &seed).await;
    let pets = db.pets().list(None, None, 10).await.expect("list");
    assert_eq!(pets.len(), 1, "the pets stay");
    let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).expect("an instant");
    let owner = KeyId::new("oldkey000001").expect("a key id");
    let order = NewOrder { pet_id: pets[0].id, owner, at };
    let placed = db.orders().place(order).await.expect("an old pet can be ordered");
    assert_eq!(placed.created_at, at);
    let pet = db.pets().get(pets[0].id).await.expect("get").expect("the pet");
    assert_eq!(pet.status, PetStatus::Pending);
    db.close().await;
}

#[tokio::test]
async fn orders_join_a_database_with_pets_on_sqlite() {
    orders_join_a_database_with_pets(&SqliteFile::new().url).await;
}

#[tokio::test]
async fn orders_join_a_database_with_pets_on_postgres() {
    if let Some(url) = fresh_postgres_url().await {
        orders_join_a_database_with_pets(&url).await;
    }
}

/// `m20261123_000005_create_idempotency_keys` on a database with pets and orders: they stay,
/// and a keyed write is recorded.
async fn idempotency_keys_join_a_database_with_orders(url: &str) {
    let seed = ["INSERT INTO pets (name, category_id, status) VALUES ('Old Rex', 2, 'available')"];
    let db = upgraded(url, 4, &seed).await;
    assert_eq!(db.pets().list(None, None, 10).await.expect("list").len(), 1, "the pets stay");
    let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).expect("an instant");
    let owner = KeyId::new("oldkey000001").expect("a key id");
    let write = IdempotentWrite {
        owner: owner.clone(),
        idempotency_key: IdempotencyKey::new("retry-1").expect("a key"),
        fingerprint: Fingerprint::of("POST", "/v1/pets", b"{}"),
        at,
    };
    let pet = animal_store_domain::NewPet {
        name: animal_store_domain::PetName::new("New").expect("a name"),
        category_id: animal_store_domain::CategoryId::new(1).expect("a category"),
        status: PetStatus::Available,
    };
    // As the API's: the response names the pet it created.
    let render = || {
        Box::new(|pet: &animal_store_domain::Pet| StoredResponse {
            status: 201,
            body: format!("{{\"id\":{}}}", pet.id.get()),
            location: None,
        })
    };
    let done = db.idempotency().create_pet(write.clone(), pet.clone(), render()).await;
    assert!(matches!(done.expect("a keyed write"), KeyUse::First(_)));
    let retried = db.idempotency().create_pet(write, pet, render()).await;
    assert!(matches!(retried.expect("a retry"), KeyUse::Again(_)), "the write is recorded");
    db.close().await;
}

#[tokio::test]
async fn idempotency_keys_join_a_database_with_orders_on_sqlite() {
    idempotency_keys_join_a_database_with_orders(&SqliteFile::new().url).await;
}

#[tokio::test]
async fn idempotency_keys_join_a_database_with_orders_on_postgres() {
    if let Some(url) = fresh_postgres_url().await {
        idempotency_keys_join_a_database_with_orders(&url).await;
    }
}

/// `m20261123_000006_drop_idempotency_created_at_index` on a database with idempotency
/// records: they stay, still answer, and the sweep still removes the expired ones.
async fn the_sweep_needs_no_index_on_created_at(url: &str) {
    let digest = digest_literal(url, "00");
    let records = format!(
        "INSERT INTO idempotency_keys (owner, key, fingerprint, status, body, location, created_at) \
         VALUES ('oldkey000001', 'kept', {digest}, 201, '{{}}', NULL, '2027-01-15 08:00:00+00:00'), \
                ('oldkey000001', 'swept', {digest}, 201, '{{}}', NULL, '2027-01-10 08:00:00+00:00')"
    );
    let seed = [
        "INSERT INTO pets (name, category_id, status) VALUES ('Old Rex', 2, 'available')",
        records.as_str(),
    ];
    let db = upgraded(url, 5, &seed).await;
    let owner = KeyId::new("oldkey000001").expect("a key id");
    let at = |s: &str| chrono::DateTime::parse_from_rfc3339(s).expect("an instant").to_utc();
    let now = at("2027-01-15T09:00:00Z");
    let swept = db.idempotency().sweep(at("2027-01-12T00:00:00Z"), 10).await.expect("sweep");
    assert_eq!(swept, 1, "the expired record goes");
    let retry = {
        let write = IdempotentWrite {
            owner: owner.clone(),
            idempotency_key: IdempotencyKey::new("kept").expect("a key"),
            fingerprint: Fingerprint::from_bytes([0; 32]),
            at: now,
        };
        let pet = animal_store_domain::NewPet {
            name: animal_store_domain::PetName::new("Retried").expect("a name"),
            category_id: animal_store_domain::CategoryId::new(1).expect("a category"),
            status: PetStatus::Available,
        };
        let render = Box::new(|_: &animal_store_domain::Pet| StoredResponse {
            status: 201,
            body: "{}".into(),
            location: None,
        });
        db.idempotency().create_pet(write, pet, render).await
    };
    let kept = retry.expect("a retry");
    assert!(matches!(kept, KeyUse::Again(ref r) if r.response.body == "{}"), "{kept:?}");
    db.close().await;
}

#[tokio::test]
async fn the_sweep_needs_no_index_on_created_at_on_sqlite() {
    the_sweep_needs_no_index_on_created_at(&SqliteFile::new().url).await;
}

#[tokio::test]
async fn the_sweep_needs_no_index_on_created_at_on_postgres() {
    if let Some(url) = fresh_postgres_url().await {
        the_sweep_needs_no_index_on_created_at(&url).await;
    }
}
