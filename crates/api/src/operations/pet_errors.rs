//! What the `animals` operations answer when they fail: each operation's documented errors,
//! and the domain's refusals of a change as the API's errors.

use animal_store_domain::ChangePetError;

use crate::error::{ApiError, ErrorCode, ErrorSet};

pub(super) struct ListPetsErrors;
impl ErrorSet for ListPetsErrors {
    const RESPONSES: &'static [(ErrorCode, &'static str)] = &[
        (
            ErrorCode::ValidationFailed,
            "`limit` outside 1..=100 or an unknown `status` (`validation_failed`); a `limit` that \
             is not an integer or a malformed `cursor` (`invalid_request`).",
        ),
        (ErrorCode::Unauthorized, "Missing or invalid API key."),
        (ErrorCode::InternalError, "The server failed."),
        (ErrorCode::ServiceUnavailable, "The store is temporarily unavailable."),
    ];
}

pub(super) struct CreatePetErrors;
impl ErrorSet for CreatePetErrors {
    const RESPONSES: &'static [(ErrorCode, &'static str)] = &[
        (
            ErrorCode::ValidationFailed,
            "Body missing required fields or containing invalid values (`validation_failed`, the \
             message names every field), or not JSON at all, or a malformed `Idempotency-Key` \
             (`invalid_request`).",
        ),
        (ErrorCode::Unauthorized, "Missing or invalid API key."),
        (
            ErrorCode::IdempotencyInProgress,
            "A request with the same `Idempotency-Key` is still being processed; retry later.",
        ),
        (ErrorCode::PayloadTooLarge, "The body is larger than 16 KiB."),
        (ErrorCode::UnsupportedMediaType, "The body is not `application/json`."),
        (
            ErrorCode::IdempotencyKeyReused,
            "The `Idempotency-Key` was used with another request (method, path or body).",
        ),
        (ErrorCode::InternalError, "The server failed."),
        (ErrorCode::ServiceUnavailable, "The store is temporarily unavailable."),
    ];
}

pub(super) struct GetPetErrors;
impl ErrorSet for GetPetErrors {
    const RESPONSES: &'static [(ErrorCode, &'static str)] = &[
        BAD_PET_ID,
        (ErrorCode::Unauthorized, "Missing or invalid API key."),
        (ErrorCode::NotFound, "The animal could not be found."),
        (ErrorCode::Gone, "The operation is past its sunset (5 December 2030)."),
        (ErrorCode::InternalError, "The server failed."),
        (ErrorCode::ServiceUnavailable, "The store is temporarily unavailable."),
    ];
}

const BAD_PET_ID: (ErrorCode, &str) = (ErrorCode::InvalidRequest, "`petId` is not an integer.");
const PRECONDITION_FAILED: (ErrorCode, &str) = (
    ErrorCode::PreconditionFailed,
    "`If-Match` names none of the animal's current entity tags: it changed since it was read. \
     Nothing changed.",
);
const HELD: (ErrorCode, &str) = (
    ErrorCode::Conflict,
    "An open order (placed or approved) holds the animal; the message names it.",
);

pub(super) struct UpdatePetErrors;
impl ErrorSet for UpdatePetErrors {
    const RESPONSES: &'static [(ErrorCode, &'static str)] = &[
        (
            ErrorCode::ValidationFailed,
            "A field breaks createPet's rules, or is `null` (`validation_failed`, the message \
             names every field); `petId` is not an integer, the body is not a JSON object, or \
             `If-Match` is not `*` or a list of entity tags (`invalid_request`).",
        ),
        (ErrorCode::Unauthorized, "Missing or invalid API key."),
        (ErrorCode::NotFound, "The animal could not be found."),
        (
            ErrorCode::Conflict,
            "The patch moves the status of an animal that an open order (placed or approved) \
             holds; the message names the order. Its name and category can change.",
        ),
        PRECONDITION_FAILED,
        (ErrorCode::PayloadTooLarge, "The body is larger than 16 KiB."),
        (
            ErrorCode::UnsupportedMediaType,
            "The body is not `application/merge-patch+json` or `application/json`.",
        ),
        (ErrorCode::InternalError, "The server failed."),
        (ErrorCode::ServiceUnavailable, "The store is temporarily unavailable."),
    ];
}

pub(super) struct DeletePetErrors;
impl ErrorSet for DeletePetErrors {
    const RESPONSES: &'static [(ErrorCode, &'static str)] = &[
        (
            ErrorCode::InvalidRequest,
            "`petId` is not an integer, or `If-Match` is not `*` or a list of entity tags.",
        ),
        (ErrorCode::Unauthorized, "Missing or invalid API key."),
        (ErrorCode::NotFound, "The animal could not be found: never added, or removed."),
        HELD,
        PRECONDITION_FAILED,
        (ErrorCode::InternalError, "The server failed."),
        (ErrorCode::ServiceUnavailable, "The store is temporarily unavailable."),
    ];
}

impl From<ChangePetError> for ApiError {
    fn from(err: ChangePetError) -> Self {
        match err {
            ChangePetError::NotFound(id) => {
                Self::new(ErrorCode::NotFound, format!("no animal has id {id}"))
            }
            ChangePetError::PreconditionFailed(id) => Self::new(
                ErrorCode::PreconditionFailed,
                format!(
                    "animal {id} has changed since the entity tag in If-Match was issued: get \
                     it again, and send its new ETag"
                ),
            ),
            ChangePetError::Held { pet, order } => Self::new(
                ErrorCode::Conflict,
                format!(
                    "animal {pet} is held by order {order}, which is open: its status stays and \
                     it stays in the catalogue until the order is delivered or cancelled"
                ),
            ),
            ChangePetError::Repository(err) => err.into(),
        }
    }
}
