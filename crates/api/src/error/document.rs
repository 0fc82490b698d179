//! The error responses of each operation, as the OpenAPI document describes them.

use std::marker::PhantomData;

use poem::{IntoResponse, Response};
use poem_openapi::ApiResponse;
use poem_openapi::registry::{
    MetaHeader, MetaMediaType, MetaResponse, MetaResponses, MetaSchemaRef, Registry,
};
use poem_openapi::types::Type;

use super::{ApiError, ErrorBody, ErrorCode};

/// The error responses one operation can give, for its OpenAPI description.
pub trait ErrorSet: Send + Sync + 'static {
    /// Each code, answered with its own status, and the sentence that documents when.
    const RESPONSES: &'static [(ErrorCode, &'static str)];

    /// Each code answered with another status than its own (see [`ApiError::with_status`]),
    /// that status, and the sentence that documents when.
    const OTHER_STATUSES: &'static [(ErrorCode, u16, &'static str)] = &[];
}

/// An error response of the operation whose error set is `S`. Handlers return
/// `Result<Success, OperationError<S>>` and use `?` on anything that converts to an
/// [`ApiError`]; the document lists exactly the statuses of `S`, each with the Error body.
pub struct OperationError<S> {
    error: Failure,
    set: PhantomData<fn() -> S>,
}

/// What an operation answers instead of its success.
enum Failure {
    /// An error.
    Error(ApiError),
    /// A keyed write's stored answer (`docs/api.md#idempotent-retries`), sent the first time
    /// or again: a success or an error, as it was stored.
    Stored(Response),
}

impl<S, E: Into<ApiError>> From<E> for OperationError<S> {
    fn from(error: E) -> Self {
        Self { error: Failure::Error(error.into()), set: PhantomData }
    }
}

impl<S> OperationError<S> {
    /// The response of a stored answer: a keyed write's, sent the first time or again.
    pub fn stored(response: Response) -> Self {
        Self { error: Failure::Stored(response), set: PhantomData }
    }
}

impl Failure {
    fn into_response(self) -> Response {
        match self {
            Self::Error(error) => error.into_response(),
            Self::Stored(response) => response,
        }
    }
}

impl<S: ErrorSet> ApiResponse for OperationError<S> {
    fn meta() -> MetaResponses {
        let header = |name: &str, description: &str, schema: MetaSchemaRef| MetaHeader {
            name: name.to_owned(),
            description: Some(description.to_owned()),
            required: true,
            deprecated: false,
            schema,
        };
        MetaResponses {
            responses: S::RESPONSES
                .iter()
                .map(|&(code, description)| (code, code.status().as_u16(), description))
                .chain(S::OTHER_STATUSES.iter().copied())
                .map(|(code, status, description)| MetaResponse {
                    description,
                    status: Some(status),
                    status_range: None,
                    content: vec![MetaMediaType {
                        content_type: "application/json",
                        schema: ErrorBody::schema_ref(),
                    }],
                    headers: match code {
                        ErrorCode::Unauthorized => {
                            vec![header(
                                "WWW-Authenticate",
                                "Always `Bearer`.",
                                String::schema_ref(),
                            )]
                        }
                        ErrorCode::ServiceUnavailable => {
                            vec![header(
                                "Retry-After",
                                "Seconds to wait before retrying.",
                                u32::schema_ref(),
                            )]
                        }
                        _ => Vec::new(),
                    },
                })
                .collect(),
        }
    }

    fn register(registry: &mut Registry) {
        ErrorBody::register(registry);
    }
}

impl<S: ErrorSet> IntoResponse for OperationError<S> {
    fn into_response(self) -> Response {
        self.error.into_response()
    }
}

impl<S> From<OperationError<S>> for poem::Error {
    fn from(err: OperationError<S>) -> Self {
        poem::Error::from_response(err.error.into_response())
    }
}
