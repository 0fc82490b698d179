//! Picks the adapters the database URL names.

use std::sync::Arc;

use crate::answer_faults::AnswerFaults;
use animal_store_domain::{
    ApiKeyStore, EventLog, HealthCheck, IdempotencyStore, OrderRepository, PetChanges,
    PetRepository, WebhookDeliveries, WebhookEndpoints,
};
use animal_store_infra::faults::{
    FaultyEventLog, FaultyIdempotencyStore, FaultyOrderRepository, FaultyPetChanges,
    FaultyPetRepository, Injector,
};
use animal_store_infra::{
    Database, DatabaseOptions, MemoryApiKeyStore, MemoryIdempotencyStore, MemoryOrderRepository,
    MemoryPetRepository, PoolMetrics, SchemaStatus,
};
use anyhow::Context;

use crate::cli::Cli;
use crate::memory_options::{MemoryOptions, memory_options};
pub use crate::schema::Schema;
use crate::schema::prepare;
use crate::wiring::Ports;

/// The open stores.
pub enum Stores {
    /// `memory://`: nothing outlives the process.
    Memory {
        /// Pets.
        pets: Arc<MemoryPetRepository>,
        /// The faults the URL's options ask for, injected in front of the pets, the orders,
        /// the idempotency records and the events when serving: one count over all of them, so that
        /// `fail-every=2` fails every second request that reads or writes them.
        faults: Option<Arc<Injector>>,
        /// Orders, beside `pets`.
        orders: Arc<MemoryOrderRepository>,
        /// Idempotency records, beside both.
        idempotency: Arc<MemoryIdempotencyStore>,
        /// Keys.
        keys: Arc<MemoryApiKeyStore>,
        /// Every Nth check of a key fails (`key-store-unavailable-every`).
        key_checks_fail_every: Option<u64>,
        /// What becomes of the answers of stored writes (`drop-answer-every` and the like).
        answers: AnswerFaults,
    },
    /// An SQL database.
    Sql(Database),
}

impl Stores {
    /// Opens the database `--database-url` names and brings its schema to what `schema`
    /// says. On a database a newer version migrated (it has migrations this binary does not
    /// know), whatever `schema` says, it migrates nothing, and opens the database only when
    /// the window the newer version recorded admits this binary's schema level.
    pub async fn open(cli: &Cli, schema: Schema) -> anyhow::Result<Self> {
        Self::open_at(cli, schema, Arc::new(animal_store_infra::SystemClock)).await
    }

    /// [`Stores::open`], with stores whose events take their time from `clock` (the
    /// service's, which `--clock-file` may set on `memory://`).
    pub async fn open_at(
        cli: &Cli,
        schema: Schema,
        clock: Arc<dyn animal_store_domain::Clock>,
    ) -> anyhow::Result<Self> {
        if cli.database_url.is_memory() {
            let MemoryOptions { faults, key_checks_fail_every, answers } =
                memory_options(cli.database_url.expose())?;
            let faults = faults.map(Injector::new);
            let keys = Arc::new(MemoryApiKeyStore::new());
            // The webhook endpoints beside the pets end with their owners' keys.
            let pets = Arc::new(MemoryPetRepository::with_clock(clock).with_keys(keys.clone()));
            let orders = Arc::new(MemoryOrderRepository::new(pets.clone()));
            let idempotency = Arc::new(MemoryIdempotencyStore::new(pets.clone(), orders.clone()));
            return Ok(Self::Memory {
                pets,
                faults,
                orders,
                idempotency,
                keys,
                key_checks_fail_every,
                answers,
            });
        }
        let options = DatabaseOptions {
            sqlite_max_pages: cli.sqlite_max_pages,
            read_cache_mib: cli.read_cache_mib,
        };
        let db = Database::connect_with(cli.database_url.expose(), options)
            .await
            .with_context(|| format!("cannot open the database {}", cli.database_url))?
            .with_clock(clock);
        if let Err(err) = prepare(&db, schema).await {
            db.close().await;
            return Err(err);
        }
        Ok(Self::Sql(db))
    }

    /// Which migrations the SQL database has; `None` on `memory://`.
    pub async fn schema_status(&self) -> anyhow::Result<Option<SchemaStatus>> {
        match self {
            Self::Sql(db) => Ok(Some(db.schema_status().await?)),
            Self::Memory { .. } => Ok(None),
        }
    }

    /// What becomes of the answers of stored writes, on `memory://?drop-answer-every=N` and
    /// the like.
    pub fn answer_faults(&self) -> AnswerFaults {
        match self {
            Self::Memory { answers, .. } => *answers,
            Self::Sql(_) => AnswerFaults::default(),
        }
    }

    /// Every how many checks of a key one fails, on `memory://?key-store-unavailable-every=N`.
    pub fn key_checks_fail_every(&self) -> Option<u64> {
        match self {
            Self::Memory { key_checks_fail_every, .. } => *key_checks_fail_every,
            Self::Sql(_) => None,
        }
    }

    /// Whether nothing is kept across restarts.
    pub fn is_memory(&self) -> bool {
        matches!(self, Self::Memory { .. })
    }

    /// The pet repository the service runs on: on `memory://`, failing or lagging as the
    /// URL's options say.
    pub fn pets(&self) -> Arc<dyn PetRepository> {
        match self {
            Self::Memory { pets, faults: Some(injector), .. } => {
                Arc::new(FaultyPetRepository::new(pets.clone(), injector.clone()))
            }
            Self::Memory { pets, faults: None, .. } => pets.clone(),
            Self::Sql(db) => Arc::new(db.pets()),
        }
    }

    /// The changes of the pets; on `memory://`, failing or lagging as the URL's options say.
    pub fn changes(&self) -> Arc<dyn PetChanges> {
        match self {
            Self::Memory { pets, faults: Some(injector), .. } => {
                Arc::new(FaultyPetChanges::new(pets.clone(), injector.clone()))
            }
            Self::Memory { pets, faults: None, .. } => pets.clone(),
            Self::Sql(db) => Arc::new(db.pets()),
        }
    }

    /// The order repository, beside the pets; on `memory://`, failing or lagging as the URL's
    /// options say.
    pub fn orders(&self) -> Arc<dyn OrderRepository> {
        match self {
            Self::Memory { orders, faults: Some(injector), .. } => {
                Arc::new(FaultyOrderRepository::new(orders.clone(), injector.clone()))
            }
            Self::Memory { orders, faults: None, .. } => orders.clone(),
            Self::Sql(db) => Arc::new(db.orders()),
        }
    }

    /// The idempotency records, beside the pets and orders; on `memory://`, their keyed
    /// writes failing or lagging as the URL's options say.
    pub fn idempotency(&self) -> Arc<dyn IdempotencyStore> {
        match self {
            Self::Memory { idempotency, faults: Some(injector), .. } => {
                Arc::new(FaultyIdempotencyStore::new(idempotency.clone(), injector.clone()))
            }
            Self::Memory { idempotency, faults: None, .. } => idempotency.clone(),
            Self::Sql(db) => Arc::new(db.idempotency()),
        }
    }

    /// The events the other stores write with their changes; on `memory://`, failing or
    /// lagging as the URL's options say.
    pub fn events(&self) -> Arc<dyn EventLog> {
        match self {
            Self::Memory { pets, faults: Some(injector), .. } => {
                Arc::new(FaultyEventLog::new(pets.clone(), injector.clone()))
            }
            Self::Memory { pets, faults: None, .. } => pets.clone(),
            Self::Sql(db) => Arc::new(db.events()),
        }
    }

    /// The webhook endpoints, beside the events queued for them.
    pub fn webhooks(&self) -> Arc<dyn WebhookEndpoints> {
        match self {
            Self::Memory { pets, .. } => pets.clone(),
            Self::Sql(db) => Arc::new(db.webhooks()),
        }
    }

    /// The deliveries of the events to the webhook endpoints.
    pub fn deliveries(&self) -> Arc<dyn WebhookDeliveries> {
        match self {
            Self::Memory { pets, .. } => pets.clone(),
            Self::Sql(db) => Arc::new(db.webhooks()),
        }
    }

    /// Every store the service runs on.
    pub fn ports(&self) -> Ports {
        Ports {
            pets: self.pets(),
            changes: self.changes(),
            orders: self.orders(),
            idempotency: self.idempotency(),
            events: self.events(),
            webhooks: self.webhooks(),
            deliveries: self.deliveries(),
            keys: self.keys(),
        }
    }

    /// The pet repository the fixtures fill: never the fault-injecting one, so that the
    /// faults neither refuse fixtures nor count their writes.
    pub fn fixture_pets(&self) -> Arc<dyn PetRepository> {
        match self {
            Self::Memory { pets, .. } => pets.clone(),
            Self::Sql(db) => Arc::new(db.pets()),
        }
    }

    /// The order repository the fixtures fill: never the fault-injecting one.
    pub fn fixture_orders(&self) -> Arc<dyn OrderRepository> {
        match self {
            Self::Memory { orders, .. } => orders.clone(),
            Self::Sql(db) => Arc::new(db.orders()),
        }
    }

    /// What `/readyz` checks: the database, if there is one.
    pub fn health_checks(&self) -> Vec<Arc<dyn HealthCheck>> {
        match self {
            Self::Memory { .. } => Vec::new(),
            Self::Sql(db) => vec![Arc::new(db.health())],
        }
    }

    /// What reports the database's connection pool to the metrics, if there is one.
    pub fn pool_metrics(&self) -> Option<PoolMetrics> {
        match self {
            Self::Memory { .. } => None,
            Self::Sql(db) => Some(db.pool_metrics()),
        }
    }

    /// The key store.
    pub fn keys(&self) -> Arc<dyn ApiKeyStore> {
        match self {
            Self::Memory { keys, .. } => keys.clone(),
            Self::Sql(db) => Arc::new(db.keys()),
        }
    }

    /// Finishes queued writes and closes the database.
    pub async fn close(self) {
        if let Self::Sql(db) = self {
            db.close().await;
        }
    }
}

/// Refuses a database URL that no store would open: an unknown scheme or `memory://`
/// option.
pub fn check_url(url: &crate::cli::DatabaseUrl) -> anyhow::Result<()> {
    let text = url.expose();
    if url.is_memory() {
        return memory_options(text).map(drop);
    }
    let known = ["sqlite:", "postgres://", "postgresql://"];
    if known.iter().any(|scheme| text.starts_with(scheme)) {
        Ok(())
    } else {
        anyhow::bail!(
            "unsupported database URL {url}: expected sqlite://PATH, postgres://... or memory://"
        )
    }
}
