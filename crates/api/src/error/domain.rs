//! Domain errors translated into responses: the only place that decides which status a
//! storage failure or a missing pet gets.

use animal_store_domain::{GetPetError, RepositoryError};
use poem::http::{HeaderValue, header};

use super::{ApiError, ErrorCode};

impl From<RepositoryError> for ApiError {
    fn from(err: RepositoryError) -> Self {
        match err {
            RepositoryError::Unavailable(cause) => {
                // The store logs the first failure of an outage, and its end; a line per
                // request would bury them.
                tracing::debug!(error = %cause, "the store is unavailable");
                Self::new(
                    ErrorCode::ServiceUnavailable,
                    "the store is temporarily unavailable; retry later",
                )
                .with_header(header::RETRY_AFTER, HeaderValue::from_static("1"))
            }
            RepositoryError::Duplicate | RepositoryError::Backend(_) => {
                tracing::error!(error = %err, cause = ?std::error::Error::source(&err), "the store failed");
                Self::internal()
            }
        }
    }
}

impl From<GetPetError> for ApiError {
    fn from(err: GetPetError) -> Self {
        match err {
            GetPetError::NotFound(id) => {
                Self::new(ErrorCode::NotFound, format!("no animal has id {id}"))
            }
            GetPetError::Repository(err) => err.into(),
        }
    }
}
