//! Link layers: find where the network header starts and which IP version to expect.
//!
//! One parser serves two callers through [`LinkRec`]: the hot path ([`locate`], nothing
//! recorded) and the tunnel decoder (`tunnel.rs`), which records the MPLS labels and the
//! PPPoE session a frame went through. The hot path hands frames with those layers to the
//! tunnel decoder (it stops there with [`Stop::NotTcp`]), so a plain Ethernet frame pays for
//! none of it: the choice is made at compile time.

use super::bytes::be16;
use super::{MalformedReason, Stop};
use crate::capture::LinkType;

/// What the link parser reports of the encapsulations it passes.
pub(super) trait LinkRec {
    /// False: stop at MPLS and PPPoE with [`Stop::NotTcp`] (the hot path, which lets the
    /// tunnel decoder take such frames).
    const RECORD: bool;
    /// One MPLS label stack entry (the 32-bit word as on the wire).
    fn mpls(&mut self, _entry: u32) {}
    /// A PPPoE session header.
    fn pppoe(&mut self, _session: u16) {}
}

/// The hot path's recorder: records nothing, passes no MPLS or PPPoE.
pub(super) struct NoRec;

impl LinkRec for NoRec {
    const RECORD: bool = false;
}

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

/// Offset of the network header and the protocol to expect there (hot path).
#[inline]
pub(super) fn locate(linktype: LinkType, d: &[u8]) -> Result<(usize, Net), Stop> {
    locate_rec(linktype, d, &mut NoRec)
}

/// [`locate`] with a recorder of the encapsulations passed.
#[inline]
pub(super) fn locate_rec<R: LinkRec>(linktype: LinkType, d: &[u8], rec: &mut R) -> Result<(usize, Net), Stop> {
    match linktype.0 {
        1 => {
            // Ethernet II: dst(6) src(6) ethertype(2).
            if d.len() < 14 {
                return Err(SHORT);
            }
            ethertype(d, 14, be16(d, 12), rec)
        }
        113 => {
            // Linux cooked v1: pkttype(2) arphrd(2) addrlen(2) addr(8) protocol(2).
            if d.len() < 16 {
                return Err(SHORT);
            }
            ethertype(d, 16, be16(d, 14), rec)
        }
        276 => {
            // Linux cooked v2: protocol(2) reserved(2) ifindex(4) arphrd(2) pkttype(1)
            // addrlen(1) addr(8).
            if d.len() < 20 {
                return Err(SHORT);
            }
            ethertype(d, 20, be16(d, 0), rec)
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
        // PPP (9), and PPP in HDLC-like framing (50, RFC 1662): the same header here.
        9 | 50 => ppp(d, 0, rec),
        // Cisco HDLC (104, routers' serial and POS links): address(1) control(1) ethertype(2).
        104 => {
            if d.len() < 4 {
                return Err(SHORT);
            }
            ethertype(d, 4, be16(d, 2), rec)
        }
        // PPPoE without its Ethernet header (51): the session header, then PPP.
        51 => pppoe(d, 0, rec),
        _ => Err(Stop::Malformed(MalformedReason::UnknownLinktype)),
    }
}

/// A PPP header at `off`: optional address/control (ff 03), then the protocol, one byte
/// when compressed (RFC 1661 §6.5: an odd first byte), else two.
#[inline]
pub(super) fn ppp<R: LinkRec>(d: &[u8], mut off: usize, rec: &mut R) -> Result<(usize, Net), Stop> {
    if d.len() >= off + 2 && d[off] == 0xff && d[off + 1] == 0x03 {
        off += 2;
    }
    let Some(&first) = d.get(off) else { return Err(SHORT) };
    if first & 1 == 1 {
        return ppp_protocol(first as u16, off + 1, d, rec);
    }
    if d.len() < off + 2 {
        return Err(SHORT);
    }
    ppp_protocol(be16(d, off), off + 2, d, rec)
}

#[inline]
fn ppp_protocol<R: LinkRec>(proto: u16, off: usize, d: &[u8], rec: &mut R) -> Result<(usize, Net), Stop> {
    match proto {
        0x0021 => Ok((off, Net::V4)),
        0x0057 => Ok((off, Net::V6)),
        // MPLS unicast and multicast over PPP (RFC 3032 §4.3).
        0x0281 | 0x0283 => ethertype(d, off, 0x8847, rec),
        _ => Err(Stop::NotTcp),
    }
}

/// A PPPoE session header at `off` (RFC 2516): ver/type(1) code(1) session(2) length(2),
/// then the PPP protocol.
#[inline]
fn pppoe<R: LinkRec>(d: &[u8], off: usize, rec: &mut R) -> Result<(usize, Net), Stop> {
    if !R::RECORD {
        return Err(Stop::NotTcp); // the tunnel decoder records the session
    }
    if d.len() < off + 8 {
        return Err(SHORT);
    }
    rec.pppoe(be16(d, off + 2));
    ppp_protocol(be16(d, off + 6), off + 8, d, rec)
}

/// Follow an ethertype through VLAN tags, PPPoE and MPLS to IPv4/IPv6.
#[inline]
pub(super) fn ethertype<R: LinkRec>(d: &[u8], mut off: usize, mut et: u16, rec: &mut R) -> Result<(usize, Net), Stop> {
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
            0x8864 => return pppoe(d, off, rec),
            // MPLS: 4-byte labels until the bottom-of-stack bit, then IP by its nibble.
            0x8847 | 0x8848 => loop {
                if !R::RECORD {
                    return Err(Stop::NotTcp); // the tunnel decoder records the labels
                }
                if d.len() < off + 4 {
                    return Err(SHORT);
                }
                rec.mpls(u32::from_be_bytes([d[off], d[off + 1], d[off + 2], d[off + 3]]));
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
