//! The upgrade tests of the migrations that added keys, orders and idempotency records.

use animal_store_domain::{
    ApiKey, ApiKeySecret, ApiKeyStore, Environment, Fingerprint, IdempotencyKey, IdempotencyStore,
    IdempotentWrite, KeyId, KeyUse, NewOrder, OrderRepository, PetRepository, PetStatus, Plan,
    Rotation, StoredAnswer,
};
use animal_store_infra::testing::databases::{SqliteFile, fresh_postgres_url, upgraded};

use sea_orm::ConnectionTrait as _;

use crate::{answers, digest_literal};

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
    let done = db.idempotency().create_pet(write.clone(), pet.clone(), answers()).await;
    assert!(matches!(done.expect("a keyed write"), KeyUse::First(_)));
    let retried = db.idempotency().create_pet(write, pet, answers()).await;
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
        db.idempotency().create_pet(write, pet, answers()).await
    };
    let kept = retry.expect("a retry");
    let answer = StoredAnswer::new(b"201 \n{}".to_vec());
    assert!(matches!(kept, KeyUse::Again(ref r) if r.answer == answer), "{kept:?}");
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

/// `m20261202_000013_stored_answers` on a database whose records the binary before stored
/// in `status`, `body` and `location`: they answer a retry as they did, and a record stored
/// after the upgrade fills those columns in too, for that binary while it still runs.
async fn stored_answers_beside_the_previous_columns(url: &str) {
    let digest = digest_literal(url, "00");
    let records = format!(
        "INSERT INTO idempotency_keys (owner, key, fingerprint, status, body, location, created_at) \
         VALUES ('oldkey000001', 'before', {digest}, 201, '{{\"id\":1}}', '/v1/pets/1', \
         '2027-01-15 08:00:00+00:00')"
    );
    let seed = [
        "INSERT INTO pets (name, category_id, status) VALUES ('Old Rex', 2, 'available')",
        records.as_str(),
    ];
    let db = upgraded(url, 12, &seed).await;
    let now = chrono::DateTime::parse_from_rfc3339("2027-01-15T09:00:00Z").expect("an instant");
    let write = |key: &str| IdempotentWrite {
        owner: KeyId::new("oldkey000001").expect("a key id"),
        idempotency_key: IdempotencyKey::new(key).expect("a key"),
        fingerprint: Fingerprint::from_bytes([0; 32]),
        at: now.to_utc(),
    };
    let pet = || animal_store_domain::NewPet {
        name: animal_store_domain::PetName::new("New").expect("a name"),
        category_id: animal_store_domain::CategoryId::new(1).expect("a category"),
        status: PetStatus::Available,
    };
    let retried = db.idempotency().create_pet(write("before"), pet(), answers()).await;
    let before = StoredAnswer::new(b"201 /v1/pets/1\n{\"id\":1}".to_vec());
    let retried = retried.expect("a retry");
    assert!(matches!(retried, KeyUse::Again(ref r) if r.answer == before), "{retried:?}");

    let done = db.idempotency().create_pet(write("after"), pet(), answers()).await;
    let Ok(KeyUse::First((added, _))) = done else { panic!("a keyed write: {done:?}") };
    let sql = sea_orm::Database::connect(url).await.expect("a connection");
    let row = sql
        .query_one_raw(sea_orm::Statement::from_string(
            sql.get_database_backend(),
            "SELECT status, body, location FROM idempotency_keys WHERE key = 'after'",
        ))
        .await
        .expect("read the record")
        .expect("a record");
    let columns: (i32, String, Option<String>) = (
        row.try_get("", "status").expect("status"),
        row.try_get("", "body").expect("body"),
        row.try_get("", "location").expect("location"),
    );
    let id = added.id;
    assert_eq!(columns, (201, format!("{{\"id\":{id}}}"), Some(format!("/v1/pets/{id}"))));
    sql.close().await.expect("close");
    db.close().await;
}

#[tokio::test]
async fn stored_answers_beside_the_previous_columns_on_sqlite() {
    stored_answers_beside_the_previous_columns(&SqliteFile::new().url).await;
}

#[tokio::test]
async fn stored_answers_beside_the_previous_columns_on_postgres() {
    if let Some(url) = fresh_postgres_url().await {
        stored_answers_beside_the_previous_columns(&url).await;
    }
}
