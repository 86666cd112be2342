//! IPv4 and IPv6: addresses, the TCP header position and the TCP length the IP header gives.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::link::Net;
use super::bytes::be16;
use super::{mal, MalformedReason, Stop};

/// What the TCP decoder needs from the network layer. The addresses stay in the header
/// until the segment is written: a 17-byte `IpAddr` built here, kept on the stack and copied
/// into the segment was reloaded with wide loads across its narrow stores (a store-forwarding
/// stall per packet, the reader thread's largest single cost; bench/README.md, s18).
#[derive(Clone, Copy, Debug)]
pub(super) struct IpInfo<'a> {
    /// The IP header (IPv4 from its first byte, IPv6 its 40 fixed bytes on).
    hdr: &'a [u8],
    v6: bool,
    /// Offset of the TCP header from the start of the IP header.
    pub l4_off: usize,
    /// TCP header + payload length according to the IP header.
    pub l4_len: usize,
    pub ip_id: Option<u16>,
}

impl IpInfo<'_> {
    #[inline(always)]
    fn addr(&self, at: usize) -> IpAddr {
        if self.v6 {
            let a: [u8; 16] = self.hdr[at..at + 16].try_into().expect("16 bytes");
            IpAddr::V6(Ipv6Addr::from(a))
        } else {
            let a: [u8; 4] = self.hdr[at..at + 4].try_into().expect("4 bytes");
            IpAddr::V4(Ipv4Addr::from(a))
        }
    }

    #[inline(always)]
    pub fn src(&self) -> IpAddr {
        self.addr(if self.v6 { 8 } else { 12 })
    }

    #[inline(always)]
    pub fn dst(&self) -> IpAddr {
        self.addr(if self.v6 { 24 } else { 16 })
    }
}

const TCP: u8 = 6;

/// Decode the IP header at the start of `d`. `wire_len` is the network-layer length on the
/// wire, used when an offloaded packet leaves the IP length field 0.
// (always: the tunnel decoder calls it too, and a second caller cost the reader's loop
// this inlining, about 29 instructions a packet on the bench capture)
#[inline(always)]
pub(super) fn locate(net: Net, d: &[u8], wire_len: usize) -> Result<IpInfo<'_>, Stop> {
    let Some(&first) = d.first() else {
        return Err(mal(MalformedReason::ShortIpHeader));
    };
    match (net, first >> 4) {
        (Net::V4 | Net::Sniff | Net::Guess, 4) => v4(d, wire_len),
        (Net::V6 | Net::Sniff | Net::Guess, 6) => v6(d, wire_len),
        (Net::Guess, _) => Err(Stop::NotTcp),
        _ => Err(mal(MalformedReason::BadIpVersion)),
    }
}

/// An IPv4 header's length and its packet's total length, checked against the captured
/// bytes `d` and the frame's length on the wire `wire_len` (also the tunnel decoder's outer
/// headers; always inlined, as it was written out in both before).
#[inline(always)]
pub(super) fn v4_lengths(d: &[u8], wire_len: usize) -> Result<(usize, usize), Stop> {
    if d.len() < 20 {
        return Err(mal(MalformedReason::ShortIpHeader));
    }
    let ihl = (d[0] & 0x0f) as usize * 4;
    if ihl < 20 {
        return Err(mal(MalformedReason::BadIpHeaderLen));
    }
    if d.len() < ihl {
        return Err(mal(MalformedReason::ShortIpHeader));
    }
    // Total length 0: Linux GSO/TSO (and BIG TCP above 64 KiB) hand the stack's giant
    // segment to the capture before it is split; its length is the frame's.
    let total = match be16(d, 2) as usize {
        0 => wire_len,
        n => n,
    };
    if total < ihl {
        return Err(mal(MalformedReason::IpTotalLenTooSmall));
    }
    if total > wire_len {
        return Err(mal(MalformedReason::IpLenExceedsFrame));
    }
    Ok((ihl, total))
}

#[inline]
fn v4(d: &[u8], wire_len: usize) -> Result<IpInfo<'_>, Stop> {
    let (ihl, total) = v4_lengths(d, wire_len)?;
    if d[9] != TCP {
        return Err(Stop::NotTcp);
    }
    if be16(d, 6) & 0x1fff != 0 {
        return Err(mal(MalformedReason::IpFragment));
    }
    Ok(IpInfo {
        hdr: d,
        v6: false,
        l4_off: ihl,
        l4_len: total - ihl,
        ip_id: Some(be16(d, 4)),
    })
}

/// IPv6's fragment header type.
pub(super) const FRAGMENT: u8 = 44;

/// One IPv6 extension header, as [`v6_ext_header`] reads it.
pub(super) struct V6Ext {
    /// Its next header field.
    pub next: u8,
    /// Its length in bytes.
    pub len: usize,
    /// A fragment header's offset and flags field (offset << 3 | M); 0 for the others.
    pub fragment: u16,
}

/// The extension header of type `kind` at `p`, for the TCP decoder and the tunnel decoder's
/// walk to an encapsulated packet; `None` when `kind` is not one of them (TCP, UDP, ESP, no
/// next header, ...).
#[inline]
pub(super) fn v6_ext_header(d: &[u8], p: usize, kind: u8) -> Result<Option<V6Ext>, Stop> {
    let need = |end: usize| if d.len() < end { Err(mal(MalformedReason::Ipv6ExtHeaderTruncated)) } else { Ok(()) };
    let len = match kind {
        // Fragment: next(1) reserved(1) offset/flags(2) id(4).
        FRAGMENT => {
            need(p + 8)?;
            return Ok(Some(V6Ext { next: d[p], len: 8, fragment: be16(d, p + 2) }));
        }
        // Hop-by-hop, routing, destination options, mobility, HIP, shim6:
        // next(1) len(1) in 8-byte units not counting the first 8.
        0 | 43 | 60 | 135 | 139 | 140 => {
            need(p + 2)?;
            (d[p + 1] as usize + 1) * 8
        }
        // Authentication header: length in 4-byte units minus 2.
        51 => {
            need(p + 2)?;
            (d[p + 1] as usize + 2) * 4
        }
        _ => return Ok(None),
    };
    need(p + len)?;
    Ok(Some(V6Ext { next: d[p], len, fragment: 0 }))
}

#[inline]
fn v6(d: &[u8], wire_len: usize) -> Result<IpInfo<'_>, Stop> {
    if d.len() < 40 {
        return Err(mal(MalformedReason::ShortIpHeader));
    }
    let plen = be16(d, 4) as usize;
    let mut next = d[6];
    let mut p = 40;
    let mut jumbo: Option<usize> = None;
    // Each extension header is at least 8 bytes, so this loop ends within the frame.
    while next != TCP {
        // ESP (encrypted), no next header, UDP, ICMPv6, …
        let Some(h) = v6_ext_header(d, p, next)? else { return Err(Stop::NotTcp) };
        if next == 0 && plen == 0 {
            jumbo = jumbo_len(&d[p + 2..p + h.len]);
        }
        if next == FRAGMENT && h.fragment >> 3 != 0 {
            return Err(if h.next == TCP { mal(MalformedReason::IpFragment) } else { Stop::NotTcp });
        }
        next = h.next;
        p += h.len;
    }
    // Payload length 0: a jumbogram (RFC 2675) or an offloaded giant (Linux BIG TCP).
    let after_fixed = match (plen, jumbo) {
        (0, Some(j)) => j,
        (0, None) => wire_len.saturating_sub(40),
        (n, _) => n,
    };
    if after_fixed > wire_len.saturating_sub(40) {
        return Err(mal(MalformedReason::IpLenExceedsFrame));
    }
    if p - 40 > after_fixed {
        return Err(mal(MalformedReason::IpTotalLenTooSmall));
    }
    Ok(IpInfo {
        hdr: d,
        v6: true,
        l4_off: p,
        l4_len: after_fixed - (p - 40),
        ip_id: None,
    })
}

/// The RFC 2675 jumbo payload option (type 0xC2, 4 bytes) in hop-by-hop options.
fn jumbo_len(opts: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            0 => i += 1, // Pad1
            t => {
                let len = *opts.get(i + 1)? as usize;
                if t == 0xC2 && len == 4 && i + 6 <= opts.len() {
                    return Some(u32::from_be_bytes([
                        opts[i + 2],
                        opts[i + 3],
                        opts[i + 4],
                        opts[i + 5],
                    ]) as usize);
                }
                i += 2 + len;
            }
        }
    }
    None
}
