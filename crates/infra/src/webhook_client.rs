//! The webhook client: endpoint hosts resolved and checked, deliveries posted and signed.
//!
//! No server-side request forgery: an address the service must not call (one that is not
//! public, see [`is_refused_address`], or one of the machine's own interfaces, whose ports
//! its database and Redis may listen on) is refused when an endpoint is registered
//! ([`DnsAddressCheck`]) and at every attempt ([`HttpSender`]), where the check is made by
//! the client's own resolver on the very addresses it then connects to: a name that
//! resolved to a public address at registration and to a private one now is refused now,
//! and no second lookup can slip another address in between (DNS rebinding). An IP address
//! written in the URL is never resolved, so it is checked before the request.
//!
//! Deliveries follow Standard Webhooks 1.0, signed with the `standardwebhooks` crate. A
//! redirect is never followed (it is an answer like any other that is not 2xx); an attempt
//! has 10 seconds for its whole exchange, and at most 64 KiB of the answer's body is read,
//! then thrown away.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use animal_store_domain::{
    AddressCheck, Endpoint, EventId, Outcome, WebhookSender, WebhookUrl, WebhookUrlError,
    is_refused_address,
};
use async_trait::async_trait;
use chrono::Utc;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use thiserror::Error;

/// How long an attempt may take, from connecting to the end of the answer.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

/// How much of an answer's body is read.
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// The host of `url` and whether it is an IP address written in the URL.
fn host_of(url: &WebhookUrl) -> Option<(String, Option<IpAddr>)> {
    let parsed = url::Url::parse(url.as_str()).ok()?;
    let literal = match parsed.host()? {
        url::Host::Domain(_) => None,
        url::Host::Ipv4(v4) => Some(IpAddr::V4(v4)),
        url::Host::Ipv6(v6) => Some(IpAddr::V6(v6)),
    };
    Some((parsed.host_str()?.to_owned(), literal))
}

/// The addresses `host` resolves to.
async fn resolve(host: &str) -> std::io::Result<Vec<IpAddr>> {
    let found = tokio::net::lookup_host((host.trim_start_matches('[').trim_end_matches(']'), 0));
    Ok(found.await?.map(|address| address.ip()).collect())
}

/// The addresses of the machine's own interfaces, read afresh (interfaces come and go);
/// `None` when they cannot be read, and then no address is called.
fn own_addresses() -> Option<Vec<IpAddr>> {
    let interfaces = if_addrs::get_if_addrs().ok()?;
    Some(interfaces.into_iter().map(|interface| interface.ip().to_canonical()).collect())
}

/// Whether the service may call `ip`: public, and not one of the machine's own addresses
/// (`own`, see [`own_addresses`]).
fn callable(ip: IpAddr, own: Option<&[IpAddr]>) -> bool {
    !is_refused_address(ip) && own.is_some_and(|own| !own.contains(&ip.to_canonical()))
}

/// Checks endpoint addresses at registration: the host resolved, and refused when any of
/// its addresses may not be called, or when it does not resolve (one refusal for both: a
/// client learns nothing of what the operator's names resolve to).
#[derive(Debug, Clone, Copy, Default)]
pub struct DnsAddressCheck;

#[async_trait]
impl AddressCheck for DnsAddressCheck {
    async fn check(&self, url: &WebhookUrl) -> Result<(), WebhookUrlError> {
        let (host, literal) = host_of(url).ok_or(WebhookUrlError::NotPublic)?;
        let addresses = match literal {
            Some(ip) => vec![ip],
            None => resolve(&host).await.map_err(|_| WebhookUrlError::NotPublic)?,
        };
        let own = own_addresses();
        if addresses.is_empty() || !addresses.iter().all(|&ip| callable(ip, own.as_deref())) {
            return Err(WebhookUrlError::NotPublic);
        }
        Ok(())
    }
}

/// Every address a host resolved to was refused.
#[derive(Debug, Error)]
#[error("{0} resolves only to addresses the service does not call")]
struct Refused(String);

/// The client's resolver: the system's, keeping only the addresses that may be called.
#[derive(Debug)]
struct CheckedResolver;

impl Resolve for CheckedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let own = own_addresses();
            let allowed: Vec<SocketAddr> = resolve(&host)
                .await?
                .into_iter()
                .filter(|&ip| callable(ip, own.as_deref()))
                .map(|ip| SocketAddr::new(ip, 0))
                .collect();
            if allowed.is_empty() {
                return Err(Box::new(Refused(host)) as Box<dyn std::error::Error + Send + Sync>);
            }
            let addresses: Addrs = Box::new(allowed.into_iter());
            Ok(addresses)
        })
    }
}

/// Posts deliveries over HTTP(S).
#[derive(Debug, Clone)]
pub struct HttpSender {
    client: reqwest::Client,
    allow_private: bool,
}

/// The client could not be built (no TLS roots, say).
#[derive(Debug, Error)]
#[error("cannot build the webhook client: {0}")]
pub struct ClientError(#[from] reqwest::Error);

impl HttpSender {
    /// A client that calls only public addresses, none of the machine's own, unless
    /// `allow_private` (tests and local development), with the timeout
    /// [`ATTEMPT_TIMEOUT`].
    ///
    /// # Errors
    ///
    /// [`ClientError`] when the client cannot be built.
    pub fn new(allow_private: bool) -> Result<Self, ClientError> {
        Self::with_timeout(allow_private, ATTEMPT_TIMEOUT)
    }

    /// [`HttpSender::new`] with another timeout (`--webhook-timeout`).
    ///
    /// # Errors
    ///
    /// [`ClientError`] when the client cannot be built.
    pub fn with_timeout(allow_private: bool, timeout: Duration) -> Result<Self, ClientError> {
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .no_proxy()
            .user_agent(concat!("animal-store-webhooks/", env!("CARGO_PKG_VERSION")));
        if !allow_private {
            builder = builder.dns_resolver(Arc::new(CheckedResolver));
        }
        Ok(Self { client: builder.build()?, allow_private })
    }

    /// The answer's status, once at most [`MAX_ANSWER_BYTES`] of its body are read.
    async fn answer(mut response: reqwest::Response) -> Outcome {
        let status = response.status().as_u16();
        let mut read = 0;
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    read += chunk.len();
                    if read >= MAX_ANSWER_BYTES {
                        break;
                    }
                }
                Ok(None) => break,
                Err(err) if err.is_timeout() => return Outcome::Timeout,
                Err(_) => return Outcome::ConnectionError,
            }
        }
        Outcome::Status(status)
    }
}

/// What a failed request came to.
fn failure(err: &reqwest::Error) -> Outcome {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(cause) = source {
        if cause.is::<Refused>() {
            return Outcome::RefusedAddress;
        }
        source = cause.source();
    }
    if err.is_timeout() { Outcome::Timeout } else { Outcome::ConnectionError }
}

#[async_trait]
impl WebhookSender for HttpSender {
    async fn send(&self, endpoint: &Endpoint, event: EventId, body: &str) -> Outcome {
        let literal = host_of(&endpoint.url).and_then(|(_, literal)| literal);
        if !self.allow_private
            && literal.is_some_and(|ip| !callable(ip, own_addresses().as_deref()))
        {
            return Outcome::RefusedAddress;
        }
        let id = event.to_string();
        // The wall clock's, whatever clock the service runs on: receivers check it.
        let timestamp = Utc::now().timestamp();
        let signer = standardwebhooks::Webhook::from_bytes(endpoint.secret.bytes().to_vec());
        let Ok(signature) = signer.and_then(|signer| signer.sign(&id, timestamp, body.as_bytes()))
        else {
            return Outcome::ConnectionError;
        };
        let sent = self
            .client
            .post(endpoint.url.as_str())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("webhook-id", id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signature)
            .body(body.to_owned())
            .send()
            .await;
        match sent {
            Ok(response) => Self::answer(response).await,
            Err(err) => failure(&err),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use super::{callable, own_addresses};

    #[test]
    fn the_machines_own_addresses_are_never_called() {
        let public: IpAddr = "93.184.215.14".parse().expect("an address");
        assert!(callable(public, Some(&[])));
        assert!(!callable(public, Some(&[public])), "public, but the machine's own");
        let mapped: IpAddr = "::ffff:93.184.215.14".parse().expect("an address");
        assert!(!callable(mapped, Some(&[public])), "its IPv4-mapped form too");
        assert!(!callable(public, None), "interfaces that cannot be read: nothing is called");
        let own = own_addresses().expect("the interfaces");
        assert!(own.contains(&IpAddr::V4(Ipv4Addr::LOCALHOST)), "{own:?}");
    }
}
