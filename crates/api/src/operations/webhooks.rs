//! The `webhooks` operations (experimental): the caller's webhook endpoints, where the
//! service posts its events signed as Standard Webhooks says, and the attempts made to
//! them (`docs/webhooks.md`).

use animal_store_domain::{AttemptId, AttemptListing, EndpointId, WebhookError, excerpt};
use poem::http::StatusCode;
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, OpenApi, Tags};

use crate::error::{ApiError, ErrorCode, ErrorSet, OperationError};
use crate::operations::state::AppState;
use crate::wire::auth::BearerKey;
use crate::wire::cursor::{decode_cursor, encode_cursor};
use crate::wire::duplicates::{RepeatedJsonKey, refuse_repeated_parameters};
use crate::wire::field::ParseContext;
use crate::wire::json::JsonBody;
use crate::wire::params::{CursorSchema, PageSizeSchema, RawParam, parse_page_size};
use crate::wire::webhooks::{
    CreatedEndpointBody, DeliveryBody, EndpointBody, EndpointUpdateBody, NewEndpointBody,
};

#[derive(Tags)]
enum Tag {
    /// Webhooks: the caller's endpoints, where the service posts each event, signed.
    #[oai(rename = "webhooks")]
    Webhooks,
}

#[derive(ApiResponse)]
enum CreatedOk {
    /// Endpoint registered, with its secret, shown this once.
    #[oai(status = 201)]
    Created(
        JsonBody<CreatedEndpointBody>,
        /// The address of the new endpoint: `/v1/webhook_endpoints/{id}`.
        #[oai(header = "Location")]
        String,
    ),
}

#[derive(ApiResponse)]
enum EndpointsOk {
    /// The caller's endpoints, oldest first.
    #[oai(status = 200)]
    Ok(JsonBody<Vec<EndpointBody>>),
}

#[derive(ApiResponse)]
enum EndpointOk {
    /// The endpoint.
    #[oai(status = 200)]
    Ok(JsonBody<EndpointBody>),
}

#[derive(ApiResponse)]
enum DeletedOk {
    /// Endpoint removed, with the deliveries that waited for it. No body.
    #[oai(status = 204)]
    Removed,
}

#[derive(ApiResponse)]
enum DeliveriesOk {
    /// A page of the attempts made to the endpoint, newest first.
    #[oai(status = 200)]
    Ok(
        JsonBody<Vec<DeliveryBody>>,
        /// `<...>; rel="next"` (RFC 8288): the next page, older attempts, with the same
        /// `limit`. Absent on the last page.
        #[oai(header = "Link")]
        Option<String>,
    ),
}

const UNAUTHORIZED: (ErrorCode, &str) = (ErrorCode::Unauthorized, "Missing or invalid API key.");
const INTERNAL: (ErrorCode, &str) = (ErrorCode::InternalError, "The server failed.");
const UNAVAILABLE: (ErrorCode, &str) =
    (ErrorCode::ServiceUnavailable, "The store is temporarily unavailable.");
const BAD_ID: (ErrorCode, &str) = (ErrorCode::InvalidRequest, "`endpointId` is not an integer.");
const NOT_FOUND: (ErrorCode, &str) = (
    ErrorCode::NotFound,
    "The caller has no endpoint with this id (another key's endpoint included).",
);
const TOO_LARGE: (ErrorCode, &str) =
    (ErrorCode::PayloadTooLarge, "The body is larger than 16 KiB.");
const NOT_JSON: (ErrorCode, &str) =
    (ErrorCode::UnsupportedMediaType, "The body is not `application/json`.");
const REFUSED: (ErrorCode, u16, &str) = (
    ErrorCode::ValidationFailed,
    422,
    "`url` is refused: not an absolute `https` URL, a user name or password in it, longer than \
     2,048 bytes once normalised, port 0, or a host that is not, or does not resolve only to, \
     public addresses; or the caller has 16 endpoints already.",
);

struct CreateErrors;
impl ErrorSet for CreateErrors {
    const RESPONSES: &'static [(ErrorCode, &'static str)] = &[
        (
            ErrorCode::ValidationFailed,
            "`url` missing or not a string, or `events` not an array of event types \
             (`validation_failed`); the body is not a JSON object (`invalid_request`).",
        ),
        UNAUTHORIZED,
        TOO_LARGE,
        NOT_JSON,
        INTERNAL,
        UNAVAILABLE,
    ];
    const OTHER_STATUSES: &'static [(ErrorCode, u16, &'static str)] = &[REFUSED];
}

struct ListErrors;
impl ErrorSet for ListErrors {
    const RESPONSES: &'static [(ErrorCode, &'static str)] = &[UNAUTHORIZED, INTERNAL, UNAVAILABLE];
}

struct GetErrors;
impl ErrorSet for GetErrors {
    const RESPONSES: &'static [(ErrorCode, &'static str)] =
        &[BAD_ID, UNAUTHORIZED, NOT_FOUND, INTERNAL, UNAVAILABLE];
}

struct UpdateErrors;
impl ErrorSet for UpdateErrors {
    const RESPONSES: &'static [(ErrorCode, &'static str)] = &[
        (
            ErrorCode::ValidationFailed,
            "`url` not a string, `events` not an array of event types or `status` neither \
             `enabled` nor `disabled` (`validation_failed`); `endpointId` is not an integer, \
             or the body is not a JSON object (`invalid_request`).",
        ),
        UNAUTHORIZED,
        NOT_FOUND,
        (
            ErrorCode::Conflict,
            "`status` is `enabled`, and the service's operator disabled the endpoint: it stays \
             disabled.",
        ),
        TOO_LARGE,
        NOT_JSON,
        INTERNAL,
        UNAVAILABLE,
    ];
    const OTHER_STATUSES: &'static [(ErrorCode, u16, &'static str)] = &[REFUSED];
}

struct DeleteErrors;
impl ErrorSet for DeleteErrors {
    const RESPONSES: &'static [(ErrorCode, &'static str)] =
        &[BAD_ID, UNAUTHORIZED, NOT_FOUND, INTERNAL, UNAVAILABLE];
}

struct DeliveriesErrors;
impl ErrorSet for DeliveriesErrors {
    const RESPONSES: &'static [(ErrorCode, &'static str)] = &[
        (
            ErrorCode::ValidationFailed,
            "`limit` outside 1..=100 (`validation_failed`); a `limit` that is not an integer, a \
             malformed `cursor` or an `endpointId` that is not an integer (`invalid_request`).",
        ),
        UNAUTHORIZED,
        NOT_FOUND,
        INTERNAL,
        UNAVAILABLE,
    ];
}

/// The `webhooks` operations. They hold no state.
pub struct WebhooksApi;

#[OpenApi(tag = "Tag::Webhooks")]
impl WebhooksApi {
    /// [experimental] Register a webhook endpoint
    ///
    /// From now on, each event the caller sees (every animal's, and its own orders') of the
    /// types asked for is posted to `url`, signed with the secret this answer shows once. An
    /// event made before the endpoint existed is never posted to it. At most 16 endpoints.
    #[oai(path = "/webhook_endpoints", method = "post", operation_id = "createWebhookEndpoint")]
    async fn create_endpoint(
        &self,
        key: BearerKey,
        state: Data<&AppState>,
        body: Json<NewEndpointBody>,
        request: &poem::Request,
    ) -> Result<CreatedOk, OperationError<CreateErrors>> {
        RepeatedJsonKey::refuse(request)?;
        let context = ParseContext { now: state.clock.now() };
        let (url, events) = body.0.into_inner()?.into_parts(&context)?;
        let endpoint = state.webhooks.create(&key.0.owner, &url, Some(events)).await?;
        let location = format!("/v1/webhook_endpoints/{}", endpoint.id);
        Ok(CreatedOk::Created(JsonBody((&endpoint).into()), location))
    }

    /// [experimental] List webhook endpoints
    ///
    /// The caller's endpoints, oldest first, without their secrets.
    #[oai(path = "/webhook_endpoints", method = "get", operation_id = "listWebhookEndpoints")]
    async fn list_endpoints(
        &self,
        key: BearerKey,
        state: Data<&AppState>,
    ) -> Result<EndpointsOk, OperationError<ListErrors>> {
        let endpoints = state.webhooks.list(&key.0.owner).await?;
        Ok(EndpointsOk::Ok(JsonBody(endpoints.iter().map(EndpointBody::from).collect())))
    }

    /// [experimental] Get a webhook endpoint
    ///
    /// One of the caller's endpoints, without its secret. Another key's endpoint is 404.
    #[oai(
        path = "/webhook_endpoints/:endpointId",
        method = "get",
        operation_id = "getWebhookEndpoint"
    )]
    async fn get_endpoint(
        &self,
        key: BearerKey,
        state: Data<&AppState>,
        /// The id of the endpoint.
        #[oai(name = "endpointId")]
        endpoint_id: Path<RawParam<i64>>,
    ) -> Result<EndpointOk, OperationError<GetErrors>> {
        let id = parse_endpoint_id(endpoint_id.0.as_str())?;
        let endpoint = state.webhooks.get(&key.0.owner, id).await?;
        Ok(EndpointOk::Ok(JsonBody((&endpoint).into())))
    }

    /// [experimental] Update a webhook endpoint
    ///
    /// Changes the fields sent: `url` (checked as at registration), `events`, or `status`.
    /// Disabling stops the deliveries, which wait; enabling resumes them.
    #[oai(
        path = "/webhook_endpoints/:endpointId",
        method = "patch",
        operation_id = "updateWebhookEndpoint"
    )]
    async fn update_endpoint(
        &self,
        key: BearerKey,
        state: Data<&AppState>,
        /// The id of the endpoint.
        #[oai(name = "endpointId")]
        endpoint_id: Path<RawParam<i64>>,
        body: Json<EndpointUpdateBody>,
        request: &poem::Request,
    ) -> Result<EndpointOk, OperationError<UpdateErrors>> {
        let id = parse_endpoint_id(endpoint_id.0.as_str())?;
        RepeatedJsonKey::refuse(request)?;
        let context = ParseContext { now: state.clock.now() };
        let change = body.0.into_inner()?.into_change(&context)?;
        let endpoint = state.webhooks.update(&key.0.owner, id, change).await?;
        Ok(EndpointOk::Ok(JsonBody((&endpoint).into())))
    }

    /// [experimental] Remove a webhook endpoint
    ///
    /// Nothing more is posted to it; the deliveries that waited for it are dropped.
    #[oai(
        path = "/webhook_endpoints/:endpointId",
        method = "delete",
        operation_id = "deleteWebhookEndpoint"
    )]
    async fn delete_endpoint(
        &self,
        key: BearerKey,
        state: Data<&AppState>,
        /// The id of the endpoint.
        #[oai(name = "endpointId")]
        endpoint_id: Path<RawParam<i64>>,
    ) -> Result<DeletedOk, OperationError<DeleteErrors>> {
        let id = parse_endpoint_id(endpoint_id.0.as_str())?;
        state.webhooks.delete(&key.0.owner, id).await?;
        Ok(DeletedOk::Removed)
    }

    /// [experimental] List a webhook endpoint's deliveries
    ///
    /// The attempts made to one of the caller's endpoints, newest first: the event, which
    /// attempt it was, when, what came of it, and when the next is due.
    #[oai(
        path = "/webhook_endpoints/:endpointId/deliveries",
        method = "get",
        operation_id = "listWebhookDeliveries"
    )]
    async fn list_deliveries(
        &self,
        key: BearerKey,
        state: Data<&AppState>,
        /// The id of the endpoint.
        #[oai(name = "endpointId")]
        endpoint_id: Path<RawParam<i64>>,
        /// Maximum number of attempts returned: 1 to 100, 20 when omitted.
        limit: Query<Option<RawParam<PageSizeSchema>>>,
        /// Where the page starts: copy it from the `Link` header of the previous page. Opaque.
        cursor: Query<Option<RawParam<CursorSchema>>>,
        request: &poem::Request,
    ) -> Result<DeliveriesOk, OperationError<DeliveriesErrors>> {
        let id = parse_endpoint_id(endpoint_id.0.as_str())?;
        refuse_repeated_parameters(request.uri().query(), &["limit", "cursor"])?;
        let listing = AttemptListing {
            filter: None,
            size: limit
                .0
                .as_ref()
                .map(|raw| parse_page_size(raw.as_str()))
                .transpose()?
                .unwrap_or_default(),
            after: cursor
                .0
                .as_ref()
                .map(RawParam::as_str)
                .map(decode_cursor)
                .transpose()?
                .map(AttemptId::new),
        };
        let page = state.webhooks.attempts(&key.0.owner, id, listing).await?;
        let next = page.next_after.map(|after| {
            format!(
                "</v1/webhook_endpoints/{id}/deliveries?limit={}&cursor={}>; rel=\"next\"",
                listing.size.get(),
                encode_cursor(after.get())
            )
        });
        Ok(DeliveriesOk::Ok(
            JsonBody(page.items.into_iter().map(DeliveryBody::from).collect()),
            next,
        ))
    }
}

fn parse_endpoint_id(raw: &str) -> Result<EndpointId, ApiError> {
    raw.parse::<i64>().map(EndpointId::new).map_err(|_| {
        ApiError::invalid_request(format!(
            "endpointId must be an int64 integer, got {:?}",
            excerpt(raw)
        ))
    })
}

impl From<WebhookError> for ApiError {
    fn from(err: WebhookError) -> Self {
        let refused = |message: String| {
            Self::validation_failed(message).with_status(StatusCode::UNPROCESSABLE_ENTITY)
        };
        match err {
            WebhookError::Url(refusal) => refused(refusal.to_string()),
            WebhookError::TooMany => refused(err.to_string()),
            WebhookError::Events(problem) => Self::validation_failed(problem.to_string()),
            WebhookError::NotFound(id) => {
                Self::new(ErrorCode::NotFound, format!("no webhook endpoint has id {id}"))
            }
            WebhookError::DisabledForGood(_) => Self::new(ErrorCode::Conflict, err.to_string()),
            WebhookError::Repository(err) => err.into(),
        }
    }
}
