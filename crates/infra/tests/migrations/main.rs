//! Upgrade tests: each migration after the first, run on a database that an older version
//! of the service filled, on SQLite and PostgreSQL.

mod changes_events_webhooks;
mod keys_orders_records;

use std::sync::Arc;

use animal_store_domain::{AnswerEncoder, Order, Pet, PlaceOrderError, StoredAnswer};
use animal_store_infra::Database;

/// Answers encoded as the API encodes them (the status and the `Location` on the first line,
/// the body after), naming the pet a write added.
pub(crate) struct Answers;

impl AnswerEncoder for Answers {
    fn pet_created(&self, pet: &Pet) -> StoredAnswer {
        let id = pet.id;
        StoredAnswer::new(format!("201 /v1/pets/{id}\n{{\"id\":{id}}}").into_bytes())
    }

    fn order_placed(&self, _placed: &Result<Order, PlaceOrderError>) -> Option<StoredAnswer> {
        None
    }
}

/// [`Answers`], as the stores take them.
pub(crate) fn answers() -> Arc<dyn AnswerEncoder> {
    Arc::new(Answers)
}

/// 32 bytes of `byte` (two hex digits) as the database of `url` writes bytes in SQL.
pub(crate) fn digest_literal(url: &str, byte: &str) -> String {
    let hex = byte.repeat(32);
    if url.starts_with("sqlite") { format!("X'{hex}'") } else { format!("decode('{hex}', 'hex')") }
}

/// The migrations this file tests, in order. A new migration fails this check until it has
/// an upgrade test in this folder and its name here.
#[test]
fn every_migration_after_the_first_has_an_upgrade_test() {
    assert_eq!(
        Database::migration_names(),
        [
            "m0001_create_pets",
            "m0002_create_api_keys",
            "m20261123_000003_key_lifecycle",
            "m20261123_000004_create_orders",
            "m20261123_000005_create_idempotency_keys",
            "m20261123_000006_drop_idempotency_created_at_index",
            "m20261126_000007_pet_changes",
            "m20261126_000008_key_scopes",
            "m20261126_000009_events",
            "m20261126_000010_webhooks",
            "m20261128_000011_webhook_hardening",
            "m20261202_000012_fan_out",
            "m20261202_000013_stored_answers"
        ]
    );
}
