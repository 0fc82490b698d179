//! Adapters for the ports of `animal-store-domain`.
//!
//! # Layout
//!
//! - [`sql`]: SeaORM adapters over SQLite (the embedded default) and PostgreSQL, their
//!   entities and migrations, and [`sql::Database`], which opens and tunes a connection.
//! - [`memory`]: in-memory adapters for every port, for tests, demos and `memory://`.
//! - [`cache`]: a short-lived cache in front of any key store, for authentication.
//! - [`rate_limiter`]: the in-process rate limiter, its counters in moka caches.
//! - [`clock`]: the system clock, and a clock a file sets (`--clock-file`).
//! - [`redact`]: passwords out of every URL in a message.
//! - [`webhook_client`]: webhook addresses checked on the network, and deliveries posted,
//!   signed, over HTTP(S).
//! - [`faults`]: wrappers that make any store fail or lag on purpose, for the tests of
//!   client teams (`memory://?fail-every=10`) and of adapters.
//!
//! With the `testing` feature only, so that no release build ships them:
//!
//! - `conformance`: the suites every adapter of a port must pass; the tests of this crate
//!   run them against every adapter, and a new adapter proves itself by passing them too.
//! - `testing`: a clock that tests set by hand, and fresh test databases.
//!
//! Database rows never leave this crate: adapters turn them into domain values and driver
//! errors into [`RepositoryError`](animal_store_domain::RepositoryError)s.

pub mod cache;
pub mod clock;
#[cfg(feature = "testing")]
pub mod conformance;
pub mod faults;
pub mod memory;
pub mod rate_limiter;
pub mod redact;
pub mod redis_limiter;
pub mod sql;
#[cfg(feature = "testing")]
pub mod testing;
pub mod webhook_client;

pub use cache::CachedApiKeyStore;
pub use clock::{ClockFileError, FileClock, SystemClock};
pub use memory::{
    MemoryApiKeyStore, MemoryIdempotencyStore, MemoryOrderRepository, MemoryPetRepository,
};
pub use rate_limiter::MokaRateLimiter;
pub use redis_limiter::{LimiterFailure, RedisLimiterOptions, RedisRateLimiter};
pub use sql::{
    BATCH_SIZE_METRIC, BackupError, DEFAULT_READ_CACHE_MIB, Database, DatabaseError,
    DatabaseHealth, DatabaseOptions, POOL_METRIC, PoolMetrics, READ_CACHE_METRIC, SchemaStatus,
    SeaOrmApiKeyStore, SeaOrmEventLog, SeaOrmIdempotencyStore, SeaOrmOrderRepository,
    SeaOrmPetRepository,
};
#[cfg(feature = "testing")]
pub use testing::ManualClock;
pub use webhook_client::{DnsAddressCheck, HttpSender};
