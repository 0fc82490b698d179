//! The one place where failures become HTTP responses (`docs/api.md#errors`).
//!
//! Every non-2xx response the service sends carries the contract's Error body
//! `{code, message, status}` as `application/json`, with `status` equal to the HTTP status.
//! Handlers build an [`ApiError`] from domain errors; everything poem and poem-openapi raise
//! before a handler runs (routing, parameters, bodies, content types, authentication) is
//! turned into one by [`ApiError::from_poem`].

use std::fmt;
use std::marker::PhantomData;

use animal_store_domain::{GetPetError, RepositoryError};
use poem::http::{HeaderName, HeaderValue, StatusCode, header};
use poem::{IntoResponse, Response};
use poem_openapi::error::{
    AuthorizationError, ContentTypeError, ParseParamError, ParsePathError, ParseRequestPayloadError,
};
use poem_openapi::registry::{
    MetaHeader, MetaMediaType, MetaResponse, MetaResponses, MetaSchemaRef, Registry,
};
use poem_openapi::types::Type;
use poem_openapi::{ApiResponse, Enum, Object};

/// The closed set of error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename_all = "snake_case")]
pub enum ErrorCode {
    /// 400: a body or parameter that cannot be parsed at all.
    InvalidRequest,
    /// 400: a field or parameter that breaks a rule; the message names it.
    ValidationFailed,
    /// 401: the API key is missing or invalid.
    Unauthorized,
    /// 404: no such resource or route.
    NotFound,
    /// 405: the route exists, not with this method; `Allow` lists the methods it has.
    MethodNotAllowed,
    /// 410: the operation is past its sunset.
    Gone,
    /// 413: the body is larger than 16 KiB.
    PayloadTooLarge,
    /// 415: the body is not `application/json`.
    UnsupportedMediaType,
    /// 429: the key or address is over its limit.
    RateLimited,
    /// 429: the key is temporarily suspended for calling on after being limited.
    ApiKeySuspended,
    /// 500: something failed on the server; the request id identifies it in the logs.
    InternalError,
    /// 503: a dependency (the database) is unavailable; retry later.
    ServiceUnavailable,
}

impl ErrorCode {
    /// The HTTP status that goes with the code.
    pub const fn status(self) -> StatusCode {
        match self {
            Self::InvalidRequest | Self::ValidationFailed => StatusCode::BAD_REQUEST,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::Gone => StatusCode::GONE,
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::RateLimited | Self::ApiKeySuspended => StatusCode::TOO_MANY_REQUESTS,
            Self::InternalError => StatusCode::INTERNAL_SERVER_ERROR,
            Self::ServiceUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

/// The body of every error response.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename = "Error")]
pub struct ErrorBody {
    /// Machine-readable error code.
    pub code: ErrorCode,
    /// Human-readable description.
    pub message: String,
    /// The HTTP status code of the response.
    pub status: i32,
}

/// An error on its way to the client.
#[derive(Debug, Clone)]
pub struct ApiError {
    code: ErrorCode,
    message: String,
    headers: Vec<(HeaderName, HeaderValue)>,
}

/// The message of every 401: missing, malformed, unknown, revoked and other-environment keys
/// must be indistinguishable.
pub const UNAUTHORIZED_MESSAGE: &str =
    "a valid API key is required: send the header Authorization: Bearer <API_KEY>";

impl ApiError {
    /// An error with `code` and `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), headers: Vec::new() }
    }

    /// A 400 `invalid_request`.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidRequest, message)
    }

    /// A 400 `validation_failed`.
    pub fn validation_failed(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::ValidationFailed, message)
    }

    /// The 401 `unauthorized`, with its `WWW-Authenticate` challenge.
    pub fn unauthorized() -> Self {
        Self::new(ErrorCode::Unauthorized, UNAUTHORIZED_MESSAGE)
            .with_header(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"))
    }

    /// A 500 `internal_error`. The cause is logged by the caller, never sent.
    pub fn internal() -> Self {
        Self::new(
            ErrorCode::InternalError,
            "the server failed to handle the request; it has been logged",
        )
    }

    /// Adds a response header (`Allow`, `Retry-After`, `WWW-Authenticate`...).
    #[must_use]
    pub fn with_header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.push((name, value));
        self
    }

    /// The code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The body sent to the client.
    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            code: self.code,
            message: self.message.clone(),
            status: i32::from(self.code.status().as_u16()),
        }
    }

    /// Turns an error raised by poem or poem-openapi into the contract's shape. Errors that
    /// already carry a response (an operation's own) are not passed here.
    pub fn from_poem(err: &poem::Error) -> Self {
        if err.is::<AuthorizationError>() {
            return Self::unauthorized();
        }
        if let Some(e) = err.downcast_ref::<ParseParamError>() {
            return Self::invalid_request(format!("parameter {}: {}", e.name, e.reason));
        }
        if let Some(e) = err.downcast_ref::<ParsePathError>() {
            return Self::invalid_request(format!("path parameter {}: {}", e.name, e.reason));
        }
        if let Some(e) = err.downcast_ref::<ParseRequestPayloadError>() {
            return Self::invalid_request(format!("the body is not valid JSON: {}", e.reason));
        }
        if let Some(e) = err.downcast_ref::<ContentTypeError>() {
            let message = match e {
                ContentTypeError::NotSupported { content_type } => {
                    format!("the body must be application/json, not {content_type}")
                }
                ContentTypeError::ExpectContentType => {
                    "the body must be application/json; send a Content-Type header".to_owned()
                }
            };
            return Self::new(ErrorCode::UnsupportedMediaType, message);
        }
        match err.status() {
            StatusCode::NOT_FOUND => Self::new(ErrorCode::NotFound, "no such resource"),
            StatusCode::METHOD_NOT_ALLOWED => Self::new(
                ErrorCode::MethodNotAllowed,
                "this method is not allowed on this resource",
            ),
            StatusCode::PAYLOAD_TOO_LARGE => Self::payload_too_large(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE => {
                Self::new(ErrorCode::UnsupportedMediaType, "the body must be application/json")
            }
            StatusCode::UNAUTHORIZED => Self::unauthorized(),
            status if status.is_client_error() => Self::invalid_request(err.to_string()),
            _ => {
                tracing::error!(error = %err, "request failed");
                Self::internal()
            }
        }
    }

    /// The 413 for bodies over the limit.
    pub fn payload_too_large() -> Self {
        Self::new(
            ErrorCode::PayloadTooLarge,
            "the body must not be larger than 16 KiB (16384 bytes)",
        )
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.code, self.message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.code.status();
        let body = serde_json::to_vec(&poem_openapi::types::ToJSON::to_json(&self.body()))
            .unwrap_or_else(|_| b"{}".to_vec());
        let mut response = Response::builder()
            .status(status)
            .content_type("application/json; charset=utf-8")
            .body(body);
        for (name, value) in self.headers {
            response.headers_mut().insert(name, value);
        }
        response
    }
}

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

/// The error responses one operation can give, for its OpenAPI description.
pub trait ErrorSet: Send + Sync + 'static {
    /// Each status with the sentence that documents when it happens.
    const RESPONSES: &'static [(ErrorCode, &'static str)];
}

/// An error response of the operation whose error set is `S`. Handlers return
/// `Result<Success, OperationError<S>>` and use `?` on anything that converts to an
/// [`ApiError`]; the document lists exactly the statuses of `S`, each with the Error body.
pub struct OperationError<S> {
    error: ApiError,
    set: PhantomData<fn() -> S>,
}

impl<S, E: Into<ApiError>> From<E> for OperationError<S> {
    fn from(error: E) -> Self {
        Self { error: error.into(), set: PhantomData }
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
                .map(|&(code, description)| MetaResponse {
                    description,
                    status: Some(code.status().as_u16()),
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
