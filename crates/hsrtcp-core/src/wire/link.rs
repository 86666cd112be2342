//! Link layers: find where the network header starts and which IP version to expect.

use super::{MalformedReason, Stop};
use crate::capture::LinkType;

/// The network protocol found after the link header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Net {
    V4,
    V6,
    /// The link layer says IP but not which version (raw IP): read the version nibble.
    Sniff,
    /// MPLS payload: IP if the nibble says 4 or 6, something else (pseudowire …) otherwise.
    Guess,
}

const SHORT: Stop = Stop::Malformed(MalformedReason::ShortLinkHeader);

// BSD address families for IPv6 differ per OS: Linux 10, NetBSD/OpenBSD 24, FreeBSD 28,
// macOS 30. IPv4 is 2 everywhere.
const AF_INET: u32 = 2;

#[inline]
fn be16(d: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([d[at], d[at + 1]])
}

/// Offset of the network header and the protocol to expect there.
#[inline]
pub(super) fn locate(linktype: LinkType, d: &[u8]) -> Result<(usize, Net), Stop> {
    match linktype.0 {
        1 => {
            // Ethernet II: dst(6) src(6) ethertype(2).
            if d.len() < 14 {
                return Err(SHORT);
            }
            ethertype(d, 14, be16(d, 12))
        }
        113 => {
            // Linux cooked v1: pkttype(2) arphrd(2) addrlen(2) addr(8) protocol(2).
            if d.len() < 16 {
                return Err(SHORT);
            }
            ethertype(d, 16, be16(d, 14))
        }
        276 => {
            // Linux cooked v2: protocol(2) reserved(2) ifindex(4) arphrd(2) pkttype(1)
            // addrlen(1) addr(8).
            if d.len() < 20 {
                return Err(SHORT);
            }
            ethertype(d, 20, be16(d, 0))
        }
        12 | 14 | 101 => Ok((0, Net::Sniff)),
        228 => Ok((0, Net::V4)),
        229 => Ok((0, Net::V6)),
        0 | 108 => {
            if d.len() < 4 {
                return Err(SHORT);
            }
            // NULL uses the writer's byte order, LOOP network order; families are small
            // numbers, so a value with high bits set is the other byte order.
            let raw = [d[0], d[1], d[2], d[3]];
            let mut af = if linktype.0 == 0 {
                u32::from_le_bytes(raw)
            } else {
                u32::from_be_bytes(raw)
            };
            if af & 0xFFFF_0000 != 0 {
                af = af.swap_bytes();
            }
            match af {
                AF_INET => Ok((4, Net::V4)),
                10 | 24 | 28 | 30 => Ok((4, Net::V6)),
                _ => Err(Stop::NotTcp),
            }
        }
        9 => {
            // PPP: optional address/control (ff 03), then a 16-bit protocol.
            let off = if d.len() >= 2 && d[0] == 0xff && d[1] == 0x03 {
                2
            } else {
                0
            };
            if d.len() < off + 2 {
                return Err(SHORT);
            }
            ppp_protocol(be16(d, off), off + 2)
        }
        _ => Err(Stop::Malformed(MalformedReason::UnknownLinktype)),
    }
}

#[inline]
fn ppp_protocol(proto: u16, off: usize) -> Result<(usize, Net), Stop> {
    match proto {
        0x0021 => Ok((off, Net::V4)),
        0x0057 => Ok((off, Net::V6)),
        _ => Err(Stop::NotTcp),
    }
}

/// Follow an ethertype through VLAN tags, PPPoE and MPLS to IPv4/IPv6.
#[inline]
fn ethertype(d: &[u8], mut off: usize, mut et: u16) -> Result<(usize, Net), Stop> {
    loop {
        match et {
            0x0800 => return Ok((off, Net::V4)),
            0x86DD => return Ok((off, Net::V6)),
            // 802.1Q, 802.1ad (QinQ) and the pre-standard QinQ tags: TCI(2) ethertype(2).
            0x8100 | 0x88A8 | 0x9100 | 0x9200 => {
                if d.len() < off + 4 {
                    return Err(SHORT);
                }
                et = be16(d, off + 2);
                off += 4;
            }
            // PPPoE session: ver/type(1) code(1) session(2) length(2), then PPP protocol(2).
            0x8864 => {
                if d.len() < off + 8 {
                    return Err(SHORT);
                }
                return ppp_protocol(be16(d, off + 6), off + 8);
            }
            // MPLS: 4-byte labels until the bottom-of-stack bit, then IP by its nibble.
            0x8847 | 0x8848 => loop {
                if d.len() < off + 4 {
                    return Err(SHORT);
                }
                let bottom = d[off + 2] & 1 != 0;
                off += 4;
                if bottom {
                    return Ok((off, Net::Guess));
                }
            },
            _ => return Err(Stop::NotTcp),
        }
    }
}
