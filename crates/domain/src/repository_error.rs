//! How a storage operation fails, in the domain's terms: the error every port returns, kept
//! apart from the ports so that the models (orders, idempotency records) can name it without
//! depending on the ports that store them.

use std::error::Error as StdError;

use thiserror::Error;

/// The boxed cause of a storage failure, kept for logs.
pub type BoxError = Box<dyn StdError + Send + Sync>;

/// A storage operation that did not happen.
#[derive(Debug, Error)]
pub enum RepositoryError {
    /// A record with the same unique value exists already.
    #[error("a record with the same unique value already exists")]
    Duplicate,
    /// The store could not be reached in time (busy, unreachable, pool exhausted). Retrying
    /// later may succeed.
    #[error("the store is unavailable")]
    Unavailable(#[source] BoxError),
    /// The store failed in a way retrying will not fix.
    #[error("the store failed")]
    Backend(#[source] BoxError),
}
