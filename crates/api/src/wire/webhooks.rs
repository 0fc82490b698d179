//! The bodies of the `webhooks` operations: `NewWebhookEndpoint` and `WebhookEndpointUpdate`
//! in requests, parsed as `createPet`'s are (every problem named with its field, unknown
//! fields ignored, `null` refused); `WebhookEndpoint`, `NewWebhookEndpointCreated` (with the
//! secret, shown once) and `WebhookDelivery` in responses.

use animal_store_domain::{Attempt, Endpoint, EndpointStatus, EventSelection, EventType, Outcome};
use poem_openapi::registry::{MetaSchema, MetaSchemaRef, Registry};
use poem_openapi::types::{ParseFromJSON, ParseResult, Type};
use poem_openapi::{Enum, Object};
use serde_json::Value;

use crate::error::ApiError;
use crate::wire::field::{BodyValue, Field, ParseContext, kind, object_body};
use crate::wire::params::Documented;
use crate::wire::time::Timestamp;

/// Whether an endpoint gets deliveries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum, serde::Serialize)]
#[oai(rename = "WebhookEndpointStatus", rename_all = "lowercase")]
#[serde(rename_all = "lowercase")]
pub enum EndpointStatusDto {
    /// Deliveries are made.
    Enabled,
    /// No delivery is made; those that wait are made once it is enabled again. The service
    /// disables an endpoint whose every attempt failed for 3 days.
    Disabled,
}

impl From<EndpointStatus> for EndpointStatusDto {
    fn from(status: EndpointStatus) -> Self {
        match status {
            EndpointStatus::Enabled => Self::Enabled,
            EndpointStatus::Disabled => Self::Disabled,
        }
    }
}

/// A webhook endpoint: where the service posts the owner's events, signed.
#[derive(Debug, Clone, PartialEq, Eq, Object, serde::Serialize)]
#[oai(rename = "WebhookEndpoint", rename_all = "camelCase")]
#[serde(rename_all = "camelCase")]
pub struct EndpointBody {
    /// Unique identifier assigned by the service.
    id: i64,
    /// Where deliveries are posted.
    url: String,
    /// The event types it gets; `["*"]` for every type.
    events: Vec<String>,
    /// Whether it gets deliveries now.
    status: EndpointStatusDto,
    /// When it was registered (RFC 3339, UTC, to the second).
    created_at: Timestamp,
}

impl From<&Endpoint> for EndpointBody {
    fn from(endpoint: &Endpoint) -> Self {
        // The secret is not shown again, nor the owner (the caller).
        let Endpoint {
            id,
            owner: _,
            url,
            events,
            status,
            disabled_reason: _,
            secret: _,
            created_at,
        } = endpoint;
        Self {
            id: id.get(),
            url: url.as_str().to_owned(),
            events: events.names().into_iter().map(str::to_owned).collect(),
            status: (*status).into(),
            created_at: Timestamp(*created_at),
        }
    }
}

/// A webhook endpoint just registered, with the secret its deliveries are signed with:
/// shown this once, keep it.
#[derive(Debug, Clone, PartialEq, Eq, Object, serde::Serialize)]
#[oai(rename = "NewWebhookEndpointCreated", rename_all = "camelCase")]
#[serde(rename_all = "camelCase")]
pub struct CreatedEndpointBody {
    /// Unique identifier assigned by the service.
    id: i64,
    /// Where deliveries are posted.
    url: String,
    /// The event types it gets; `["*"]` for every type.
    events: Vec<String>,
    /// `enabled`.
    status: EndpointStatusDto,
    /// When it was registered (RFC 3339, UTC, to the second).
    created_at: Timestamp,
    /// `whsec_` and the base64 of 24 random bytes: the key of the HMAC-SHA256 signatures of
    /// its deliveries (Standard Webhooks). Shown this once.
    secret: String,
}

impl From<&Endpoint> for CreatedEndpointBody {
    fn from(endpoint: &Endpoint) -> Self {
        let EndpointBody { id, url, events, status, created_at } = endpoint.into();
        Self { id, url, events, status, created_at, secret: endpoint.secret.expose() }
    }
}

/// What an attempt came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum, serde::Serialize)]
#[oai(rename = "WebhookDeliveryOutcome", rename_all = "snake_case")]
#[serde(rename_all = "snake_case")]
pub enum OutcomeDto {
    /// The endpoint answered 2xx: delivered.
    Delivered,
    /// The endpoint answered another status (a redirect included, which is not followed).
    HttpError,
    /// No complete answer within 10 seconds.
    Timeout,
    /// No connection, or it broke.
    ConnectionError,
    /// The host resolved to an address the service does not call.
    RefusedAddress,
    /// Not attempted, and never will be: the endpoint was disabled for good (the key's
    /// rotation chain ended, or the service's operator disabled it), or its backlog was full.
    Dropped,
}

impl From<Outcome> for OutcomeDto {
    fn from(outcome: Outcome) -> Self {
        match outcome {
            Outcome::Status(200..=299) => Self::Delivered,
            Outcome::Status(_) => Self::HttpError,
            Outcome::Timeout => Self::Timeout,
            Outcome::ConnectionError => Self::ConnectionError,
            Outcome::RefusedAddress => Self::RefusedAddress,
            Outcome::Dropped => Self::Dropped,
        }
    }
}

/// One attempt to deliver an event to an endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Object, serde::Serialize)]
#[oai(rename = "WebhookDelivery", rename_all = "camelCase")]
#[serde(rename_all = "camelCase")]
pub struct DeliveryBody {
    /// Unique identifier of the attempt; a later attempt has a greater one.
    id: i64,
    /// The event delivered: the `webhook-id` of the request.
    event_id: i64,
    /// Which attempt of this event it was: 1 for the first.
    attempt: i64,
    /// When it was made (RFC 3339, UTC, to the second).
    attempted_at: Timestamp,
    /// What it came to.
    outcome: OutcomeDto,
    /// The endpoint's HTTP status; absent when it did not answer.
    #[oai(skip_serializing_if_is_none)]
    #[serde(skip_serializing_if = "Option::is_none")]
    status_code: Option<i64>,
    /// When the next attempt is due; absent once delivered, or given up after about 3 days.
    #[oai(skip_serializing_if_is_none)]
    #[serde(skip_serializing_if = "Option::is_none")]
    next_attempt_at: Option<Timestamp>,
}

impl From<Attempt> for DeliveryBody {
    fn from(attempt: Attempt) -> Self {
        let Attempt { id, event, attempt, at, outcome, next_attempt_at } = attempt;
        Self {
            id: id.get(),
            event_id: event.get(),
            attempt: i64::from(attempt),
            attempted_at: Timestamp(at),
            outcome: outcome.into(),
            status_code: outcome.status().map(i64::from),
            next_attempt_at: next_attempt_at.map(Timestamp),
        }
    }
}

/// An endpoint's address, as the client sent it: checked by the service (see
/// `docs/webhooks.md`), whose refusal is a 422 naming `url`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlText(pub String);

impl BodyValue for UrlText {
    const REQUIRED: bool = true;

    fn schema() -> MetaSchemaRef {
        MetaSchemaRef::Inline(Box::new(MetaSchema {
            description: Some(
                "An absolute `https` URL (`http` only where the service allows private \
                 addresses), without a user name or password, at most 2,048 bytes once \
                 normalised, whose host is, or resolves only to, public addresses: globally \
                 reachable by IANA's special-purpose address registries.",
            ),
            max_length: Some(2048),
            ..MetaSchema::new("string")
        }))
    }

    fn from_json(name: &str, json: &Value, _: &ParseContext) -> Result<Self, String> {
        match json {
            Value::String(text) => Ok(Self(text.clone())),
            other => Err(format!("{name} must be a string, got {}", kind(other))),
        }
    }
}

/// An endpoint's event types, as the client sent them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventNames(pub Vec<String>);

impl BodyValue for EventNames {
    const REQUIRED: bool = false;

    fn schema() -> MetaSchemaRef {
        let mut names: Vec<Value> = vec!["*".into()];
        names.extend(EventType::ALL.map(|kind| Value::from(kind.as_str())));
        MetaSchemaRef::Inline(Box::new(MetaSchema {
            description: Some("The event types to deliver; `\"*\"` for every type (the default)."),
            items: Some(Box::new(MetaSchemaRef::Inline(Box::new(MetaSchema {
                enum_items: names,
                ..MetaSchema::new("string")
            })))),
            min_items: Some(1),
            ..MetaSchema::new("array")
        }))
    }

    fn absent() -> Option<Self> {
        Some(Self(vec!["*".to_owned()]))
    }

    fn from_json(name: &str, json: &Value, _: &ParseContext) -> Result<Self, String> {
        let Value::Array(items) = json else {
            return Err(format!("{name} must be an array of event types, got {}", kind(json)));
        };
        let names = items
            .iter()
            .map(|item| match item {
                Value::String(text) => Ok(text.clone()),
                other => Err(format!("{name} must hold strings, got {}", kind(other))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        EventSelection::parse(names.iter().map(String::as_str)).map_err(|e| e.to_string())?;
        Ok(Self(names))
    }
}

impl BodyValue for EndpointStatus {
    const REQUIRED: bool = true;

    fn schema() -> MetaSchemaRef {
        EndpointStatusDto::schema_ref()
    }

    fn register(registry: &mut Registry) {
        EndpointStatusDto::register(registry);
    }

    fn from_json(name: &str, json: &Value, _: &ParseContext) -> Result<Self, String> {
        match json {
            Value::String(text) => text.parse::<EndpointStatus>().map_err(|e| e.to_string()),
            other => Err(format!("{name} must be one of enabled, disabled; got {}", kind(other))),
        }
    }
}

/// An endpoint to register: where to post, and which event types.
#[derive(Debug, Object)]
#[oai(rename = "NewWebhookEndpoint", rename_all = "camelCase")]
pub struct NewEndpointSchema {
    url: Field<UrlText>,
    events: Field<EventNames>,
}

impl NewEndpointSchema {
    /// The address and the event types, or every problem with the body.
    pub fn into_parts(self, context: &ParseContext) -> Result<(String, Vec<String>), ApiError> {
        let (url, events) = (self.url.parse("url", context), self.events.parse("events", context));
        match (url, events) {
            (Ok(url), Ok(events)) => Ok((url.0, events.0)),
            (url, events) => {
                let problems: Vec<String> =
                    [url.err(), events.err()].into_iter().flatten().collect();
                Err(ApiError::validation_failed(problems.join("; ")))
            }
        }
    }
}

/// A `createWebhookEndpoint` body, documented as `NewWebhookEndpoint`.
pub type NewEndpointBody = Documented<NewEndpointSchema, Result<NewEndpointSchema, ApiError>>;

impl ParseFromJSON for NewEndpointBody {
    fn parse_from_json(value: Option<Value>) -> ParseResult<Self> {
        Ok(Self::new(object_body(value)))
    }
}

/// Changes to an endpoint: the fields sent take the values sent, checked as at
/// registration; the others keep theirs. Enabling a disabled endpoint resumes the
/// deliveries that wait.
#[derive(Debug, Object)]
#[oai(rename = "WebhookEndpointUpdate", rename_all = "camelCase")]
pub struct EndpointUpdateSchema {
    url: Field<Option<UrlText>>,
    events: Field<Option<EventNames>>,
    status: Field<Option<EndpointStatus>>,
}

impl EndpointUpdateSchema {
    /// The change, or every problem with the body.
    pub fn into_change(
        self,
        context: &ParseContext,
    ) -> Result<animal_store_domain::EndpointChange, ApiError> {
        let Self { url, events, status } = self;
        let (url, events, status) = crate::wire::field::all_three(
            url.parse("url", context),
            events.parse("events", context),
            status.parse("status", context),
        )?;
        Ok(animal_store_domain::EndpointChange {
            url: url.map(|url| url.0),
            events: events.map(|names| names.0),
            status,
        })
    }
}

/// An `updateWebhookEndpoint` body, documented as `WebhookEndpointUpdate`.
pub type EndpointUpdateBody =
    Documented<EndpointUpdateSchema, Result<EndpointUpdateSchema, ApiError>>;

impl ParseFromJSON for EndpointUpdateBody {
    fn parse_from_json(value: Option<Value>) -> ParseResult<Self> {
        Ok(Self::new(object_body(value)))
    }
}
