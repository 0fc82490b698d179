//! Where idempotency records are kept.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::idempotency::model::{IdempotentWrite, KeyUse, StoredAnswer};
use crate::orders::model::{NewOrder, Order, PlaceOrderError};
use crate::pets::model::{NewPet, Pet};
use crate::repository_error::RepositoryError;

/// Encodes the answers that keyed writes store for their retries: the API's, which alone
/// knows their shape. A store calls it inside the write's transaction, once the write knows
/// what it made, so that the answer commits with it.
pub trait AnswerEncoder: Send + Sync + 'static {
    /// The answer to the request that added `pet`.
    fn pet_created(&self, pet: &Pet) -> StoredAnswer;

    /// The answer to the request that placed an order, for its outcome: the order, or the
    /// refusal of the rules (its animal missing or not available); `None` for an outcome not
    /// to store (a store failure), which leaves the key free for a retry.
    fn order_placed(&self, placed: &Result<Order, PlaceOrderError>) -> Option<StoredAnswer>;
}

/// A keyed order's outcome, and the answer stored for it (none for an outcome not to store).
pub type OrderAnswered = (Result<Order, PlaceOrderError>, Option<StoredAnswer>);

/// Where idempotency records are kept, beside the pets and orders whose creation they record
/// (`docs/api.md#idempotent-retries`): a record and what it records commit together, so that
/// after any crash either both are stored or neither is.
#[async_trait]
pub trait IdempotencyStore: Send + Sync + 'static {
    /// In one transaction: unless `write`'s key has an unexpired record, adds `pet` and
    /// stores the record of `write` with the answer `answers` encodes for it, and returns
    /// both; otherwise adds nothing and returns the record. Of concurrent calls with one key,
    /// one adds its pet.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the transaction did not commit: nothing is stored then.
    async fn create_pet(
        &self,
        write: IdempotentWrite,
        pet: NewPet,
        answers: Arc<dyn AnswerEncoder>,
    ) -> Result<KeyUse<(Pet, StoredAnswer)>, RepositoryError>;

    /// [`IdempotencyStore::create_pet`] for placing an order: an order the rules refuse (its
    /// animal missing or not available) is recorded too, with the answer `answers` encodes.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the transaction did not commit: nothing is stored then.
    async fn place_order(
        &self,
        write: IdempotentWrite,
        order: NewOrder,
        answers: Arc<dyn AnswerEncoder>,
    ) -> Result<KeyUse<OrderAnswered>, RepositoryError>;

    /// Removes at most `batch` records created before `before`, and says how many it removed.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store fails.
    async fn sweep(&self, before: DateTime<Utc>, batch: usize) -> Result<usize, RepositoryError>;
}
