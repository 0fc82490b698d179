//! The `animals` operations: `listPets`, `createPet`, the deprecated `getPet`, and the
//! experimental `updatePet` and `deletePet` (`docs/api.md#changing-and-removing-an-animal`).

use animal_store_domain::{Answer, Pet, PetId, PetIds, StoredAnswer, excerpt};
use poem::http::{HeaderValue, StatusCode, header};
use poem::web::Data;
use poem_openapi::param::{Header, Path, Query};

use crate::wire::changes::PetPatchBody;
use crate::wire::duplicates::{RepeatedJsonKey, refuse_repeated_parameters};
use crate::wire::etag;
use crate::wire::json::{MergePatch, PlainJson};
use poem_openapi::payload::Json;
use poem_openapi::{ApiRequest, ApiResponse, OpenApi, Tags};

use super::pet_conditions::{conditionally, pet_tag};
use super::pet_errors::{
    CreatePetErrors, DeletePetErrors, GetPetErrors, ListPetsErrors, UpdatePetErrors,
};
use crate::error::{ApiError, ErrorCode, OperationError};
use crate::operations::state::AppState;
use crate::wire::auth::BearerKey;
use crate::wire::deprecation::GET_PET;
use crate::wire::field::ParseContext;
use crate::wire::idempotency::{KeyedWrite, decode, encode, send};
use crate::wire::json::JsonBody;
use crate::wire::listing::{listing, next_link};
use crate::wire::params::{
    CursorSchema, EntityTagsSchema, IdempotencyKeySchema, PageSizeSchema, PetIdsSchema, RawParam,
    RawParams, parse_pet_ids,
};
use crate::wire::pets::{NewPetBody, PetBody, PetStatusDto};

#[derive(Tags)]
enum Tag {
    /// The store's catalogue of animals.
    #[oai(rename = "animals")]
    Animals,
}

#[derive(ApiResponse)]
enum ListPetsOk {
    /// A page of animals, ordered by id ascending.
    #[oai(status = 200)]
    Ok(
        JsonBody<Vec<PetBody>>,
        /// `<...>; rel="next"` (RFC 8288): the next page, with the same `limit` and `status`.
        /// Absent on the last page.
        #[oai(header = "Link")]
        Option<String>,
    ),
}

#[derive(ApiResponse)]
enum CreatePetOk {
    /// Animal added.
    #[oai(status = 201)]
    Created(
        JsonBody<PetBody>,
        /// The address of the new animal: `/v1/pets/{id}`.
        #[oai(header = "Location")]
        String,
        /// A strong validator of the animal as added: send it in `If-Match` to change or
        /// remove it only while nobody else has.
        #[oai(header = "ETag")]
        String,
    ),
}

#[derive(ApiResponse)]
enum UpdatePetOk {
    /// The animal as changed.
    #[oai(status = 200)]
    Ok(
        JsonBody<PetBody>,
        /// A strong validator of the animal as it is now: send it in `If-Match` with the next
        /// change.
        #[oai(header = "ETag")]
        String,
    ),
}

#[derive(ApiResponse)]
enum DeletePetOk {
    /// Animal removed. No body.
    #[oai(status = 204)]
    Removed,
}

/// An `updatePet` body: a JSON merge patch, sent as such or as plain JSON.
#[derive(ApiRequest)]
enum PetPatchRequest {
    /// A JSON merge patch (RFC 7396).
    MergePatch(MergePatch<PetPatchBody>),
    /// The same patch, sent as `application/json` (no other `+json` type: a JSON Patch is
    /// not a merge patch).
    Json(PlainJson<PetPatchBody>),
}

impl PetPatchRequest {
    fn into_inner(self) -> PetPatchBody {
        match self {
            Self::MergePatch(body) => body.into_inner(),
            Self::Json(body) => body.into_inner(),
        }
    }
}

#[derive(ApiResponse)]
enum GetPetOk {
    /// Animal found.
    #[oai(status = 200)]
    Ok(JsonBody<PetBody>),
}

/// The `animals` operations. They hold no state: the services reach them as request data
/// (`AppState`, added by `app`), so that the document is built from the types alone.
pub struct PetsApi;

#[OpenApi(tag = "Tag::Animals")]
impl PetsApi {
    /// List animals
    ///
    /// Returns a page of animals ordered by id ascending, optionally only those with a
    /// status, or only those with the ids given (`id=3&id=7`: the read of one animal by id
    /// that replaces `getPet`). When more animals follow, the response carries a `Link`
    /// header with `rel="next"` whose address returns the next page; the body stays a bare
    /// array.
    #[oai(path = "/pets", method = "get", operation_id = "listPets")]
    #[expect(
        clippy::too_many_arguments,
        reason = "poem-openapi takes each parameter of an operation as an argument"
    )]
    async fn list_pets(
        &self,
        _key: BearerKey,
        state: Data<&AppState>,
        /// Maximum number of animals returned: 1 to 100, 20 when omitted.
        limit: Query<Option<RawParam<PageSizeSchema>>>,
        /// Returns only animals with this status.
        status: Query<Option<RawParam<PetStatusDto>>>,
        /// Where the page starts: copy it from the `Link` header of the previous page. Opaque.
        cursor: Query<Option<RawParam<CursorSchema>>>,
        /// Returns only the animals with these ids, each given as its own `id=` (1 to 100 of
        /// them); an id no animal has is simply absent from the page.
        id: Query<Option<RawParams<PetIdsSchema>>>,
        /// The `ETag` of an answer you have: if the answer is still the same, it is `304 Not
        /// Modified`, without a body, and spends nothing of the key's daily quota.
        #[oai(name = "If-None-Match")]
        _if_none_match: Header<Option<String>>,
        request: &poem::Request,
    ) -> Result<ListPetsOk, OperationError<ListPetsErrors>> {
        refuse_repeated_parameters(request.uri().query(), &["limit", "status", "cursor"])?;
        let listing = listing(
            limit.0.as_ref().map(RawParam::as_str),
            status.0.as_ref().map(RawParam::as_str),
            cursor.0.as_ref().map(RawParam::as_str),
            PetId::new,
        )?;
        let ids = id.0.map(|ids| parse_pet_ids(&ids.into_inner())).transpose()?;
        let (page, ids_query) = match &ids {
            Some(ids) => (state.pets.list_by_ids(ids, listing).await?, ids_query(ids)),
            None => (state.pets.list(listing).await?, String::new()),
        };
        let next =
            page.next_after.map(|after| next_link("/v1/pets", &listing, &ids_query, after.get()));
        Ok(ListPetsOk::Ok(JsonBody(page.items.into_iter().map(PetBody::from).collect()), next))
    }

    /// Add an animal
    ///
    /// Adds an animal to the catalogue and returns it with the id the service assigned.
    /// `status` defaults to `available`. Unknown fields, `id` included, are ignored.
    #[oai(path = "/pets", method = "post", operation_id = "createPet")]
    async fn create_pet(
        &self,
        _key: BearerKey,
        state: Data<&AppState>,
        body: Json<NewPetBody>,
        /// Makes the request safe to retry: a key of your choosing (a UUID, say), 1 to 255
        /// visible ASCII characters, or the same as a quoted string. A retry with the same key
        /// and the same body within 24 hours gets the first response again, marked
        /// `Idempotent-Replayed: true`, and adds nothing.
        #[oai(name = "Idempotency-Key")]
        _idempotency_key: Header<Option<RawParam<IdempotencyKeySchema>>>,
        request: &poem::Request,
    ) -> Result<CreatePetOk, OperationError<CreatePetErrors>> {
        RepeatedJsonKey::refuse(request)?;
        let context = ParseContext { now: state.clock.now() };
        let new_pet = body.0.into_inner()?.into_new_pet(&context)?;
        if let Some(KeyedWrite(hold)) = request.extensions().get::<KeyedWrite>() {
            // The answer stored for the retries with the key is the one sent now.
            let answer = match state.idempotency.create_pet(hold, new_pet).await? {
                Answer::Done((_, answer)) => sent(&answer, false),
                Answer::Replay(answer) => sent(&answer, true),
            };
            return Err(OperationError::stored(answer));
        }
        let pet = state.pets.add(new_pet).await?;
        let location = location(&pet);
        let tag = pet_tag(&pet);
        Ok(CreatePetOk::Created(JsonBody(pet.into()), location, tag))
    }

    /// Get an animal (deprecated)
    ///
    /// Deprecated: announced to be removed on 5 December 2030; read animals by id with
    /// `GET /pets?id=7` instead. Every response carries `Deprecation`, `Sunset` and
    /// `Link: </v1/pets?id=7>; rel="successor-version"`; from the sunset on, the answer is
    /// 410.
    #[oai(path = "/pets/:petId", method = "get", operation_id = "getPet", deprecated)]
    async fn get_pet(
        &self,
        _key: BearerKey,
        state: Data<&AppState>,
        /// The id of the animal.
        #[oai(name = "petId")]
        pet_id: Path<RawParam<i64>>,
        /// The `ETag` of an answer you have: if the answer is still the same, it is `304 Not
        /// Modified`, without a body, and spends nothing of the key's daily quota.
        #[oai(name = "If-None-Match")]
        _if_none_match: Header<Option<String>>,
    ) -> Result<GetPetOk, OperationError<GetPetErrors>> {
        if GET_PET.is_past_sunset(state.clock.now()) {
            let successor = GET_PET.successor_of(pet_id.0.as_str());
            let message =
                format!("getPet was removed on 5 December 2030; use GET {successor} instead");
            return Err(ApiError::new(ErrorCode::Gone, message).into());
        }
        let pet = state.pets.get(parse_pet_id(pet_id.0.as_str())?).await?;
        Ok(GetPetOk::Ok(JsonBody(pet.into())))
    }

    /// [experimental] Change an animal
    ///
    /// Changes the fields the body names, as a JSON merge patch (RFC 7396): each checked as
    /// `createPet` checks it, `null` refused, unknown fields ignored, `{}` changing nothing.
    /// With `If-Match`, the change is made only if the animal is still as the client read
    /// it (412 otherwise, nothing changed); without it, the last change wins. An animal that
    /// an open order holds keeps its status (409), while its name and category can change.
    #[oai(path = "/pets/:petId", method = "patch", operation_id = "updatePet")]
    #[expect(
        clippy::too_many_arguments,
        reason = "each header the document declares is an argument of its own"
    )]
    async fn update_pet(
        &self,
        _key: BearerKey,
        state: Data<&AppState>,
        /// The id of the animal.
        #[oai(name = "petId")]
        pet_id: Path<RawParam<i64>>,
        body: PetPatchRequest,
        /// The `ETag` of the animal as you read it (from getPet, createPet or updatePet), or
        /// `*` for any: the change is made only while the animal is unchanged.
        #[oai(name = "If-Match")]
        _if_match: Header<Option<RawParam<EntityTagsSchema>>>,
        /// `*`: make the change only if the animal does not exist, which is never so for a
        /// change: `412` whenever it exists. A list of entity tags: only if none is the
        /// animal's.
        #[oai(name = "If-None-Match")]
        _if_none_match: Header<Option<String>>,
        request: &poem::Request,
    ) -> Result<UpdatePetOk, OperationError<UpdatePetErrors>> {
        let id = parse_pet_id(pet_id.0.as_str())?;
        RepeatedJsonKey::refuse(request)?;
        let context = ParseContext { now: state.clock.now() };
        let patch = body.into_inner().into_inner()?.into_patch(&context)?;
        let change = |expected| state.pets.update(id, patch.clone(), expected);
        let pet = conditionally(&state, id, request, change).await?;
        let tag = pet_tag(&pet);
        Ok(UpdatePetOk::Ok(JsonBody(pet.into()), tag))
    }

    /// [experimental] Remove an animal
    ///
    /// Removes the animal from the catalogue: afterwards getPet, updatePet and deletePet
    /// answer 404, listPets never shows it and its id is never given to another animal;
    /// closed orders that name it stay readable. An animal that an open order holds cannot
    /// be removed (409). With `If-Match`, it is removed only if still as the client read it.
    #[oai(path = "/pets/:petId", method = "delete", operation_id = "deletePet")]
    async fn delete_pet(
        &self,
        _key: BearerKey,
        state: Data<&AppState>,
        /// The id of the animal.
        #[oai(name = "petId")]
        pet_id: Path<RawParam<i64>>,
        /// The `ETag` of the animal as you read it, or `*` for any: it is removed only while
        /// unchanged.
        #[oai(name = "If-Match")]
        _if_match: Header<Option<RawParam<EntityTagsSchema>>>,
        /// `*`: remove it only if it does not exist, which is never so: `412` whenever it
        /// exists. A list of entity tags: only if none is the animal's.
        #[oai(name = "If-None-Match")]
        _if_none_match: Header<Option<String>>,
        request: &poem::Request,
    ) -> Result<DeletePetOk, OperationError<DeletePetErrors>> {
        let id = parse_pet_id(pet_id.0.as_str())?;
        conditionally(&state, id, request, |expected| state.pets.remove(id, expected)).await?;
        Ok(DeletePetOk::Removed)
    }
}

fn parse_pet_id(raw: &str) -> Result<PetId, ApiError> {
    raw.parse::<i64>().map(PetId::new).map_err(|_| {
        ApiError::invalid_request(format!("petId must be an int64 integer, got {:?}", excerpt(raw)))
    })
}

/// A stored createPet answer sent, the first time or `replayed`, with the `ETag` of the
/// animal it carries.
fn sent(answer: &StoredAnswer, replayed: bool) -> poem::Response {
    let answer = decode(answer);
    let mut response = send(&answer, replayed);
    if answer.status == StatusCode::CREATED
        && let Ok(tag) = HeaderValue::try_from(etag::of(answer.body, None))
    {
        response.headers_mut().insert(header::ETAG, tag);
    }
    response
}

/// The query of `ids` for a `Link` to the next page: `&id=3&id=7`.
fn ids_query(ids: &PetIds) -> String {
    ids.after(None).iter().map(|id| format!("&id={id}")).collect::<Vec<_>>().concat()
}

/// The address of a pet.
fn location(pet: &Pet) -> String {
    format!("/v1/pets/{}", pet.id)
}

/// The answer of a keyed `createPet` that added `pet`, stored for the retries with its key.
pub(crate) fn created_answer(pet: &Pet) -> StoredAnswer {
    let body = serde_json::to_vec(&PetBody::from(pet.clone())).unwrap_or_default();
    encode(StatusCode::CREATED, Some(&location(pet)), &body)
}
