//! `Segment`: one decoded TCP packet, the unit every layer above `wire` consumes.
//!
//! A segment is a plain value (no borrowed bytes) so the flow engine can keep it, and small
//! enough to copy. Lengths come from the IP header, never from the captured length, so
//! snaplen-truncated captures (`-s 96`, `-s 128`) give the right payload sizes.

use std::net::IpAddr;

pub use crate::Nanos;

/// TCP header flags (the low 9 bits of the flags field).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TcpFlags(pub u16);

impl TcpFlags {
    pub const FIN: u16 = 0x001;
    pub const SYN: u16 = 0x002;
    pub const RST: u16 = 0x004;
    pub const PSH: u16 = 0x008;
    pub const ACK: u16 = 0x010;
    pub const URG: u16 = 0x020;
    pub const ECE: u16 = 0x040;
    pub const CWR: u16 = 0x080;
    pub fn fin(self) -> bool {
        self.0 & Self::FIN != 0
    }
    pub fn syn(self) -> bool {
        self.0 & Self::SYN != 0
    }
    pub fn rst(self) -> bool {
        self.0 & Self::RST != 0
    }
    pub fn ack(self) -> bool {
        self.0 & Self::ACK != 0
    }
    pub fn psh(self) -> bool {
        self.0 & Self::PSH != 0
    }
}

/// A SACK block as carried on the wire (left edge inclusive, right edge exclusive).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlock {
    pub left: u32,
    pub right: u32,
}

/// The MPTCP option (kind 30) as seen: subtype kept, body kept raw for the MPTCP layer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MptcpOption {
    /// RFC 8684 subtype (0 MP_CAPABLE, 1 MP_JOIN, 2 DSS, 3 ADD_ADDR, ...).
    pub subtype: u8,
    /// Option length in bytes including kind and length.
    pub len: u8,
    /// The low four bits of the subtype byte (MP_CAPABLE version, MP_JOIN backup flag,
    /// ADD_ADDR echo flag, ...).
    pub flags: u8,
    /// The option bytes after the subtype byte (raw, zero-padded): `len - 3` of them are
    /// meaningful. 32 bytes hold every RFC 8684 option, the 28-byte DSS with 64-bit data
    /// ACK and DSN and the 30-byte ADD_ADDR (IPv6, port, HMAC) included.
    pub raw: [u8; 32],
}

impl MptcpOption {
    /// The meaningful body bytes (after the subtype byte).
    pub fn body(&self) -> &[u8] {
        &self.raw[..(self.len as usize).saturating_sub(3).min(32)]
    }
}

/// Decoded TCP options. Absent options are `None`; a segment carries at most four SACK blocks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpOptions {
    pub mss: Option<u16>,
    pub wscale: Option<u8>,
    pub sack_permitted: bool,
    pub sack_count: u8,
    pub sack: [SackBlock; 4],
    /// RFC 7323 timestamps: (TSval, TSecr).
    pub timestamp: Option<(u32, u32)>,
    /// The first MPTCP option of the segment.
    pub mptcp: Option<MptcpOption>,
    /// How many MPTCP options the segment carried (a DSS and an MP_PRIO can share one).
    pub mptcp_count: u8,
    /// The MPTCP options after the first (Linux puts ADD_ADDR, REMOVE_ADDR, MP_PRIO or
    /// MP_FAIL after a DSS): bit `subtype` set for each; bit 15 (MP_EXPERIMENTAL, never
    /// counted) is reused for "one of them had a length its subtype does not allow".
    pub mptcp_more: u16,
    /// The backup flag of the last MP_PRIO among the options after the first.
    pub mptcp_more_backup: bool,
    /// Options that were cut by the snaplen or malformed; decoding stopped there.
    pub truncated: bool,
}

impl TcpOptions {
    pub fn sack_blocks(&self) -> &[SackBlock] {
        &self.sack[..self.sack_count as usize]
    }
}

/// One TCP packet as the flow engine sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub ts: Nanos,
    pub src: IpAddr,
    pub dst: IpAddr,
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: TcpFlags,
    /// Raw (unscaled) window field.
    pub window: u16,
    /// TCP payload length from the IP header (may exceed the MSS for TSO/GRO giants).
    pub payload_len: u32,
    /// IPv4 identification; `None` for IPv6.
    pub ip_id: Option<u16>,
    pub options: TcpOptions,
    /// The captured bytes ended before the full TCP payload (normal with a small snaplen).
    pub payload_truncated: bool,
    /// 0: the packet came as it is; else the id of its encapsulation (tunnel type, outer
    /// addresses, TEID/VNI/key/labels) in the capture's [`super::tunnel::Outers`].
    pub outer: u32,
    /// Number of the capture record this segment came from, 1-based, counting every packet
    /// record of the file (Wireshark's `frame.number`); 0 when not from a file. Wraps past
    /// 2^32 records, like Wireshark's own counter (the flow table unwraps it).
    pub frame: u32,
}

impl Segment {
    /// Sequence space this segment occupies: payload plus one for SYN and one for FIN.
    pub fn seq_len(&self) -> u32 {
        self.payload_len + self.flags.syn() as u32 + self.flags.fin() as u32
    }
}
