//! An endpoint's address, and the addresses the service never calls in production: the
//! machine itself, and the networks only it can reach (`docs/webhooks.md`, "What the service
//! refuses").

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use thiserror::Error;

/// The longest address an endpoint may have, in bytes.
pub const MAX_URL_LEN: usize = 2048;

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
}
