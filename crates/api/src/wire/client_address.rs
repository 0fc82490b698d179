//! Who a request without a valid key is counted as: the socket peer, or, behind a trusted
//! proxy, the client the proxies name (`docs/operations.md#behind-a-load-balancer-trusted-proxies`).
//!
//! Each proxy appends the address it received the request from to the forwarding header, so
//! the header is read from the right: over our own proxies, to the first entry that is not
//! one. That entry is the client, whatever its form: an address with or without a port
//! (`203.0.113.7:51234`, `[2001:db8::1]:443`), or a name that is not an address (`unknown`),
//! counted by its digest. Nothing is ever skipped, so entries a client wrote itself, further
//! left, are never reached. IPv6 clients are counted per network (a /64 unless configured
//! otherwise), as one host commonly holds a whole /64.

use std::net::{IpAddr, SocketAddr};

use animal_store_domain::Subject;
use ipnet::{IpNet, Ipv6Net};
use poem::Request;
use poem::http::HeaderMap;
use sha2::{Digest, Sha256};

/// The header trusted proxies write the client into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ForwardedHeader {
    /// `X-Forwarded-For: client, proxy1, proxy2` (nginx, `HAProxy`, most load balancers).
    #[default]
    XForwardedFor,
    /// RFC 7239 `Forwarded: for=client, for="[2001:db8::1]:443"`.
    Forwarded,
}

/// How client addresses are found and counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientAddressing {
    /// Proxies whose forwarding header is believed.
    pub trusted_proxies: Vec<IpNet>,
    /// The one header they write; the other is ignored, so that a client cannot write it.
    pub header: ForwardedHeader,
    /// IPv6 clients are counted per network of this prefix length.
    pub ipv6_prefix: u8,
}

/// The default prefix IPv6 clients are counted by.
pub const DEFAULT_IPV6_PREFIX: u8 = 64;

impl Default for ClientAddressing {
    fn default() -> Self {
        Self {
            trusted_proxies: Vec::new(),
            header: ForwardedHeader::default(),
            ipv6_prefix: DEFAULT_IPV6_PREFIX,
        }
    }
}

impl ClientAddressing {
    fn trusts(&self, ip: &IpAddr) -> bool {
        self.trusted_proxies.iter().any(|net| net.contains(ip))
    }

    /// What an address is counted as: itself for IPv4, its network for IPv6.
    fn subject(&self, ip: IpAddr) -> Subject {
        match ip.to_canonical() {
            IpAddr::V6(v6) => {
                let prefix = self.ipv6_prefix.min(128);
                let network = Ipv6Net::new(v6, prefix).map_or(v6, |net| net.network());
                Subject::Address(IpAddr::V6(network))
            }
            v4 @ IpAddr::V4(_) => Subject::Address(v4),
        }
    }
}

/// One entry of a forwarding header.
#[derive(Debug, PartialEq, Eq)]
enum Hop<'a> {
    Address(IpAddr),
    Name(&'a str),
}

impl<'a> Hop<'a> {
    /// Reads an entry: an address, with or without a port, or a name.
    fn parse(entry: &'a str) -> Self {
        let entry = entry.trim().trim_matches('"');
        if let Ok(ip) = entry.parse::<IpAddr>() {
            return Self::Address(ip.to_canonical());
        }
        if let Ok(socket) = entry.parse::<SocketAddr>() {
            return Self::Address(socket.ip().to_canonical());
        }
        // `[2001:db8::1]` without a port.
        let bracketed = entry.strip_prefix('[').and_then(|e| e.strip_suffix(']'));
        if let Some(Ok(ip)) = bracketed.map(str::parse::<IpAddr>) {
            return Self::Address(ip.to_canonical());
        }
        Self::Name(entry)
    }
}

/// Who `req` is counted as when it has no valid key.
pub fn client_subject(req: &Request, addressing: &ClientAddressing) -> Subject {
    let peer = req
        .remote_addr()
        .as_socket_addr()
        .map_or(IpAddr::from([0, 0, 0, 0]), |addr| addr.ip().to_canonical());
    forwarded_client(peer, req.headers(), addressing)
}

fn forwarded_client(peer: IpAddr, headers: &HeaderMap, addressing: &ClientAddressing) -> Subject {
    if !addressing.trusts(&peer) {
        return addressing.subject(peer);
    }
    let values = headers.get_all(match addressing.header {
        ForwardedHeader::XForwardedFor => "x-forwarded-for",
        ForwardedHeader::Forwarded => "forwarded",
    });
    // Split on the raw bytes, each entry decoded on its own: a byte a client wrote that is
    // not visible ASCII spoils its own entry only, never the ones the proxies appended.
    let elements: Vec<String> = values
        .iter()
        .flat_map(|value| value.as_bytes().split(|b| *b == b','))
        .map(|element| String::from_utf8_lossy(element).into_owned())
        .collect();
    let entries: Vec<&str> = elements
        .iter()
        .map(|element| match addressing.header {
            ForwardedHeader::XForwardedFor => element.as_str(),
            // An element without `for=` names nobody: it stays, as a name, in its place.
            ForwardedHeader::Forwarded => forwarded_for(element).unwrap_or(element.as_str()),
        })
        .filter(|entry| !entry.trim().is_empty())
        .collect();
    let hops: Vec<Hop<'_>> = entries.iter().map(|entry| Hop::parse(entry)).collect();
    let client = hops
        .iter()
        .rev()
        .find(|hop| !matches!(hop, Hop::Address(ip) if addressing.trusts(ip)))
        // Every entry is one of our proxies: the first of them is the client.
        .or(hops.first());
    match client {
        Some(Hop::Address(ip)) => addressing.subject(*ip),
        Some(Hop::Name(name)) => Subject::Named(digest(name)),
        None => addressing.subject(peer),
    }
}

/// The `for=` value of one element of `Forwarded` (`for=1.2.3.4;proto=https`).
fn forwarded_for(element: &str) -> Option<&str> {
    element.split(';').find_map(|pair| {
        let (name, value) = pair.trim().split_once('=')?;
        name.trim().eq_ignore_ascii_case("for").then(|| value.trim())
    })
}

/// The first 16 bytes of the SHA-256 of a client's name.
fn digest(name: &str) -> [u8; 16] {
    let full = Sha256::digest(name.as_bytes());
    let mut digest = [0; 16];
    digest.copy_from_slice(&full[..16]);
    digest
}

#[cfg(test)]
mod tests {
    use super::*;
    use poem::http::HeaderValue;

    fn addressing(trusted: &[&str], header: ForwardedHeader) -> ClientAddressing {
        ClientAddressing {
            trusted_proxies: trusted.iter().map(|t| t.parse().expect("a network")).collect(),
            header,
            ipv6_prefix: 64,
        }
    }

    fn client(peer: &str, header: (&'static str, &str), trusted: &[&str]) -> Subject {
        let mut headers = HeaderMap::new();
        headers.insert(header.0, HeaderValue::from_str(header.1).expect("a header value"));
        let kind = if header.0 == "forwarded" {
            ForwardedHeader::Forwarded
        } else {
            ForwardedHeader::XForwardedFor
        };
        let peer = peer.parse().expect("an address");
        forwarded_client(peer, &headers, &addressing(trusted, kind))
    }

    fn ip(text: &str) -> Subject {
        Subject::Address(text.parse().expect("an address"))
    }

    const XFF: &str = "x-forwarded-for";

    #[test]
    fn forwarding_headers_are_believed_only_from_trusted_proxies() {
        assert_eq!(client("1.2.3.4", (XFF, "9.9.9.9"), &[]), ip("1.2.3.4"));
        assert_eq!(client("1.2.3.4", (XFF, "9.9.9.9"), &["10.0.0.0/8"]), ip("1.2.3.4"));
        assert_eq!(client("10.0.0.1", (XFF, "9.9.9.9"), &["10.0.0.0/8"]), ip("9.9.9.9"));
        assert_eq!(
            client("10.0.0.1", (XFF, "6.6.6.6, 9.9.9.9, 10.0.0.7"), &["10.0.0.0/8"]),
            ip("9.9.9.9"),
            "a made-up entry to the left is never reached"
        );
    }

    #[test]
    fn the_first_untrusted_entry_is_the_client_whatever_its_form() {
        let trusted = &["127.0.0.1/32"];
        for (xff, expected) in [
            ("6.6.6.6, 203.0.113.7:51234", ip("203.0.113.7")),
            ("6.6.6.6, [2001:db8::1]:443", ip("2001:db8::")),
            ("6.6.6.6, [2001:db8::1]", ip("2001:db8::")),
            ("6.6.6.6, 2001:db8::1:2:3:4", ip("2001:db8::")),
            ("6.6.6.6, ::ffff:203.0.113.7", ip("203.0.113.7")),
        ] {
            assert_eq!(client("127.0.0.1", (XFF, xff), trusted), expected, "{xff}");
        }
        let unknown = client("127.0.0.1", (XFF, "6.6.6.6, unknown"), trusted);
        assert_eq!(unknown, Subject::Named(digest("unknown")), "a name is the client, not skipped");
        let garbage = client("127.0.0.1", (XFF, "garbage"), trusted);
        assert_eq!(garbage, Subject::Named(digest("garbage")));
        assert_eq!(client("127.0.0.1", (XFF, "127.0.0.1"), trusted), ip("127.0.0.1"));
    }

    #[test]
    fn a_byte_a_client_wrote_spoils_its_own_entry_only() {
        let mut headers = HeaderMap::new();
        let value = HeaderValue::from_bytes(b"6.6.6.\xff, 203.0.113.7").expect("a header value");
        headers.insert("x-forwarded-for", value);
        let trusted = addressing(&["127.0.0.1/32"], ForwardedHeader::XForwardedFor);
        let peer: IpAddr = "127.0.0.1".parse().expect("an address");
        assert_eq!(forwarded_client(peer, &headers, &trusted), ip("203.0.113.7"));
    }

    #[test]
    fn ipv6_clients_are_counted_per_network() {
        let a = client("2001:db8:1:2::a", (XFF, ""), &[]);
        let b = client("2001:db8:1:2:ffff::b", (XFF, ""), &[]);
        assert_eq!(a, b, "one /64, one subject");
        assert_ne!(a, client("2001:db8:1:3::a", (XFF, ""), &[]));
        let mut wide = addressing(&[], ForwardedHeader::XForwardedFor);
        wide.ipv6_prefix = 128;
        let peer: IpAddr = "2001:db8:1:2::a".parse().expect("an address");
        assert_eq!(forwarded_client(peer, &HeaderMap::new(), &wide), Subject::Address(peer));
    }

    #[test]
    fn rfc_7239_forwarded_is_read_when_it_is_the_header_proxies_write() {
        let trusted = &["127.0.0.1/32"];
        let forwarded = "for=6.6.6.6, for=\"[2001:db8::17]:4711\";proto=https";
        assert_eq!(client("127.0.0.1", ("forwarded", forwarded), trusted), ip("2001:db8::"));
        let hidden = client("127.0.0.1", ("forwarded", "for=9.9.9.9, for=_hidden"), trusted);
        assert_eq!(hidden, Subject::Named(digest("_hidden")));
        let odd = client("127.0.0.1", ("forwarded", "for=9.9.9.9, proto=https"), trusted);
        assert_eq!(odd, Subject::Named(digest("proto=https")), "never skipped");
        // The header the proxies do not write is not read: a client could have written it.
        assert_eq!(client("127.0.0.1", (XFF, "9.9.9.9"), trusted), ip("9.9.9.9"));
        let mut headers = HeaderMap::new();
        headers.insert("x-forwarded-for", HeaderValue::from_static("9.9.9.9"));
        let only_forwarded = addressing(trusted, ForwardedHeader::Forwarded);
        let peer: IpAddr = "127.0.0.1".parse().expect("an address");
        assert_eq!(forwarded_client(peer, &headers, &only_forwarded), ip("127.0.0.1"));
    }
}
