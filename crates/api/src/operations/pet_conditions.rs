//! Conditional changes of an animal: `If-Match` and `If-None-Match` on updatePet and
//! deletePet (`docs/api.md#conditional-writes-if-match`), checked on the animal's
//! representation, whose `ETag` getPet and updatePet answer.

use animal_store_domain::{ChangePetError, Pet, PetId, Precondition};
use poem::http::{HeaderValue, header};

use crate::error::{ApiError, ErrorCode};
use crate::operations::state::AppState;
use crate::wire::etag::{self, IfMatch, NotAnEntityTag};
use crate::wire::pets::PetBody;

/// The bytes of `pet` as every answer carries it (`JsonBody`).
fn pet_bytes(pet: &Pet) -> Vec<u8> {
    serde_json::to_vec(&PetBody::from(pet.clone())).unwrap_or_default()
}

/// The `ETag` getPet answers for `pet`.
pub(super) fn pet_tag(pet: &Pet) -> String {
    etag::of(&pet_bytes(pet), None)
}

/// How many times a conditional change reads the animal and checks the request's
/// conditions on it, when another change comes in between each time.
const CHECKS: usize = 3;

/// Makes `change` under the request's `If-Match` and `If-None-Match`, `If-Match` first as
/// RFC 9110 §13.2.2 orders them. A condition on the animal's entity tag is checked on the
/// animal as read just before, and the change is made only while the animal is still that
/// one; when another change came in between, the conditions are checked again on the
/// animal as it is then ([`CHECKS`] times at most). `If-Match: *` alone needs no reading:
/// any animal that exists meets it.
pub(super) async fn conditionally<F, Done>(
    state: &AppState,
    id: PetId,
    request: &poem::Request,
    change: F,
) -> Result<Pet, ApiError>
where
    F: Fn(Option<Precondition>) -> Done,
    Done: Future<Output = Result<Pet, ChangePetError>>,
{
    let condition = etag::if_match(request.headers()).map_err(|NotAnEntityTag(part)| {
        ApiError::invalid_request(format!(
            "If-Match must be * or a list of entity tags (\"...\"), got {part:?}"
        ))
    })?;
    let none_match: Vec<HeaderValue> =
        request.headers().get_all(header::IF_NONE_MATCH).iter().cloned().collect();
    if none_match.is_empty() && condition.as_ref().is_none_or(|c| *c == IfMatch::Any) {
        return change(None).await.map_err(|err| write_error(err, request));
    }
    let mut outcome = Err(ChangePetError::PreconditionFailed(id));
    for _ in 0..CHECKS {
        let pet = state.pets.get(id).await?;
        let bytes = pet_bytes(&pet);
        let holds = condition.as_ref().is_none_or(|condition| condition.holds_for(&bytes))
            && etag::none_match_holds(&none_match, &bytes);
        if !holds {
            return Err(write_error(ChangePetError::PreconditionFailed(id), request));
        }
        outcome = change(Some(Precondition::Is(pet))).await;
        if !matches!(outcome, Err(ChangePetError::PreconditionFailed(_))) {
            break;
        }
    }
    outcome.map_err(|err| write_error(err, request))
}

/// `err`, a failed write's, as the client reads it: a precondition of a request without
/// `If-Match` is its `If-None-Match`'s.
fn write_error(err: ChangePetError, request: &poem::Request) -> ApiError {
    match err {
        ChangePetError::PreconditionFailed(id)
            if !request.headers().contains_key(header::IF_MATCH) =>
        {
            ApiError::new(
                ErrorCode::PreconditionFailed,
                format!(
                    "animal {id} exists and If-None-Match is * or names its entity tag: \
                     nothing changed"
                ),
            )
        }
        err => err.into(),
    }
}
