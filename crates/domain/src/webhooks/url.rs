//! An endpoint's address, and the rule it must keep: an `https` URL the service may call,
//! whose host is, or resolves only to, globally reachable addresses (see
//! [`address`](crate::webhooks::address)) (`docs/webhooks.md`, "Addresses the service
//! refuses").

use std::net::IpAddr;

use thiserror::Error;

use crate::webhooks::address::is_global;

/// The longest address an endpoint may have, in bytes, as stored (normalised).
pub const MAX_URL_LEN: usize = 2048;

/// Whether the service may deliver to an address: never, in production, to one that is not
/// globally reachable (the machine itself, private networks, the cloud's metadata service,
/// documentation and benchmarking blocks...).
pub fn is_refused_address(ip: IpAddr) -> bool {
    !is_global(ip)
}

/// An endpoint's address, checked for what can be checked without the network: an absolute
/// `https` URL (or `http` where private addresses are allowed), without userinfo, at most
/// [`MAX_URL_LEN`] bytes as stored, whose host, when it is an IP address, is public (see
/// [`is_refused_address`]). A host name is checked where it is resolved: at registration and
/// at every attempt, on the address actually connected to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WebhookUrl(String);

/// Why an address is refused. The messages name the rule broken, never what a host
/// resolves to nor whether it resolves: a refusal tells a client nothing of the operator's
/// network.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WebhookUrlError {
    /// Too long, as stored.
    #[error("url must be at most 2048 bytes once normalised, got {0}")]
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
    /// Port 0, which nothing listens on.
    #[error("url must name a port from 1 to 65535, or none")]
    Port,
    /// The host is, or resolves to, an address that is not public, or does not resolve.
    #[error(
        "url: the host must resolve only to public addresses, which the service may call \
         (docs/webhooks.md, addresses the service refuses)"
    )]
    NotPublic,
}

impl WebhookUrl {
    /// Checks `text`; `allow_private` admits `http` and every address (for tests and local
    /// development).
    ///
    /// # Errors
    ///
    /// [`WebhookUrlError`] naming the first problem.
    pub fn parse(text: &str, allow_private: bool) -> Result<Self, WebhookUrlError> {
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
        if url.port() == Some(0) {
            return Err(WebhookUrlError::Port);
        }
        let literal = match url.host() {
            None => return Err(WebhookUrlError::NoHost),
            Some(url::Host::Domain(_)) => None,
            Some(url::Host::Ipv4(v4)) => Some(IpAddr::V4(v4)),
            Some(url::Host::Ipv6(v6)) => Some(IpAddr::V6(v6)),
        };
        if literal.is_some_and(|ip| !allow_private && is_refused_address(ip)) {
            return Err(WebhookUrlError::NotPublic);
        }
        let stored: String = url.into();
        if stored.len() > MAX_URL_LEN {
            return Err(WebhookUrlError::TooLong(stored.len()));
        }
        Ok(Self(stored))
    }

    /// An address as stored, checked when it was registered.
    pub fn stored(text: &str) -> Self {
        Self(text.to_owned())
    }

    /// The address, normalised (`HTTPS://Example.com` is `https://example.com/`).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The host alone, as operators are shown it: never the path or query, which may carry
    /// a token of the owner's.
    pub fn host(&self) -> String {
        let parsed = url::Url::parse(&self.0).ok();
        parsed.and_then(|url| url.host_str().map(str::to_owned)).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> bool {
        WebhookUrl::parse(text, false) == Err(WebhookUrlError::NotPublic)
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
            "https://192.0.0.192/",
            "https://198.18.0.1/",
            "https://203.0.113.7/",
            "https://[2002:c0a8:101::1]/",
            "https://[fec0::1]/",
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
        // Within the limit as sent, past it as stored: each space is written `%20`.
        let spaced = format!("https://example.com/a{}b", " ".repeat(1000));
        assert!(spaced.len() < MAX_URL_LEN);
        assert_eq!(WebhookUrl::parse(&spaced, false), Err(WebhookUrlError::TooLong(3022)));
        assert_eq!(WebhookUrl::parse("https://example.com:0/", false), Err(WebhookUrlError::Port));
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
}
