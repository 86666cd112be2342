//! Link-layer header types (the tcpdump.org LINKTYPE_* registry).

use std::fmt;

/// A capture's link-layer type, as stored in a pcap file header or a pcapng interface
/// description block. Open newtype: any value can occur; the decoder handles those named here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LinkType(pub u32);

impl LinkType {
    /// BSD loopback: 4-byte address family in the writer's host byte order.
    pub const NULL: LinkType = LinkType(0);
    pub const ETHERNET: LinkType = LinkType(1);
    /// PPP, RFC 1661 (optional 0xff 0x03 address/control, then the protocol).
    pub const PPP: LinkType = LinkType(9);
    /// PPP in HDLC-like framing (RFC 1662).
    pub const PPP_HDLC: LinkType = LinkType(50);
    /// PPPoE session header without Ethernet.
    pub const PPP_ETHER: LinkType = LinkType(51);
    /// Cisco HDLC: address, control, then an ethertype.
    pub const C_HDLC: LinkType = LinkType(104);
    /// Raw IP as written by old libpcaps (DLT_RAW was 12 on most systems, 14 on OpenBSD).
    pub const RAW_12: LinkType = LinkType(12);
    pub const RAW_14: LinkType = LinkType(14);
    /// Raw IP, version taken from the first nibble.
    pub const RAW: LinkType = LinkType(101);
    /// OpenBSD loopback: 4-byte address family in network byte order.
    pub const LOOP: LinkType = LinkType(108);
    /// Linux cooked capture v1 (`tcpdump -i any` before libpcap 1.10).
    pub const LINUX_SLL: LinkType = LinkType(113);
    pub const IPV4: LinkType = LinkType(228);
    pub const IPV6: LinkType = LinkType(229);
    /// Linux cooked capture v2 (`tcpdump -i any` with libpcap ≥ 1.10).
    pub const LINUX_SLL2: LinkType = LinkType(276);

    /// The registry name, or `None` for types the decoder does not know.
    pub fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            0 => "NULL",
            1 => "ETHERNET",
            9 => "PPP",
            50 => "PPP_HDLC",
            51 => "PPP_ETHER",
            104 => "C_HDLC",
            12 | 14 | 101 => "RAW",
            108 => "LOOP",
            113 => "LINUX_SLL",
            228 => "IPV4",
            229 => "IPV6",
            276 => "LINUX_SLL2",
            _ => return None,
        })
    }
}

impl fmt::Display for LinkType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => write!(f, "{n} ({})", self.0),
            None => write!(f, "linktype {}", self.0),
        }
    }
}
