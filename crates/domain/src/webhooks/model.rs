//! Webhook endpoints: where an owner's events are pushed (`docs/webhooks.md`). An endpoint
//! has an address the service may call (see [`WebhookUrl`]), the event types it wants, a
//! status, and the secret its deliveries are signed with.

use std::collections::BTreeSet;
use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Utc};
use rand::RngCore as _;
use thiserror::Error;

use crate::events::model::EventType;
use crate::keys::model::KeyId;
pub use crate::webhooks::url::{MAX_URL_LEN, WebhookUrl, WebhookUrlError, is_refused_address};

/// The most endpoints one owner may have.
pub const MAX_ENDPOINTS: usize = 16;

/// The identifier the store assigns to an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EndpointId(i64);

impl EndpointId {
    /// Wraps an id as stored or as sent by a client; ids never assigned find nothing.
    pub const fn new(id: i64) -> Self {
        Self(id)
    }

    /// The id as an integer.
    pub const fn get(self) -> i64 {
        self.0
    }
}

impl fmt::Display for EndpointId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Whether an endpoint gets deliveries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EndpointStatus {
    /// Deliveries are made.
    Enabled,
    /// No delivery is made; what is pending waits until it is enabled again. The service
    /// disables an endpoint whose every attempt failed for 3 days.
    Disabled,
}

/// Why an endpoint is disabled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DisabledReason {
    /// Its owner disabled it: enabling it resumes what waits.
    Owner,
    /// Every attempt to it failed for 3 days: its owner may enable it again.
    Failing,
    /// An operator disabled it (`animal-store webhooks disable`): for good, what waits is
    /// dropped.
    Operator,
    /// Its owner's rotation chain has no live key left (revoked or expired): for good, what
    /// waits is dropped.
    KeyEnded,
}

impl DisabledReason {
    /// Every reason, in the order above.
    pub const ALL: [Self; 4] = [Self::Owner, Self::Failing, Self::Operator, Self::KeyEnded];

    /// The reason as the store and the operators' commands write it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Owner => "owner",
            Self::Failing => "failing",
            Self::Operator => "operator",
            Self::KeyEnded => "key_ended",
        }
    }

    /// The reason `text` names, as stored.
    pub fn stored(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|reason| reason.as_str() == text)
    }

    /// Whether it is for good: the owner cannot enable the endpoint again, and what waits
    /// for it is dropped.
    pub const fn is_final(self) -> bool {
        matches!(self, Self::Operator | Self::KeyEnded)
    }
}

/// A string that names no endpoint status.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("status must be one of enabled, disabled, got {0:?}")]
pub struct EndpointStatusError(pub String);

impl EndpointStatus {
    /// The status as the API and the store write it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Enabled => "enabled",
            Self::Disabled => "disabled",
        }
    }
}

impl std::str::FromStr for EndpointStatus {
    type Err = EndpointStatusError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "enabled" => Ok(Self::Enabled),
            "disabled" => Ok(Self::Disabled),
            other => Err(EndpointStatusError(crate::excerpt(other))),
        }
    }
}

/// The event types an endpoint wants: every type (`"*"`), or a set of them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EventSelection(Option<BTreeSet<EventType>>);

/// A list of event types that selects nothing, or names an unknown type.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EventSelectionError {
    /// The list is empty.
    #[error("events must name at least one event type, or \"*\" for every type")]
    Empty,
    /// An element names no event type.
    #[error(
        "events: {0:?} is not an event type: use pet.created, pet.updated, pet.deleted, \
         order.placed, order.updated or \"*\""
    )]
    Unknown(String),
}

impl EventSelection {
    /// Every event type.
    pub const EVERY: Self = Self(None);

    /// The selection a list of names makes: `"*"` anywhere in it selects every type.
    ///
    /// # Errors
    ///
    /// [`EventSelectionError`] for an empty list or an unknown name.
    pub fn parse<'a>(
        names: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self, EventSelectionError> {
        let mut types = BTreeSet::new();
        let mut every = false;
        for name in names {
            if name == "*" {
                every = true;
            } else {
                let kind = name
                    .parse::<EventType>()
                    .map_err(|_| EventSelectionError::Unknown(crate::excerpt(name)))?;
                types.insert(kind);
            }
        }
        match (every, types.is_empty()) {
            (true, _) => Ok(Self::EVERY),
            (false, true) => Err(EventSelectionError::Empty),
            (false, false) => Ok(Self(Some(types))),
        }
    }

    /// Whether it selects events of `kind`.
    pub fn includes(&self, kind: EventType) -> bool {
        self.0.as_ref().is_none_or(|types| types.contains(&kind))
    }

    /// The names it selects, as the API lists them: `["*"]` for every type.
    pub fn names(&self) -> Vec<&'static str> {
        match &self.0 {
            None => vec!["*"],
            Some(types) => types.iter().map(|kind| kind.as_str()).collect(),
        }
    }
}

/// The secret an endpoint's deliveries are signed with: 24 random bytes, written
/// `whsec_<base64>` as Standard Webhooks writes secrets.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookSecret(Vec<u8>);

/// A stored secret that is not `whsec_` and the base64 of some bytes.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("a webhook secret must be whsec_ and base64")]
pub struct WebhookSecretError;

impl WebhookSecret {
    /// How many random bytes a new secret has.
    pub const LEN: usize = 24;

    /// A new random secret.
    pub fn generate() -> Self {
        let mut bytes = vec![0_u8; Self::LEN];
        rand::rng().fill_bytes(&mut bytes);
        Self(bytes)
    }

    /// The secret `text` writes (`whsec_<base64>`).
    ///
    /// # Errors
    ///
    /// [`WebhookSecretError`] when it is not written so.
    pub fn parse(text: &str) -> Result<Self, WebhookSecretError> {
        let encoded = text.strip_prefix("whsec_").ok_or(WebhookSecretError)?;
        let bytes = STANDARD.decode(encoded).map_err(|_| WebhookSecretError)?;
        if bytes.is_empty() {
            return Err(WebhookSecretError);
        }
        Ok(Self(bytes))
    }

    /// The bytes deliveries are signed with.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    /// The secret as shown once to its owner and stored: `whsec_<base64>`.
    pub fn expose(&self) -> String {
        format!("whsec_{}", STANDARD.encode(&self.0))
    }
}

impl fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WebhookSecret(..)")
    }
}

/// An endpoint as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Its id.
    pub id: EndpointId,
    /// Whose it is: the owner of the key that registered it (its rotation chain).
    pub owner: KeyId,
    /// Where deliveries go.
    pub url: WebhookUrl,
    /// Which events it gets.
    pub events: EventSelection,
    /// Whether it gets them now.
    pub status: EndpointStatus,
    /// Why it is disabled, when it is and the reason is known (an endpoint disabled by a
    /// binary before reasons were kept has none).
    pub disabled_reason: Option<DisabledReason>,
    /// What its deliveries are signed with.
    pub secret: WebhookSecret,
    /// When it was registered, to the second.
    pub created_at: DateTime<Utc>,
}

/// An endpoint to register.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEndpoint {
    /// Whose it is.
    pub owner: KeyId,
    /// Where deliveries go.
    pub url: WebhookUrl,
    /// Which events it gets.
    pub events: EventSelection,
    /// What its deliveries are signed with.
    pub secret: WebhookSecret,
    /// When it is registered, to the second.
    pub at: DateTime<Utc>,
}

impl NewEndpoint {
    /// The endpoint this becomes once the store gives it `id`: enabled.
    pub fn registered(self, id: EndpointId) -> Endpoint {
        let Self { owner, url, events, secret, at } = self;
        Endpoint {
            id,
            owner,
            url,
            events,
            status: EndpointStatus::Enabled,
            disabled_reason: None,
            secret,
            created_at: at,
        }
    }
}

/// A change to an endpoint: the fields it names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndpointPatch {
    /// A new address.
    pub url: Option<WebhookUrl>,
    /// New event types.
    pub events: Option<EventSelection>,
    /// Enabled or disabled: enabling resumes the deliveries that wait.
    pub status: Option<EndpointStatus>,
}

impl EndpointPatch {
    /// `endpoint` with this patch applied, by its owner: an endpoint it disables is
    /// disabled by its owner, one it enables has no reason left.
    /// An endpoint disabled for good stays disabled (see [`EndpointPatch::allowed_on`]).
    pub fn apply(self, endpoint: &Endpoint) -> Endpoint {
        let enables = self.status == Some(EndpointStatus::Enabled);
        let status = if enables && !self.allowed_on(endpoint) { None } else { self.status };
        let Self { url, events, status: _ } = self;
        let disabled_reason = match status {
            None => endpoint.disabled_reason,
            Some(EndpointStatus::Enabled) => None,
            Some(EndpointStatus::Disabled) if endpoint.status == EndpointStatus::Disabled => {
                endpoint.disabled_reason
            }
            Some(EndpointStatus::Disabled) => Some(DisabledReason::Owner),
        };
        Endpoint {
            url: url.unwrap_or_else(|| endpoint.url.clone()),
            events: events.unwrap_or_else(|| endpoint.events.clone()),
            status: status.unwrap_or(endpoint.status),
            disabled_reason,
            ..endpoint.clone()
        }
    }

    /// Whether the owner may make this change to `endpoint`: not enable one disabled for
    /// good (see [`DisabledReason::is_final`]).
    pub fn allowed_on(&self, endpoint: &Endpoint) -> bool {
        self.status != Some(EndpointStatus::Enabled)
            || !endpoint.disabled_reason.is_some_and(DisabledReason::is_final)
    }
}

/// Why an endpoint was not registered.
#[derive(Debug, Error)]
pub enum CreateEndpointError {
    /// The owner has [`MAX_ENDPOINTS`] already.
    #[error("an owner may have at most 16 webhook endpoints; delete one first")]
    TooMany,
    /// The store failed.
    #[error(transparent)]
    Repository(#[from] crate::repository_error::RepositoryError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selections_and_secrets_read_back() {
        assert_eq!(EventSelection::parse(["*", "pet.created"]), Ok(EventSelection::EVERY));
        let some = EventSelection::parse(["order.placed", "pet.created"]).expect("two types");
        assert_eq!(some.names(), ["pet.created", "order.placed"]);
        assert!(some.includes(EventType::OrderPlaced) && !some.includes(EventType::PetDeleted));
        assert_eq!(EventSelection::parse([]), Err(EventSelectionError::Empty));
        assert!(matches!(
            EventSelection::parse(["pet.born"]),
            Err(EventSelectionError::Unknown(_))
        ));
        let secret = WebhookSecret::generate();
        assert_eq!(secret.bytes().len(), WebhookSecret::LEN);
        assert_eq!(WebhookSecret::parse(&secret.expose()), Ok(secret.clone()));
        assert!(secret.expose().starts_with("whsec_"));
        assert_eq!(WebhookSecret::parse("nope"), Err(WebhookSecretError));
    }
}
