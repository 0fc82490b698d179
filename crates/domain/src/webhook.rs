//! Webhook endpoints: where an owner's events are pushed (`docs/webhooks.md`). An endpoint
//! has an address the service may call (see [`WebhookUrl`]), the event types it wants, a
//! status, and the secret its deliveries are signed with.

use std::collections::BTreeSet;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Utc};
use rand::RngCore as _;
use thiserror::Error;

use crate::api_key::KeyId;
use crate::event::EventType;

/// The most endpoints one owner may have.
pub const MAX_ENDPOINTS: usize = 16;

/// The longest address an endpoint may have, in bytes.
pub const MAX_URL_LEN: usize = 2048;

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

/// Whether the service may deliver to an address: never, in production, to the machine
/// itself or a network only it can reach (the cloud's metadata service included).
pub fn is_refused_address(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_refused_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_refused_v4(v4),
            None => is_refused_v6(v6),
        },
    }
}

fn is_refused_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_unspecified()
        || ip.is_broadcast()
        // "This network" (0.0.0.0/8), carrier-grade NAT (100.64.0.0/10), reserved (240/4).
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || a >= 240
}

fn is_refused_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    ip.is_loopback()
        || ip.is_multicast()
        || ip.is_unspecified()
        // Unique local (fc00::/7) and link-local (fe80::/10).
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        // IPv4-compatible (::/96, deprecated) and NAT64 (64:ff9b::/96) addresses reach IPv4.
        || ip.to_ipv4().is_some_and(is_refused_v4)
        || (ip.segments()[..6] == [0x64, 0xff9b, 0, 0, 0, 0]
            && is_refused_v4(embedded_v4(ip)))
}

/// The IPv4 address in the last 32 bits of `ip`.
fn embedded_v4(ip: Ipv6Addr) -> Ipv4Addr {
    let [.., a, b, c, d] = ip.octets();
    Ipv4Addr::new(a, b, c, d)
}

/// An endpoint's address, checked for what can be checked without the network: an absolute
/// `https` URL (or `http` where private addresses are allowed), without userinfo, at most
/// [`MAX_URL_LEN`] bytes, whose host, when it is an IP address, is not refused (see
/// [`is_refused_address`]). A host name is checked where it is resolved: at registration and
/// at every attempt, on the address actually connected to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WebhookUrl(String);

/// Why an address is refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WebhookUrlError {
    /// Too long.
    #[error("url must be at most 2048 bytes, got {0}")]
    TooLong(usize),
    /// Not an absolute URL.
    #[error("url must be an absolute URL: {0}")]
    Malformed(String),
    /// Not http(s), or http where https is required.
    #[error("url must use https, got {0}:")]
    Scheme(String),
    /// A user name or password in the address.
    #[error("url must not carry a user name or password")]
    Userinfo,
    /// No host.
    #[error("url must name a host")]
    NoHost,
    /// The host is, or resolves to, an address the service does not call.
    #[error("{}", refused(host, *address))]
    RefusedAddress {
        /// The host as written.
        host: String,
        /// The address it is or resolves to.
        address: IpAddr,
    },
    /// The host name does not resolve.
    #[error("url: the host {0} does not resolve")]
    Unresolved(String),
}

/// The message of [`WebhookUrlError::RefusedAddress`].
fn refused(host: &str, address: IpAddr) -> String {
    let what = "a loopback, private, link-local, shared or reserved address, which the service \
                does not call";
    if host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>().is_ok() {
        format!("url: {host} is {what}")
    } else {
        format!("url: {host} resolves to {address}, {what}")
    }
}

impl WebhookUrl {
    /// Checks `text`; `allow_private` admits `http` and every address (for tests and local
    /// development).
    ///
    /// # Errors
    ///
    /// [`WebhookUrlError`] naming the first problem.
    pub fn parse(text: &str, allow_private: bool) -> Result<Self, WebhookUrlError> {
        if text.len() > MAX_URL_LEN {
            return Err(WebhookUrlError::TooLong(text.len()));
        }
        let url = url::Url::parse(text)
            .map_err(|e| WebhookUrlError::Malformed(format!("{e}: {:?}", crate::excerpt(text))))?;
        match url.scheme() {
            "https" => {}
            "http" if allow_private => {}
            other => return Err(WebhookUrlError::Scheme(crate::excerpt(other))),
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(WebhookUrlError::Userinfo);
        }
        let literal = match url.host() {
            None => return Err(WebhookUrlError::NoHost),
            Some(url::Host::Domain(_)) => None,
            Some(url::Host::Ipv4(v4)) => Some(IpAddr::V4(v4)),
            Some(url::Host::Ipv6(v6)) => Some(IpAddr::V6(v6)),
        };
        if let Some(address) = literal.filter(|&ip| !allow_private && is_refused_address(ip)) {
            let host = url.host_str().unwrap_or_default().to_owned();
            return Err(WebhookUrlError::RefusedAddress { host, address });
        }
        Ok(Self(url.into()))
    }

    /// An address as stored, checked when it was registered.
    pub fn stored(text: &str) -> Self {
        Self(text.to_owned())
    }

    /// The address, normalised (`HTTPS://Example.com` is `https://example.com/`).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// An endpoint as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Its id.
    pub id: EndpointId,
    /// Whose it is: the owner of the key that registered it (its line of rotations).
    pub owner: KeyId,
    /// Where deliveries go.
    pub url: WebhookUrl,
    /// Which events it gets.
    pub events: EventSelection,
    /// Whether it gets them now.
    pub status: EndpointStatus,
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
    /// `endpoint` with this patch applied.
    pub fn apply(self, endpoint: &Endpoint) -> Endpoint {
        let Self { url, events, status } = self;
        Endpoint {
            url: url.unwrap_or_else(|| endpoint.url.clone()),
            events: events.unwrap_or_else(|| endpoint.events.clone()),
            status: status.unwrap_or(endpoint.status),
            ..endpoint.clone()
        }
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

    fn refused(text: &str) -> bool {
        matches!(WebhookUrl::parse(text, false), Err(WebhookUrlError::RefusedAddress { .. }))
    }

    #[test]
    fn addresses_the_service_must_not_call_are_refused_in_every_spelling() {
        for text in [
            "https://127.0.0.1/",
            "https://127.1/",
            "https://2130706433/",
            "https://0x7f000001/",
            "https://0177.0.0.1/",
            "https://[::1]/",
            "https://0.0.0.0/",
            "https://169.254.169.254/latest/meta-data",
            "https://10.0.0.1/",
            "https://172.16.5.4/",
            "https://192.168.1.1/",
            "https://100.64.0.1/",
            "https://224.0.0.1/",
            "https://[::ffff:10.0.0.1]/",
            "https://[::ffff:7f00:1]/",
            "https://[fd00::1]/",
            "https://[fe80::1]/",
            "https://[64:ff9b::a00:1]/",
        ] {
            assert!(refused(text), "{text}: {:?}", WebhookUrl::parse(text, false));
        }
        for text in ["https://93.184.215.14/", "https://[2606:4700::1111]/", "https://example.com/"]
        {
            assert!(WebhookUrl::parse(text, false).is_ok(), "{text}");
        }
        assert!(WebhookUrl::parse("http://127.0.0.1:8080/hook", true).is_ok());
    }

    #[test]
    fn malformed_addresses_are_named() {
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_LEN));
        assert!(matches!(WebhookUrl::parse(&long, false), Err(WebhookUrlError::TooLong(_))));
        assert!(matches!(WebhookUrl::parse("/hook", false), Err(WebhookUrlError::Malformed(_))));
        assert!(matches!(
            WebhookUrl::parse("http://example.com/", false),
            Err(WebhookUrlError::Scheme(_))
        ));
        assert!(matches!(
            WebhookUrl::parse("ftp://example.com/", true),
            Err(WebhookUrlError::Scheme(_))
        ));
        assert_eq!(
            WebhookUrl::parse("https://user:pw@example.com/", false),
            Err(WebhookUrlError::Userinfo)
        );
        assert_eq!(
            WebhookUrl::parse("HTTPS://Example.COM", false).map(|u| u.as_str().to_owned()),
            Ok("https://example.com/".to_owned())
        );
    }

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
