//! The client's address: the socket peer, or, behind a trusted proxy, the address the proxy
//! received the request from (`docs/operations.md#behind-a-load-balancer-trusted-proxies`).

use std::net::IpAddr;

use ipnet::IpNet;
use poem::Request;
use poem::http::HeaderMap;

/// The client's address: the socket peer, unless the peer is a trusted proxy; then the
/// nearest address in `X-Forwarded-For` that is not a trusted proxy itself.
pub fn client_address(req: &Request, trusted_proxies: &[IpNet]) -> IpAddr {
    let peer = req
        .remote_addr()
        .as_socket_addr()
        .map_or(IpAddr::from([0, 0, 0, 0]), |addr| addr.ip().to_canonical());
    forwarded_client(peer, req.headers(), trusted_proxies)
}

fn forwarded_client(peer: IpAddr, headers: &HeaderMap, trusted_proxies: &[IpNet]) -> IpAddr {
    let trusted = |ip: &IpAddr| trusted_proxies.iter().any(|net| net.contains(ip));
    if !trusted(&peer) {
        return peer;
    }
    // Each proxy appends the address it received from: read from the right, skipping our
    // own proxies; the first other address is the client. Entries a client made up sit
    // further left and are never reached.
    let hops: Vec<IpAddr> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|hop| hop.trim().parse::<IpAddr>().ok())
        .map(|ip| ip.to_canonical())
        .collect();
    hops.iter().rev().find(|ip| !trusted(ip)).or(hops.first()).copied().unwrap_or(peer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use poem::http::HeaderValue;

    fn forwarded(peer: [u8; 4], xff: &str, trusted: &[&str]) -> IpAddr {
        let mut headers = HeaderMap::new();
        headers.insert("x-forwarded-for", HeaderValue::from_str(xff).unwrap());
        let trusted: Vec<IpNet> = trusted.iter().map(|t| t.parse().unwrap()).collect();
        forwarded_client(IpAddr::from(peer), &headers, &trusted)
    }

    #[test]
    fn forwarded_for_is_believed_only_from_trusted_proxies() {
        assert_eq!(forwarded([1, 2, 3, 4], "9.9.9.9", &[]), IpAddr::from([1, 2, 3, 4]));
        assert_eq!(forwarded([1, 2, 3, 4], "9.9.9.9", &["10.0.0.0/8"]), IpAddr::from([1, 2, 3, 4]));
        assert_eq!(
            forwarded([10, 0, 0, 1], "9.9.9.9", &["10.0.0.0/8"]),
            IpAddr::from([9, 9, 9, 9])
        );
        assert_eq!(
            forwarded([10, 0, 0, 1], "6.6.6.6, 9.9.9.9, 10.0.0.7", &["10.0.0.0/8"]),
            IpAddr::from([9, 9, 9, 9]),
            "a made-up entry to the left is never reached"
        );
        assert_eq!(
            forwarded([10, 0, 0, 1], "garbage", &["10.0.0.0/8"]),
            IpAddr::from([10, 0, 0, 1])
        );
    }
}
