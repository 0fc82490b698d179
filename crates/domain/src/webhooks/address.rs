//! Which addresses the service may call: those globally reachable, by IANA's IPv4 and IPv6
//! Special-Purpose Address Registries, and by nothing else.
//!
//! The registries list blocks set aside for a special purpose, each with a "Globally
//! Reachable" column. An address inside any block whose column is not `True` (`False`, or
//! `N/A` for 6to4 and Teredo) is refused, even where a smaller block inside it says `True`
//! (the anycast addresses of `192.0.0.0/24` and `2001::/23` serve no webhook receiver). The
//! blocks are below, one row each, as the registries list them on 2025-09; multicast, which
//! the registries leave to registries of its own, has a row too. An IPv6 address must also
//! be global unicast (`2000::/3`), and one that carries an IPv4 address (IPv4-mapped,
//! IPv4-compatible, NAT64, 6to4, Teredo) is judged by that address as well: an IPv4-mapped
//! address, and one of the NAT64 well-known prefix (a `True` row of the registry), are
//! reached through the IPv4 address they carry, and judged by it alone.
//!
//! The machine's own interfaces are not known here: the adapter that connects refuses them
//! (see `crates/infra/src/webhook_client.rs`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::{Ipv4Net, Ipv6Net};

/// A block of a registry whose addresses are not globally reachable, with the registry
/// entry it comes from.
#[derive(Debug, Clone, Copy)]
pub struct Block<Net> {
    /// The block.
    pub net: Net,
    /// Its name in the registry.
    pub name: &'static str,
    /// The document that set it aside.
    pub source: &'static str,
}

const fn v4(
    a: u8,
    b: u8,
    c: u8,
    d: u8,
    len: u8,
    name: &'static str,
    source: &'static str,
) -> Block<Ipv4Net> {
    Block { net: Ipv4Net::new_assert(Ipv4Addr::new(a, b, c, d), len), name, source }
}

const fn v6(
    segments: [u16; 8],
    len: u8,
    name: &'static str,
    source: &'static str,
) -> Block<Ipv6Net> {
    let [s0, s1, s2, s3, s4, s5, s6, s7] = segments;
    let address = Ipv6Addr::new(s0, s1, s2, s3, s4, s5, s6, s7);
    Block { net: Ipv6Net::new_assert(address, len), name, source }
}

/// The blocks of the IANA IPv4 Special-Purpose Address Registry whose "Globally Reachable"
/// is not `True`, and multicast.
pub const NOT_GLOBAL_V4: [Block<Ipv4Net>; 21] = [
    v4(0, 0, 0, 0, 8, "\"This network\"", "RFC 791"),
    v4(0, 0, 0, 0, 32, "\"This host on this network\"", "RFC 1122"),
    v4(10, 0, 0, 0, 8, "Private-Use", "RFC 1918"),
    v4(100, 64, 0, 0, 10, "Shared Address Space", "RFC 6598"),
    v4(127, 0, 0, 0, 8, "Loopback", "RFC 1122"),
    v4(169, 254, 0, 0, 16, "Link Local", "RFC 3927"),
    v4(172, 16, 0, 0, 12, "Private-Use", "RFC 1918"),
    v4(192, 0, 0, 0, 24, "IETF Protocol Assignments", "RFC 6890"),
    v4(192, 0, 0, 0, 29, "IPv4 Service Continuity Prefix", "RFC 7335"),
    v4(192, 0, 0, 8, 32, "IPv4 dummy address", "RFC 7600"),
    v4(192, 0, 0, 170, 32, "NAT64/DNS64 Discovery", "RFC 8880"),
    v4(192, 0, 0, 171, 32, "NAT64/DNS64 Discovery", "RFC 8880"),
    v4(192, 0, 2, 0, 24, "Documentation (TEST-NET-1)", "RFC 5737"),
    v4(192, 88, 99, 0, 24, "Deprecated (6to4 Relay Anycast)", "RFC 7526"),
    v4(192, 168, 0, 0, 16, "Private-Use", "RFC 1918"),
    v4(198, 18, 0, 0, 15, "Benchmarking", "RFC 2544"),
    v4(198, 51, 100, 0, 24, "Documentation (TEST-NET-2)", "RFC 5737"),
    v4(203, 0, 113, 0, 24, "Documentation (TEST-NET-3)", "RFC 5737"),
    v4(240, 0, 0, 0, 4, "Reserved", "RFC 1112"),
    v4(255, 255, 255, 255, 32, "Limited Broadcast", "RFC 919"),
    v4(224, 0, 0, 0, 4, "Multicast (IPv4 Multicast Address Space Registry)", "RFC 5771"),
];

/// The blocks of the IANA IPv6 Special-Purpose Address Registry whose "Globally Reachable"
/// is not `True`, with the deprecated site-local block and multicast.
pub const NOT_GLOBAL_V6: [Block<Ipv6Net>; 20] = [
    v6([0, 0, 0, 0, 0, 0, 0, 1], 128, "Loopback Address", "RFC 4291"),
    v6([0, 0, 0, 0, 0, 0, 0, 0], 128, "Unspecified Address", "RFC 4291"),
    v6([0, 0, 0, 0, 0, 0xffff, 0, 0], 96, "IPv4-mapped Address", "RFC 4291"),
    v6([0, 0, 0, 0, 0xffff, 0, 0, 0], 96, "IPv4-translated Address", "RFC 2765"),
    v6([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48, "IPv4-IPv6 Translat.", "RFC 8215"),
    v6([0x100, 0, 0, 0, 0, 0, 0, 0], 64, "Discard-Only Address Block", "RFC 6666"),
    v6([0x100, 0, 0, 1, 0, 0, 0, 0], 64, "Dummy IPv6 Prefix", "RFC 9780"),
    v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 23, "IETF Protocol Assignments", "RFC 2928"),
    v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 32, "TEREDO", "RFC 4380"),
    v6([0x2001, 2, 0, 0, 0, 0, 0, 0], 48, "Benchmarking", "RFC 5180"),
    v6([0x2001, 0x10, 0, 0, 0, 0, 0, 0], 28, "Deprecated (previously ORCHID)", "RFC 4843"),
    v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32, "Documentation", "RFC 3849"),
    v6([0x2002, 0, 0, 0, 0, 0, 0, 0], 16, "6to4", "RFC 3056"),
    v6([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20, "Documentation", "RFC 9637"),
    v6([0x5f00, 0, 0, 0, 0, 0, 0, 0], 16, "Segment Routing (SRv6) SIDs", "RFC 9602"),
    v6([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7, "Unique-Local", "RFC 4193"),
    v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, "Link-Local Unicast", "RFC 4291"),
    v6([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10, "Site-Local (deprecated)", "RFC 3879"),
    v6(
        [0xff00, 0, 0, 0, 0, 0, 0, 0],
        8,
        "Multicast (IPv6 Multicast Address Space Registry)",
        "RFC 4291",
    ),
    v6([0, 0, 0, 0, 0, 0, 0, 0], 96, "IPv4-compatible (deprecated)", "RFC 4291"),
];

/// Global unicast: the only IPv6 space the service calls.
const GLOBAL_UNICAST: Ipv6Net = Ipv6Net::new_assert(Ipv6Addr::new(0x2000, 0, 0, 0, 0, 0, 0, 0), 3);

/// The NAT64 well-known prefix, `64:ff9b::/96` (RFC 6052): `True` in the registry, reached
/// through the IPv4 address in its last 32 bits.
const NAT64_WELL_KNOWN: Ipv6Net =
    Ipv6Net::new_assert(Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96);

/// Whether the service may call `ip`: globally reachable by the registries (see the
/// module's docs).
pub fn is_global(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_global_v4(v4),
        IpAddr::V6(v6) => is_global_v6(v6),
    }
}

fn is_global_v4(ip: Ipv4Addr) -> bool {
    !NOT_GLOBAL_V4.iter().any(|block| block.net.contains(&ip))
}

fn is_global_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_global_v4(v4);
    }
    if NAT64_WELL_KNOWN.contains(&ip) {
        return is_global_v4(last_32_bits(ip));
    }
    if embedded_v4(ip).is_some_and(|v4| !is_global_v4(v4)) {
        return false;
    }
    GLOBAL_UNICAST.contains(&ip) && !NOT_GLOBAL_V6.iter().any(|block| block.net.contains(&ip))
}

/// The IPv4 address an IPv6 address of a translation or tunnelling form carries:
/// IPv4-compatible (`::a.b.c.d`), NAT64 with the local-use prefix (`64:ff9b:1::/48`, the
/// address in the last 32 bits as with the well-known one), 6to4 (`2002:AABB:CCDD::/48`), and
/// Teredo (`2001:0::/32`, the client's address in the last 32 bits, inverted).
pub fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let pair = |high: u16, low: u16| Ipv4Addr::from((u32::from(high) << 16) | u32::from(low));
    match s {
        [0, 0, 0, 0, 0, 0, ..] if ip.to_ipv4().is_some() => ip.to_ipv4(),
        [0x64, 0xff9b, 1, ..] => Some(last_32_bits(ip)),
        [0x2002, high, low, ..] => Some(pair(high, low)),
        [0x2001, 0, .., high, low] => Some(pair(!high, !low)),
        _ => None,
    }
}

/// The IPv4 address in the last 32 bits of `ip`.
fn last_32_bits(ip: Ipv6Addr) -> Ipv4Addr {
    let [.., a, b, c, d] = ip.octets();
    Ipv4Addr::new(a, b, c, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first, a middle and the last address of a block.
    fn v4_samples(net: Ipv4Net) -> [Ipv4Addr; 3] {
        let (first, last) = (u32::from(net.network()), u32::from(net.broadcast()));
        [first, first + (last - first) / 2, last].map(Ipv4Addr::from)
    }

    fn v6_samples(net: Ipv6Net) -> [Ipv6Addr; 3] {
        let (first, last) = (u128::from(net.network()), u128::from(net.broadcast()));
        [first, first + (last - first) / 2, last].map(Ipv6Addr::from)
    }

    #[test]
    fn every_ipv4_row_refuses_its_block_from_end_to_end() {
        for block in NOT_GLOBAL_V4 {
            for ip in v4_samples(block.net) {
                assert!(!is_global(IpAddr::V4(ip)), "{} ({}): {ip}", block.name, block.source);
                let mapped = ip.to_ipv6_mapped();
                assert!(!is_global(IpAddr::V6(mapped)), "{}: {mapped}", block.name);
                let nat64 = Ipv6Addr::from(
                    u128::from(NAT64_WELL_KNOWN.network()) | u128::from(u32::from(ip)),
                );
                assert!(!is_global(IpAddr::V6(nat64)), "{}: {nat64}", block.name);
            }
        }
    }

    #[test]
    fn every_ipv6_row_refuses_its_block_from_end_to_end() {
        for block in NOT_GLOBAL_V6 {
            for ip in v6_samples(block.net) {
                assert!(!is_global(IpAddr::V6(ip)), "{} ({}): {ip}", block.name, block.source);
            }
        }
    }

    #[test]
    fn the_neighbours_of_the_blocks_are_public() {
        for text in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.215.14",
            "9.255.255.255",
            "11.0.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.0.1.0",
            "192.0.3.0",
            "192.167.255.255",
            "192.169.0.0",
            "198.17.255.255",
            "198.20.0.0",
            "223.255.255.255",
            "2606:4700::1111",
            "2001:4860:4860::8888",
            "2a00:1450:4001::1",
            "2001:200::1",
            "::ffff:93.184.215.14",
            "64:ff9b::5db8:d70e",
        ] {
            let ip: IpAddr = text.parse().expect("an address");
            assert!(is_global(ip), "{text}");
        }
    }

    #[test]
    fn addresses_that_carry_ipv4_ones_are_judged_by_them() {
        for (text, global) in [
            ("::ffff:10.0.0.1", false),
            ("::ffff:8.8.8.8", true),
            ("64:ff9b::a00:1", false),
            ("64:ff9b::808:808", true),
            ("64:ff9b:1::808:808", false),
            ("::8.8.8.8", false),
            // 6to4 of 192.168.1.1, and of 8.8.8.8 (refused by its own row too).
            ("2002:c0a8:101::1", false),
            ("2002:808:808::1", false),
            // Teredo, the client 10.0.0.1 inverted.
            ("2001:0:4136:e378:8000:63bf:f5ff:fffe", false),
            ("fec0::1", false),
            ("::ffff:0:a00:1", false),
            ("100::1", false),
            ("2001:db8::1", false),
            ("3fff::1", false),
        ] {
            let ip: IpAddr = text.parse().expect("an address");
            assert_eq!(is_global(ip), global, "{text}");
        }
        let teredo: Ipv6Addr = "2001:0:4136:e378:8000:63bf:f5ff:fffe".parse().expect("teredo");
        assert_eq!(embedded_v4(teredo), Some(Ipv4Addr::new(10, 0, 0, 1)));
        let six_to_four: Ipv6Addr = "2002:c0a8:101::1".parse().expect("6to4");
        assert_eq!(embedded_v4(six_to_four), Some(Ipv4Addr::new(192, 168, 1, 1)));
    }
}
