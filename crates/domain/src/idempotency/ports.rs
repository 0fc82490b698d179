//! Where idempotency records are kept.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::idempotency::model::{IdempotentWrite, KeyUse, RenderOrder, RenderPet};
use crate::orders::model::{NewOrder, Order, PlaceOrderError};
use crate::pets::model::{NewPet, Pet};
use crate::repository_error::RepositoryError;

/// Where idempotency records are kept, beside the pets and orders whose creation they record
/// (`docs/api.md#idempotent-retries`): a record and what it records commit together, so that
/// after any crash either both are stored or neither is.
#[async_trait]
pub trait IdempotencyStore: Send + Sync + 'static {
    /// In one transaction: unless `write`'s key has an unexpired record, adds `pet` and
    /// stores the record of `write` with the response `render` gives for it; otherwise adds
    /// nothing and returns the record. Of concurrent calls with one key, one adds its pet.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the transaction did not commit: nothing is stored then.
    async fn create_pet(
        &self,
        write: IdempotentWrite,
        pet: NewPet,
        render: RenderPet,
    ) -> Result<KeyUse<Pet>, RepositoryError>;

    /// [`IdempotencyStore::create_pet`] for placing an order: an order the rules refuse (its
    /// animal missing or not available) is recorded too, with the response `render` gives.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the transaction did not commit: nothing is stored then.
    async fn place_order(
        &self,
        write: IdempotentWrite,
        order: NewOrder,
        render: RenderOrder,
    ) -> Result<KeyUse<Result<Order, PlaceOrderError>>, RepositoryError>;

    /// Removes at most `batch` records created before `before`, and says how many it removed.
    ///
    /// # Errors
    ///
    /// [`RepositoryError`] when the store fails.
    async fn sweep(&self, before: DateTime<Utc>, batch: usize) -> Result<usize, RepositoryError>;
}
