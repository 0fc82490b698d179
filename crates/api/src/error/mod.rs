//! The one place where failures become HTTP responses (`docs/api.md#errors`).
//!
//! Every non-2xx response the service sends carries the contract's Error body
//! `{code, message, status}` as `application/json`, with `status` equal to the HTTP status.
//! Handlers build an [`ApiError`] from domain errors; everything poem and poem-openapi raise
//! before a handler runs (routing, parameters, bodies, content types, authentication) is
//! turned into one by [`ApiError::from_poem`].
//!
//! # Layout
//!
//! - `code`: the closed set of codes and their statuses;
//! - `body`: the Error body;
//! - this module: [`ApiError`], an error on its way to the client;
//! - `framework`: poem's and poem-openapi's errors translated;
//! - `domain`: the domain's errors translated;
//! - `document`: [`OperationError`] and [`ErrorSet`], the error responses each operation
//!   declares in the document.

mod body;
mod code;
mod document;
mod domain;
mod framework;

use std::fmt;

use poem::http::{HeaderName, HeaderValue, StatusCode, header};
use poem::{IntoResponse, Response};

pub use body::ErrorBody;
pub use code::ErrorCode;
pub use document::{ErrorSet, OperationError};

/// An error on its way to the client.
#[derive(Debug, Clone)]
pub struct ApiError {
    code: ErrorCode,
    /// The code's own status, unless [`ApiError::with_status`] chose another.
    status: StatusCode,
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
        Self { code, status: code.status(), message: message.into(), headers: Vec::new() }
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

    /// The same error with another status than its code's own: `validation_failed` is 422
    /// when a body is well-formed but names something that does not exist (an order's
    /// `petId`).
    #[must_use]
    pub fn with_status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
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
            status: i32::from(self.status.as_u16()),
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
        let status = self.status;
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
