//! Errors that poem and poem-openapi raise before a handler runs (routing, parameters,
//! bodies, content types, authentication), translated into the contract's shape.

use poem::http::StatusCode;
use poem_openapi::error::{
    AuthorizationError, ContentTypeError, ParseParamError, ParsePathError, ParseRequestPayloadError,
};

use super::{ApiError, ErrorCode};

impl ApiError {
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
}
