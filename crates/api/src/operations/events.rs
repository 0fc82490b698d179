//! The `events` operations (experimental): what changed in the catalogue and in the caller's
//! orders, in the order it committed (`docs/webhooks.md`). A client polls `listEvents` with
//! the last id it saw as `after`, and misses none.

use animal_store_domain::{EventId, EventListing, EventType, GetEventError, excerpt};
use poem::web::Data;
use poem_openapi::param::{Header, Path, Query};
use poem_openapi::{ApiResponse, OpenApi, Tags};

use crate::error::{ApiError, ErrorCode, ErrorSet, OperationError};
use crate::operations::state::AppState;
use crate::wire::auth::BearerKey;
use crate::wire::duplicates::refuse_repeated_parameters;
use crate::wire::events::{EventBody, EventIdSchema, EventTypeDto};
use crate::wire::json::JsonBody;
use crate::wire::listing::listing;
use crate::wire::params::{PageSizeSchema, RawParam};

#[derive(Tags)]
enum Tag {
    /// Events: every change to the animals and to the caller's orders, in the order it was
    /// made, kept 30 days unless the service is configured otherwise.
    #[oai(rename = "events")]
    Events,
}

#[derive(ApiResponse)]
enum ListEventsOk {
    /// A page of the caller's events, oldest first.
    #[oai(status = 200)]
    Ok(
        JsonBody<Vec<EventBody>>,
        /// `<...>; rel="next"` (RFC 8288): the next page, with the same `limit` and `type`.
        /// Absent on the last page.
        #[oai(header = "Link")]
        Option<String>,
    ),
}

#[derive(ApiResponse)]
enum EventOk {
    /// The event.
    #[oai(status = 200)]
    Ok(JsonBody<EventBody>),
}

const UNAUTHORIZED: (ErrorCode, &str) = (ErrorCode::Unauthorized, "Missing or invalid API key.");
const INTERNAL: (ErrorCode, &str) = (ErrorCode::InternalError, "The server failed.");
const UNAVAILABLE: (ErrorCode, &str) =
    (ErrorCode::ServiceUnavailable, "The store is temporarily unavailable.");

struct ListEventsErrors;
impl ErrorSet for ListEventsErrors {
    const RESPONSES: &'static [(ErrorCode, &'static str)] = &[
        (
            ErrorCode::ValidationFailed,
            "`limit` outside 1..=100, a negative `after` or an unknown `type` \
             (`validation_failed`); a `limit` or an `after` that is not an integer, or a \
             parameter given twice (`invalid_request`).",
        ),
        UNAUTHORIZED,
        INTERNAL,
        UNAVAILABLE,
    ];
}

struct GetEventErrors;
impl ErrorSet for GetEventErrors {
    const RESPONSES: &'static [(ErrorCode, &'static str)] = &[
        (ErrorCode::InvalidRequest, "`eventId` is not an integer."),
        UNAUTHORIZED,
        (
            ErrorCode::NotFound,
            "The caller sees no event with this id: none has it, it is past the retention (30 days by default), or \
             it is another key's order's.",
        ),
        INTERNAL,
        UNAVAILABLE,
    ];
}

/// The `events` operations. They hold no state.
pub struct EventsApi;

#[OpenApi(tag = "Tag::Events")]
impl EventsApi {
    /// [experimental] List events
    ///
    /// Returns the caller's events oldest first: every animal's, and those of the caller's
    /// own orders. Poll with the id of the last event you saw as `after`: you never miss an
    /// event and never see one twice, however many instances of the service write at once
    /// (an event is listed only once no event of a smaller id can still be written).
    #[oai(path = "/events", method = "get", operation_id = "listEvents")]
    #[expect(
        clippy::too_many_arguments,
        reason = "poem-openapi takes each parameter of an operation as an argument"
    )]
    async fn list_events(
        &self,
        key: BearerKey,
        state: Data<&AppState>,
        /// Returns only the events after this one: the id of the last event you saw. From
        /// the oldest event kept when omitted.
        after: Query<Option<RawParam<EventIdSchema>>>,
        /// Maximum number of events returned: 1 to 100, 20 when omitted.
        limit: Query<Option<RawParam<PageSizeSchema>>>,
        /// Returns only events of this type.
        #[oai(name = "type")]
        kind: Query<Option<RawParam<EventTypeDto>>>,
        /// The `ETag` of an answer you have: if the answer is still the same (no new event),
        /// it is `304 Not Modified`, without a body, and spends nothing of the key's daily
        /// quota.
        #[oai(name = "If-None-Match")]
        _if_none_match: Header<Option<String>>,
        request: &poem::Request,
    ) -> Result<ListEventsOk, OperationError<ListEventsErrors>> {
        refuse_repeated_parameters(request.uri().query(), &["after", "limit", "type"])?;
        let mut listing: EventListing = listing(
            limit.0.as_ref().map(RawParam::as_str),
            kind.0.as_ref().map(RawParam::as_str),
            None,
            EventId::new,
        )?;
        listing.after = after.0.as_ref().map(|raw| parse_after(raw.as_str())).transpose()?;
        let page = state.events.list(&key.0.owner, listing).await?;
        let next = page.next_after.map(|after| next_link(&listing, after));
        Ok(ListEventsOk::Ok(JsonBody(page.items.into_iter().map(EventBody::from).collect()), next))
    }

    /// [experimental] Get an event
    ///
    /// Returns one event: an animal's, or one of the caller's orders'. Another key's order's
    /// event is 404, as if it did not exist.
    #[oai(path = "/events/:eventId", method = "get", operation_id = "getEvent")]
    async fn get_event(
        &self,
        key: BearerKey,
        state: Data<&AppState>,
        /// The id of the event.
        #[oai(name = "eventId")]
        event_id: Path<RawParam<i64>>,
        /// The `ETag` of an answer you have: if the answer is still the same, it is `304 Not
        /// Modified`, without a body, and spends nothing of the key's daily quota.
        #[oai(name = "If-None-Match")]
        _if_none_match: Header<Option<String>>,
    ) -> Result<EventOk, OperationError<GetEventErrors>> {
        let raw = event_id.0.as_str();
        let id = raw.parse::<i64>().map(EventId::new).map_err(|_| {
            ApiError::invalid_request(format!(
                "eventId must be an int64 integer, got {:?}",
                excerpt(raw)
            ))
        })?;
        let event = state.events.get(&key.0.owner, id).await?;
        Ok(EventOk::Ok(JsonBody(event.into())))
    }
}

/// `after`: `invalid_request` when it is not an integer, `validation_failed` when negative.
fn parse_after(raw: &str) -> Result<EventId, ApiError> {
    let id = raw.parse::<i64>().map_err(|_| {
        ApiError::invalid_request(format!("after must be an int64 integer, got {:?}", excerpt(raw)))
    })?;
    if id < 0 {
        return Err(ApiError::validation_failed(format!(
            "after must be an event id, 0 or more, got {id}"
        )));
    }
    Ok(EventId::new(id))
}

/// The `Link` header of the page after the event `after` of `listing`.
fn next_link(listing: &EventListing, after: EventId) -> String {
    let kind = listing.filter.map(|kind: EventType| format!("&type={kind}")).unwrap_or_default();
    format!("</v1/events?limit={}{kind}&after={after}>; rel=\"next\"", listing.size.get())
}

impl From<GetEventError> for ApiError {
    fn from(err: GetEventError) -> Self {
        match err {
            GetEventError::NotFound(id) => {
                Self::new(ErrorCode::NotFound, format!("no event has id {id}"))
            }
            GetEventError::Repository(err) => err.into(),
        }
    }
}
