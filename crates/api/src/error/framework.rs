//! Errors that poem and poem-openapi raise before a handler runs (routing, parameters,
//! bodies, content types, authentication), translated into the contract's shape.
//!
//! A refused value the client chose, such as a `Content-Type`, is quoted as its
//! [`excerpt`] only (`docs/security.md#what-the-service-defends`).

use animal_store_domain::excerpt;
use poem::http::StatusCode;
use poem_openapi::error::{
    AuthorizationError, ContentTypeError, ParseParamError, ParsePathError, ParseRequestPayloadError,
};

use super::{ApiError, ErrorCode};

impl ApiError {
    /// The response for an error: its own if an operation built it, the Error body
    /// otherwise.
    pub fn response_to(err: poem::Error) -> poem::Response {
        if err.is_from_response() {
            err.into_response()
        } else {
            poem::IntoResponse::into_response(Self::from_poem(&err))
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
        if err.is::<ParsePathError>() || err.is::<poem::error::ParsePathError>() {
            // Every path parameter takes any text (`RawParam`), so the only value missing is
            // one poem's router could not decode (poem's own error when the router that
            // nests the operations under `/v1` could not): poem-openapi names it by its
            // route's internal name (`param0`), which means nothing to a client.
            return Self::invalid_request(
                "the path is not valid UTF-8 once percent-decoded".to_owned(),
            );
        }
        if let Some(e) = err.downcast_ref::<ParseRequestPayloadError>() {
            return Self::invalid_request(format!("the body is not valid JSON: {}", e.reason));
        }
        if let Some(e) = err.downcast_ref::<ContentTypeError>() {
            let message = match e {
                ContentTypeError::NotSupported { content_type } => {
                    format!("the body must be application/json, not {:?}", excerpt(content_type))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_content_type_is_quoted_as_an_excerpt() {
        let content_type = format!("text/html; x=<script>{}", "a".repeat(390_000));
        let err = poem::Error::from(ContentTypeError::NotSupported { content_type });
        let error = ApiError::from_poem(&err);
        assert_eq!(error.code(), ErrorCode::UnsupportedMediaType);
        assert_eq!(
            error.body().message,
            "the body must be application/json, not \"text/html; x=<script>aaaaaaaaaaa... \
             (390021 characters)\""
        );
    }
}
