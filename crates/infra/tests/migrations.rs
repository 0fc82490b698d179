//! Upgrade tests: each migration after the first, run on a database that an older version
//! of the service filled, on SQLite and PostgreSQL.

use animal_store_domain::{ApiKey, ApiKeyStore};
use animal_store_domain::{ApiKeySecret, Environment, PetRepository, Plan};
use animal_store_infra::Database;
use animal_store_infra::testing::databases::{SqliteFile, fresh_postgres_url, upgraded};

/// The migrations this file tests, in order. A new migration fails this check until it has
/// an upgrade test below and its name here.
#[test]
fn every_migration_after_the_first_has_an_upgrade_test() {
    assert_eq!(Database::migration_names(), ["m0001_create_pets", "m0002_create_api_keys"]);
}

/// `m0002_create_api_keys` on a database that holds pets: the pets stay, keys can be stored.
async fn api_keys_join_a_database_with_pets(url: &str) {
    let seed = ["INSERT INTO pets (name, category_id, status) VALUES ('Old Rex', 2, 'sold')"];
    let db = upgraded(url, 1, &seed).await;
    let pets = db.pets().list(None, None, 10).await.expect("list");
    assert_eq!(pets.len(), 1);
    assert_eq!((pets[0].name.as_str(), pets[0].category_id.get()), ("Old Rex", 2));
    let (id, secret) = ApiKeySecret::generate(Environment::Production);
    let key = ApiKey {
        id,
        name: None,
        plan: Plan::Free,
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
