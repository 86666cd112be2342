//! Tolerant decoding of link, network and TCP headers into [`Segment`] values.
//!
//! [`decode`] walks one captured frame: the link layer (Ethernet with 802.1Q/802.1ad tags,
//! PPPoE and MPLS; Linux cooked v1/v2; raw IP; BSD/OpenBSD loopback; PPP), IPv4 (options,
//! fragments) or IPv6 (extension headers), then TCP and all its options. The result is a
//! [`Decoded`]: a TCP [`Segment`], a packet of another protocol, or a malformed packet with a
//! [`MalformedReason`] to count. Nothing is allocated and no payload byte is copied.
//! [`decode_append`] is the same decoder writing the segment straight into a batch (the
//! capture reader's hot path).
//!
//! Rules that matter for measurements:
//! - Lengths come from the IP header (IPv4 total length − header length − TCP data offset;
//!   IPv6 payload length − extension headers − data offset), never from the captured length:
//!   captures with a small snaplen (`-s 96`) give true payload sizes and `payload_truncated`.
//!   Ethernet padding after a short IP packet is ignored for the same reason. An IP length
//!   larger than the frame's original (wire) length is corrupt: [`MalformedReason::IpLenExceedsFrame`].
//! - Segmentation offload: an IPv4 total length of 0 (Linux GSO/BIG TCP) or an IPv6 payload
//!   length of 0 without a jumbo option means "as long as the frame on the wire", taken from
//!   the record's original length. Payloads larger than the MSS are accepted as they are.
//! - Only first fragments carry a TCP header; later fragments of TCP are
//!   [`MalformedReason::IpFragment`]. A first fragment decodes with the fragment's length.
//! - Checksums are not verified: captures at the sender carry offloaded (wrong) checksums.
//! - TCP options cut by the snaplen, or malformed, set `options.truncated`; the options
//!   before the cut are kept. Unknown options are skipped by their length.
mod bytes;
mod ip;
mod link;
pub mod mptcp;
mod segment;
mod tcp;
pub mod tunnel;

pub use segment::*;
pub use tcp::parse_options;
pub use tunnel::{Encap, Outer, OuterTable, Outers};

use std::mem::MaybeUninit;

use crate::capture::{Frame, LinkType};

/// The outcome of decoding one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decoded {
    /// A TCP segment (possibly with truncated options or payload, see its flags).
    Tcp(Segment),
    /// A well-formed packet that is not TCP: ARP, UDP, ICMP, IPsec, LLC, …
    NotTcp,
    /// A packet that cannot be decoded as far as TCP; counted per reason.
    Malformed(MalformedReason),
}

/// Why a frame could not be decoded. `name()` is stable: it is stored in result tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MalformedReason {
    /// The frame ends inside the link-layer header (or its VLAN/PPPoE/MPLS encapsulation).
    ShortLinkHeader,
    /// A link type the decoder does not know.
    UnknownLinktype,
    /// The IP version nibble contradicts the link layer (or is neither 4 nor 6 for raw IP).
    BadIpVersion,
    /// The frame ends inside the fixed IPv4/IPv6 header or the IPv4 options.
    ShortIpHeader,
    /// IPv4 header length below 20 bytes.
    BadIpHeaderLen,
    /// The IP length fields leave less room than the headers they announce.
    IpTotalLenTooSmall,
    /// The IP header claims more bytes than the frame had on the wire (its original
    /// length): a corrupt length field.
    IpLenExceedsFrame,
    /// The frame ends inside an IPv6 extension header.
    Ipv6ExtHeaderTruncated,
    /// A non-first fragment of a TCP packet: it has no TCP header.
    IpFragment,
    /// The frame ends inside the 20 fixed bytes of the TCP header.
    ShortTcpHeader,
    /// TCP data offset below 5 words or beyond the IP payload.
    BadTcpDataOffset,
    /// More than `tunnel::MAX_DEPTH` encapsulations around the packet.
    TunnelTooDeep,
    /// A UDP header on a tunnel port (GTP-U, VXLAN, Geneve) cut by the capture.
    UdpTruncated,
    /// A UDP length below its own 8 bytes on a tunnel port.
    UdpBadLength,
    /// The frame ends inside a GRE header.
    GreTruncated,
    /// A GRE header with routing, an unknown version, or PPTP fields missing.
    GreBadHeader,
    /// The frame ends inside an ERSPAN header.
    ErspanTruncated,
    /// An ERSPAN header whose version contradicts its GRE protocol type.
    ErspanBadHeader,
    /// The frame ends inside a GTP-U header or its extension headers.
    GtpuTruncated,
    /// A GTP-U header that is not version 1 / GTP, an extension header of length 0, or a
    /// length shorter than its optional fields.
    GtpuBadHeader,
    /// The frame ends inside a VXLAN header.
    VxlanTruncated,
    /// A VXLAN header without the I (valid VNI) flag.
    VxlanBadHeader,
    /// The frame ends inside a Geneve header or its options.
    GeneveTruncated,
    /// A Geneve header of a version other than 0.
    GeneveBadHeader,
}

impl MalformedReason {
    /// Every reason, in declaration order (for counter tables).
    pub const ALL: [MalformedReason; 24] = [
        MalformedReason::ShortLinkHeader,
        MalformedReason::UnknownLinktype,
        MalformedReason::BadIpVersion,
        MalformedReason::ShortIpHeader,
        MalformedReason::BadIpHeaderLen,
        MalformedReason::IpTotalLenTooSmall,
        MalformedReason::IpLenExceedsFrame,
        MalformedReason::Ipv6ExtHeaderTruncated,
        MalformedReason::IpFragment,
        MalformedReason::ShortTcpHeader,
        MalformedReason::BadTcpDataOffset,
        MalformedReason::TunnelTooDeep,
        MalformedReason::UdpTruncated,
        MalformedReason::UdpBadLength,
        MalformedReason::GreTruncated,
        MalformedReason::GreBadHeader,
        MalformedReason::ErspanTruncated,
        MalformedReason::ErspanBadHeader,
        MalformedReason::GtpuTruncated,
        MalformedReason::GtpuBadHeader,
        MalformedReason::VxlanTruncated,
        MalformedReason::VxlanBadHeader,
        MalformedReason::GeneveTruncated,
        MalformedReason::GeneveBadHeader,
    ];

    /// Stable snake_case name for per-reason counters.
    pub fn name(self) -> &'static str {
        match self {
            MalformedReason::ShortLinkHeader => "short_link_header",
            MalformedReason::UnknownLinktype => "unknown_linktype",
            MalformedReason::BadIpVersion => "bad_ip_version",
            MalformedReason::ShortIpHeader => "short_ip_header",
            MalformedReason::BadIpHeaderLen => "bad_ip_header_len",
            MalformedReason::IpTotalLenTooSmall => "ip_total_len_too_small",
            MalformedReason::IpLenExceedsFrame => "ip_len_exceeds_frame",
            MalformedReason::Ipv6ExtHeaderTruncated => "ipv6_ext_header_truncated",
            MalformedReason::IpFragment => "ip_fragment",
            MalformedReason::ShortTcpHeader => "short_tcp_header",
            MalformedReason::BadTcpDataOffset => "bad_tcp_data_offset",
            MalformedReason::TunnelTooDeep => "tunnel_too_deep",
            MalformedReason::UdpTruncated => "udp_truncated",
            MalformedReason::UdpBadLength => "udp_bad_length",
            MalformedReason::GreTruncated => "gre_truncated",
            MalformedReason::GreBadHeader => "gre_bad_header",
            MalformedReason::ErspanTruncated => "erspan_truncated",
            MalformedReason::ErspanBadHeader => "erspan_bad_header",
            MalformedReason::GtpuTruncated => "gtpu_truncated",
            MalformedReason::GtpuBadHeader => "gtpu_bad_header",
            MalformedReason::VxlanTruncated => "vxlan_truncated",
            MalformedReason::VxlanBadHeader => "vxlan_bad_header",
            MalformedReason::GeneveTruncated => "geneve_truncated",
            MalformedReason::GeneveBadHeader => "geneve_bad_header",
        }
    }
}

impl std::fmt::Display for MalformedReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a frame gave no segment: [`Decoded`] without the segment, the error side of
/// [`decode_append`] (kept small: the hot path returns it by value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// A well-formed packet that is not TCP ([`Decoded::NotTcp`]).
    NotTcp,
    /// A packet that cannot be decoded as far as TCP ([`Decoded::Malformed`]).
    Malformed(MalformedReason),
}

/// The decoders' shorthand for [`Stop::Malformed`].
#[inline]
fn mal(r: MalformedReason) -> Stop {
    Stop::Malformed(r)
}

impl From<Stop> for Decoded {
    fn from(s: Stop) -> Decoded {
        match s {
            Stop::NotTcp => Decoded::NotTcp,
            Stop::Malformed(r) => Decoded::Malformed(r),
        }
    }
}

/// Decode one captured frame.
#[inline]
pub fn decode(frame: &Frame) -> Decoded {
    decode_packet(frame.linktype, frame.data, frame.orig_len, frame.ts)
}

/// Decode captured bytes of the given link type. `orig_len` is the length on the wire
/// (used only for offloaded segments whose IP length field is 0); `ts` is copied into the
/// segment. A tunneled segment's `outer` is 1 (the id in a registry of its own; see
/// [`decode_packet_outer`] for the encapsulation).
#[inline]
pub fn decode_packet(linktype: LinkType, data: &[u8], orig_len: u32, ts: Nanos) -> Decoded {
    decode_packet_outer(linktype, data, orig_len, ts).0
}

/// [`decode_packet`], with the encapsulation the segment was found in (`None` for a plain
/// packet and for anything but a TCP segment).
pub fn decode_packet_outer(linktype: LinkType, data: &[u8], orig_len: u32, ts: Nanos) -> (Decoded, Option<Outer>) {
    // (a record of no file: the decoder reads only these four fields)
    let frame = Frame { ts, linktype, data, orig_len, offset: 0, iface: 0, index: 0 };
    let mut seg = MaybeUninit::uninit();
    let mut outers = Outers::default();
    match decode_packet_into(&frame, &mut seg, &mut outers) {
        Ok(()) => {
            // SAFETY: decode_packet_into writes the segment whenever it returns Ok.
            let seg = unsafe { seg.assume_init() };
            (Decoded::Tcp(seg), if seg.outer != 0 { outers.last() } else { None })
        }
        Err(s) => (s.into(), None),
    }
}

/// [`decode`], appending a TCP segment to `out` in place (no copy of the segment: this is
/// the capture reader's hot path). Anything else comes back as the [`Stop`] and leaves
/// `out` as it was. A tunneled segment's encapsulation is registered in `outers` and its
/// id put in `Segment::outer`.
#[inline]
pub fn decode_append(frame: &Frame, out: &mut Vec<Segment>, outers: &mut Outers) -> Result<(), Stop> {
    out.reserve(1);
    let slot = &mut out.spare_capacity_mut()[0];
    decode_packet_into(frame, slot, outers)?;
    // SAFETY: capacity was reserved above and decode_packet_into wrote the slot (it returned Ok).
    unsafe { out.set_len(out.len() + 1) };
    // (truncated to Wireshark's 32 bits; FlowTable unwraps it)
    out.last_mut().expect("just appended").frame = frame.index as u32;
    Ok(())
}

/// The decoder proper: writes `out` exactly when it returns `Ok`. Plain frames decode here;
/// whatever is not plain TCP (MPLS, PPPoE, UDP, GRE, IP in IP, ARP, ...) is looked at again
/// by the tunnel decoder, out of line, so plain TCP pays nothing for tunnels.
#[inline]
fn decode_packet_into(frame: &Frame, out: &mut MaybeUninit<Segment>, outers: &mut Outers) -> Result<(), Stop> {
    let Frame { linktype, data, orig_len, ts, .. } = *frame;
    let (off, net) = match link::locate(linktype, data) {
        Ok(x) => x,
        Err(Stop::NotTcp) => return tunnel::decode_slow(*frame, out, outers, None),
        Err(e) => return Err(e),
    };
    // Bytes of the network layer on the wire (a frame can't be shorter than what was captured).
    let wire_l3 = (orig_len as usize).max(data.len()) - off;
    let ip = match ip::locate(net, &data[off..], wire_l3) {
        Ok(ip) => ip,
        Err(Stop::NotTcp) => return tunnel::decode_ip_not_tcp(*frame, out, outers, (off, net)),
        Err(e) => return Err(e),
    };
    tcp::decode_into(&data[off + ip.l4_off..], ip, ts, out)
}

#[cfg(test)]
mod tests;
