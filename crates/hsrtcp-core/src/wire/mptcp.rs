//! The MPTCP option (TCP option kind 30) decoded into its meaning: RFC 8684 (MPTCP v1),
//! with the RFC 6824 (v0) layouts recognised where they differ (MP_CAPABLE, ADD_ADDR,
//! MP_PRIO).
//!
//! The capture reader keeps the first MPTCP option of a segment raw ([`MptcpOption`]); the
//! MPTCP layer (`crate::mptcp`) calls [`MptcpOption::decode`] only for segments that carry
//! one, so TCP without MPTCP pays nothing. Every subtype's length is checked against the
//! lengths its RFC allows: anything else is a [`MptcpMalformed`] reason, counted per reason.
//! HMACs and nonces are not kept (nothing measured needs them).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::MptcpOption;

pub const MP_CAPABLE: u8 = 0;
pub const MP_JOIN: u8 = 1;
pub const DSS: u8 = 2;
pub const ADD_ADDR: u8 = 3;
pub const REMOVE_ADDR: u8 = 4;
pub const MP_PRIO: u8 = 5;
pub const MP_FAIL: u8 = 6;
pub const MP_FASTCLOSE: u8 = 7;
pub const MP_TCPRST: u8 = 8;

/// A DSS data sequence mapping (RFC 8684 §3.3.1): `data_len` bytes of data sequence space
/// from `dsn` ride on the subflow from relative subflow sequence `subflow_seq` (relative
/// to the subflow's ISN, as on the wire). `data_len` 0 is the infinite mapping (fallback).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DssMapping {
    pub dsn: u64,
    /// The DSN was sent as 8 octets; else only its low 32 bits are known.
    pub dsn64: bool,
    pub subflow_seq: u32,
    pub data_len: u16,
    /// The mapping carries a DSS checksum (checksums negotiated).
    pub checksum: Option<u16>,
}

/// A decoded DSS option (RFC 8684 §3.3), the option of nearly every segment of an MPTCP
/// connection: [`MptcpOption::decode_dss`] decodes it without the general [`Mptcp`] value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dss {
    /// The data ACK, and whether it was sent as 8 octets.
    pub data_ack: Option<(u64, bool)>,
    pub mapping: Option<DssMapping>,
    pub data_fin: bool,
}

/// One decoded MPTCP option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mptcp {
    /// MP_CAPABLE. v1 (RFC 8684 §3.1): SYN without key, SYN-ACK with the sender's key, third
    /// ACK with both keys, first data ACK with both keys and the data-level length. v0
    /// (RFC 6824): the SYN carries the sender's key too.
    Capable {
        version: u8,
        /// The checksum-required flag (A).
        checksum_required: bool,
        /// Key of the sender of this segment.
        sender_key: Option<u64>,
        /// Key of the receiver of this segment (echoed on the third ACK).
        receiver_key: Option<u64>,
        data_len: Option<u16>,
    },
    /// MP_JOIN (§3.2). The SYN carries the receiver's token; SYN-ACK and ACK carry HMACs.
    Join { backup: bool, address_id: Option<u8>, token: Option<u32> },
    /// DSS (§3.3): a data ACK and/or a mapping; DATA_FIN.
    Dss {
        /// The data ACK, and whether it was sent as 8 octets.
        data_ack: Option<(u64, bool)>,
        mapping: Option<DssMapping>,
        data_fin: bool,
    },
    /// ADD_ADDR (§3.4.1): `echo` set on the acknowledgement of an announcement.
    AddAddr { echo: bool, address_id: u8, addr: IpAddr, port: Option<u16> },
    /// REMOVE_ADDR (§3.4.2): `count` address ids.
    RemoveAddr { count: u8 },
    /// MP_PRIO (§3.3.8): backup flag; v0 also names the address id.
    Prio { backup: bool, address_id: Option<u8> },
    /// MP_FAIL (§3.7): the DSN where checksums failed.
    Fail { dsn: u64 },
    /// MP_FASTCLOSE (§3.5): the receiver's key.
    FastClose { receiver_key: u64 },
    /// MP_TCPRST (§3.6): reason code.
    TcpRst { reason: u8 },
    /// Subtypes RFC 8684 does not define (0xf is MP_EXPERIMENTAL).
    Other { subtype: u8 },
}

/// Why an MPTCP option could not be decoded (its length contradicts its subtype and flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MptcpMalformed {
    CapableLen,
    JoinLen,
    DssLen,
    AddAddrLen,
    RemoveAddrLen,
    PrioLen,
    FailLen,
    FastCloseLen,
    TcpRstLen,
    /// The option was longer than the 32 body bytes the segment keeps (no RFC option is).
    TooLong,
}

impl MptcpMalformed {
    pub const ALL: [MptcpMalformed; 10] = [
        MptcpMalformed::CapableLen,
        MptcpMalformed::JoinLen,
        MptcpMalformed::DssLen,
        MptcpMalformed::AddAddrLen,
        MptcpMalformed::RemoveAddrLen,
        MptcpMalformed::PrioLen,
        MptcpMalformed::FailLen,
        MptcpMalformed::FastCloseLen,
        MptcpMalformed::TcpRstLen,
        MptcpMalformed::TooLong,
    ];

    /// Stable name, as counted in `captures.malformed_reasons`.
    pub fn name(self) -> &'static str {
        match self {
            MptcpMalformed::CapableLen => "mptcp_capable_len",
            MptcpMalformed::JoinLen => "mptcp_join_len",
            MptcpMalformed::DssLen => "mptcp_dss_len",
            MptcpMalformed::AddAddrLen => "mptcp_add_addr_len",
            MptcpMalformed::RemoveAddrLen => "mptcp_remove_addr_len",
            MptcpMalformed::PrioLen => "mptcp_prio_len",
            MptcpMalformed::FailLen => "mptcp_fail_len",
            MptcpMalformed::FastCloseLen => "mptcp_fastclose_len",
            MptcpMalformed::TcpRstLen => "mptcp_tcprst_len",
            MptcpMalformed::TooLong => "mptcp_too_long",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

// One bounds check and one load per field (byte-wise reads made decoding 260 instructions
// a DSS on an MPTCP capture, callgrind).
#[inline(always)]
fn be16(d: &[u8], at: usize) -> u16 {
    u16::from_be_bytes(d[at..at + 2].try_into().expect("2 bytes"))
}
#[inline(always)]
fn be32(d: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(d[at..at + 4].try_into().expect("4 bytes"))
}
#[inline(always)]
fn be64(d: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(d[at..at + 8].try_into().expect("8 bytes"))
}

/// Whether an MPTCP option of `subtype`, low-nibble `flags` and total length `len` has a
/// length its RFC allows (for DSS this needs the flags byte: `dss_flags`). The reader uses
/// it for the options after a segment's first, which it does not keep.
pub fn length_ok(subtype: u8, flags: u8, len: u8, dss_flags: u8) -> bool {
    match subtype {
        MP_CAPABLE => matches!(len, 4 | 12 | 20 | 22 | 24),
        MP_JOIN => matches!(len, 12 | 16 | 24),
        DSS => len == dss_len(dss_flags) || (dss_flags & 0x04 != 0 && len == dss_len(dss_flags) + 2),
        ADD_ADDR => add_addr_layout(flags, len).is_some(),
        REMOVE_ADDR => len >= 4,
        MP_PRIO => matches!(len, 3 | 4),
        MP_FAIL => len == 12,
        MP_FASTCLOSE => len == 12,
        MP_TCPRST => len == 4,
        _ => true,
    }
}

/// [`dss_len`] for each value of the low four flags (the data FIN does not change it).
const DSS_LEN: [u8; 16] = {
    let mut t = [0u8; 16];
    let mut f = 0;
    while f < 16 {
        t[f] = dss_len(f as u8);
        f += 1;
    }
    t
};

/// DSS length without checksum for the flags byte (RFC 8684 Figure 17: F m M a A).
const fn dss_len(f: u8) -> u8 {
    let ack = if f & 0x01 != 0 { if f & 0x02 != 0 { 8 } else { 4 } } else { 0 };
    let map = if f & 0x04 != 0 { (if f & 0x08 != 0 { 8 } else { 4 }) + 4 + 2 } else { 0 };
    4 + ack + map
}

/// ADD_ADDR layout for (low nibble, length): (IPv6, port present, echo). v1 (nibble 0 or
/// 1 = E) lengths 8/10/16/18 (IPv4: echo or HMAC, with or without port), 20/22/28/30
/// (IPv6); v0 (nibble = IP version 4 or 6) lengths 8/10 and 20/22.
fn add_addr_layout(flags: u8, len: u8) -> Option<(bool, bool, bool)> {
    match flags {
        0 | 1 => {
            let echo = flags == 1;
            let hmac = if echo { 0 } else { 8 };
            match len.checked_sub(hmac)? {
                8 => Some((false, false, echo)),
                10 => Some((false, true, echo)),
                20 => Some((true, false, echo)),
                22 => Some((true, true, echo)),
                _ => None,
            }
        }
        4 => match len {
            8 => Some((false, false, false)),
            10 => Some((false, true, false)),
            _ => None,
        },
        6 => match len {
            20 => Some((true, false, false)),
            22 => Some((true, true, false)),
            _ => None,
        },
        _ => None,
    }
}

impl MptcpOption {
    /// Decode a DSS option (the caller tested `subtype == DSS`): the per-segment path of
    /// the MPTCP tracker, which needs no other subtype. Field reads straight from the raw
    /// body: a length that matches the flags (checked first) keeps every field inside it.
    #[inline]
    pub fn decode_dss(&self) -> Result<Dss, MptcpMalformed> {
        let (len, r) = (self.len, &self.raw);
        let fl = r[0];
        let base = DSS_LEN[(fl & 0x0f) as usize];
        let csum = fl & 0x04 != 0 && len == base + 2;
        if len != base && !csum {
            return Err(if len as usize > 3 + r.len() { MptcpMalformed::TooLong } else { MptcpMalformed::DssLen });
        }
        // Fixed windows of the 32-byte body, fields cut out by shifts: no bounds check per
        // field (they made up a fifth of this function's instructions).
        let ack8 = be64(r, 1);
        let wide = fl & 0x02 != 0;
        let data_ack = (fl & 0x01 != 0).then_some(if wide { (ack8, true) } else { (ack8 >> 32, false) });
        let mapping = (fl & 0x04 != 0).then(|| {
            let at = if fl & 0x01 == 0 { 1 } else if wide { 9 } else { 5 };
            // DSN (8 or 4), subflow sequence (4), data-level length (2), checksum (2)
            let x = u128::from_be_bytes(r[at..at + 16].try_into().expect("16 bytes"));
            let dsn64 = fl & 0x08 != 0;
            let (dsn, rest) = if dsn64 { ((x >> 64) as u64, x << 64) } else { ((x >> 96) as u64, x << 32) };
            DssMapping {
                dsn,
                dsn64,
                subflow_seq: (rest >> 96) as u32,
                data_len: (rest >> 80) as u16,
                checksum: csum.then_some((rest >> 64) as u16),
            }
        });
        Ok(Dss { data_ack, mapping, data_fin: fl & 0x10 != 0 })
    }

    /// Decode the option. `syn`: the segment is a SYN or SYN-ACK (MP_JOIN and v0
    /// MP_CAPABLE lay out their SYN differently from their ACK only by length, which is
    /// enough, so it is used only to name the key on a 12-byte MP_CAPABLE).
    pub fn decode(&self) -> Result<Mptcp, MptcpMalformed> {
        let len = self.len;
        if len as usize > 3 + self.raw.len() {
            return Err(MptcpMalformed::TooLong);
        }
        let b = self.body();
        let f = self.flags;
        Ok(match self.subtype {
            MP_CAPABLE => {
                if !matches!(len, 4 | 12 | 20 | 22 | 24) {
                    return Err(MptcpMalformed::CapableLen);
                }
                // v0 SYNs carry a key (12 bytes); the v1 SYN has only the flags byte (4).
                Mptcp::Capable {
                    version: f,
                    checksum_required: b[0] & 0x80 != 0,
                    sender_key: (len >= 12).then(|| be64(b, 1)),
                    receiver_key: (len >= 20).then(|| be64(b, 9)),
                    data_len: (len >= 22).then(|| be16(b, 17)),
                }
            }
            MP_JOIN => match len {
                12 => Mptcp::Join { backup: f & 1 != 0, address_id: Some(b[0]), token: Some(be32(b, 1)) },
                16 => Mptcp::Join { backup: f & 1 != 0, address_id: Some(b[0]), token: None },
                24 => Mptcp::Join { backup: false, address_id: None, token: None },
                _ => return Err(MptcpMalformed::JoinLen),
            },
            DSS => {
                let Dss { data_ack, mapping, data_fin } = self.decode_dss()?;
                Mptcp::Dss { data_ack, mapping, data_fin }
            }
            ADD_ADDR => {
                let (v6, port, echo) = add_addr_layout(f, len).ok_or(MptcpMalformed::AddAddrLen)?;
                let addr = if v6 {
                    IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(&b[1..17]).expect("16 bytes")))
                } else {
                    IpAddr::V4(Ipv4Addr::new(b[1], b[2], b[3], b[4]))
                };
                let at = if v6 { 17 } else { 5 };
                Mptcp::AddAddr { echo, address_id: b[0], addr, port: port.then(|| be16(b, at)) }
            }
            REMOVE_ADDR => {
                if len < 4 {
                    return Err(MptcpMalformed::RemoveAddrLen);
                }
                Mptcp::RemoveAddr { count: len - 3 }
            }
            MP_PRIO => match len {
                3 => Mptcp::Prio { backup: f & 1 != 0, address_id: None },
                4 => Mptcp::Prio { backup: f & 1 != 0, address_id: Some(b[0]) },
                _ => return Err(MptcpMalformed::PrioLen),
            },
            MP_FAIL => {
                if len != 12 {
                    return Err(MptcpMalformed::FailLen);
                }
                Mptcp::Fail { dsn: be64(b, 1) }
            }
            MP_FASTCLOSE => {
                if len != 12 {
                    return Err(MptcpMalformed::FastCloseLen);
                }
                Mptcp::FastClose { receiver_key: be64(b, 1) }
            }
            MP_TCPRST => {
                if len != 4 {
                    return Err(MptcpMalformed::TcpRstLen);
                }
                Mptcp::TcpRst { reason: b[0] }
            }
            s => Mptcp::Other { subtype: s },
        })
    }
}
