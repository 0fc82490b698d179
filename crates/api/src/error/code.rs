//! The closed set of error codes, each with its HTTP status.

use poem::http::StatusCode;
use poem_openapi::Enum;

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
    /// 403: the key is valid, but its scope does not allow the operation (a `read` key
    /// asking to change something).
    Forbidden,
    /// 404: no such resource or route.
    NotFound,
    /// 405: the route exists, not with this method; `Allow` lists the methods it has.
    MethodNotAllowed,
    /// 409: the request conflicts with the resource's state (an animal already reserved, an
    /// order move the rules do not allow); the message says which.
    Conflict,
    /// 409: a request with the same `Idempotency-Key` is still being processed.
    IdempotencyInProgress,
    /// 410: the operation is past its sunset.
    Gone,
    /// 412: the resource changed since the client read it: `If-Match` names none of its
    /// current entity tags. Nothing changed.
    PreconditionFailed,
    /// 413: the body is larger than 16 KiB.
    PayloadTooLarge,
    /// 415: the body is not `application/json`.
    UnsupportedMediaType,
    /// 422: the `Idempotency-Key` was used with another request (method, path or body).
    IdempotencyKeyReused,
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
            Self::Forbidden => StatusCode::FORBIDDEN,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::Conflict | Self::IdempotencyInProgress => StatusCode::CONFLICT,
            Self::IdempotencyKeyReused => StatusCode::UNPROCESSABLE_ENTITY,
            Self::Gone => StatusCode::GONE,
            Self::PreconditionFailed => StatusCode::PRECONDITION_FAILED,
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::RateLimited | Self::ApiKeySuspended => StatusCode::TOO_MANY_REQUESTS,
            Self::InternalError => StatusCode::INTERNAL_SERVER_ERROR,
            Self::ServiceUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}
