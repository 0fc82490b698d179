//! Runs each port's conformance suite against every adapter of that port.

use animal_store_infra::testing::databases::{SqliteFile, fresh_postgres};
use animal_store_infra::{CachedApiKeyStore, SystemClock, MemoryApiKeyStore, MemoryPetRepository, conformance};

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
    let store = CachedApiKeyStore::new(std::sync::Arc::new(MemoryApiKeyStore::new()), std::sync::Arc::new(SystemClock));
    conformance::api_key_store(&store).await;
}

#[tokio::test]
async fn cached_sqlite_api_key_store() {
    let file = SqliteFile::new();
    let db = file.open().await;
    let store = CachedApiKeyStore::new(std::sync::Arc::new(db.keys()), std::sync::Arc::new(SystemClock));
    conformance::api_key_store(&store).await;
    db.close().await;
}
