//! SeaORM adapters over SQLite and PostgreSQL.
//!
//! [`Database::connect`] opens the database a URL names and tunes it:
//!
//! - SQLite (the default, a file beside the server): WAL journal, `synchronous=FULL` so an
//!   acknowledged write survives `kill -9` and power loss, a busy timeout, a bounded WAL
//!   (`journal_size_limit`), writes in `BEGIN IMMEDIATE` transactions. Every read runs on a
//!   pool of reader connections, which WAL lets read beside the writer; a pet read asked
//!   again is answered from the read cache (`pets/read_cache.rs`) until the writer commits.
//! - PostgreSQL: every read runs on a pool of reader connections, and nothing is kept: a
//!   write on one instance is read at once on every other.
//!
//! Migrations are applied one process at a time, under a lock held in the database
//! (`schema/migrating.rs`), so that replicas starting together on one database all come up.
//!
//! Every write goes through one thread, the writer, which owns the writer connection, commits
//! queued writes together (group commit) and replaces its connection after any failure. See
//! `writer/thread.rs` for the invariant that keeps an acknowledged write stored.

//! # Layout
//!
//! Each folder imports only from those listed before it:
//!
//! - `connection/`: opening the database ([`Backend`], [`DatabaseOptions`]), its errors,
//!   how a failure is classed, and whether the database can be reached; `bound`: the
//!   placeholders and values of a statement written by hand.
//! - `schema/`: the SeaORM entities, the migrations, the lock that applies them, and the
//!   schema window.
//! - `rows/`: rows to domain values and back: pets, events, idempotency records.
//! - `writer/`: the writer thread, its group commit, and the jobs the stores hand it.
//! - The stores, one module or folder each: `pets/` (with the read cache), `orders`,
//!   `keys`, `idempotency`, `events`, `webhooks/`.
//! - `database`: [`Database`], which opens all of the above and hands out the stores;
//!   `migrate`: its migrations.

mod bound;
mod connection;
mod database;
mod events;
mod idempotency;
mod keys;
mod migrate;
mod orders;
mod pets;
mod rows;
mod schema;
mod webhooks;
mod writer;

pub use connection::connector::{Backend, DEFAULT_READ_CACHE_MIB, DatabaseOptions};
pub use connection::errors::{BackupError, DatabaseError};
pub use connection::health::{DatabaseHealth, POOL_METRIC, PoolMetrics};
pub use database::Database;
pub use events::SeaOrmEventLog;
pub use idempotency::SeaOrmIdempotencyStore;
pub use keys::SeaOrmApiKeyStore;
pub use migrate::SchemaStatus;
pub use orders::SeaOrmOrderRepository;
pub use pets::read_cache::READ_CACHE_METRIC;
pub use pets::repository::SeaOrmPetRepository;
pub use schema::window::SchemaWindow;
pub use webhooks::endpoints::SeaOrmWebhooks;
pub use writer::thread::{BATCH_SIZE_METRIC, MAX_BATCH};
