//! A connection that has carried no data yet, kept as its few segments instead of as a
//! [`crate::flow::Connection`] (issue 16: a port scan's millions of SYNs must cost a few hundred bytes
//! each, docs/engine.md "Memory").
//!
//! An embryo holds the connection's identity and up to [`KEPT_SEGMENTS`] segments without
//! payload, each packed into 40 bytes. The first segment it cannot keep (payload, SACK
//! blocks, MPTCP options, or one segment too many) hatches it: the flow table replays the
//! kept segments, in order, through its own packet path into a new connection, then feeds
//! it the new one (flow/table.rs, `hatch`). Connections that end as embryos (unanswered,
//! refused, reset) are hatched the same way when they are written out. So every connection
//! goes through exactly the code it would have gone through as a connection from its first
//! packet, and its rows are the same; a segment is kept only if it unpacks to itself.

use crate::flow::event::Dir;
use crate::flow::key::{roles_of, Endpoint};
use crate::wire::{Nanos, Segment, TcpFlags, TcpOptions};

/// Segments an embryo keeps: an unanswered SYN and its retry, SYN + RST, SYN + SYN-ACK + RST
/// (a scan of an open port) stay embryos.
pub const KEPT_SEGMENTS: usize = 3;

/// One segment without payload, packed (the fields a [`Segment`] of a connection carries
/// besides the connection's endpoints).
#[derive(Clone, Copy, Debug, Default)]
struct Kept {
    ts: Nanos,
    seq: u32,
    ack: u32,
    tsval: u32,
    tsecr: u32,
    flags: u16,
    window: u16,
    ip_id: u16,
    mss: u16,
    wscale: u8,
    /// [`Bit`]s: direction and which optional fields are present.
    bits: Bit,
    /// Segment::frame (in what was padding: still 40 bytes).
    frame: u32,
}

bitflags::bitflags! {
    /// Bits of [`Kept::bits`].
    #[derive(Clone, Copy, Debug, Default)]
    struct Bit: u8 {
        const S2C = 1 << 0;
        const IP_ID = 1 << 1;
        const MSS = 1 << 2;
        const WSCALE = 1 << 3;
        const SACK_PERMITTED = 1 << 4;
        const TIMESTAMP = 1 << 5;
        const OPTIONS_TRUNCATED = 1 << 6;
        const PAYLOAD_TRUNCATED = 1 << 7;
    }
}

impl Kept {
    fn pack(seg: &Segment, dir: Dir) -> Kept {
        let o = &seg.options;
        let bit = |on: bool, b: Bit| if on { b } else { Bit::empty() };
        let (tsval, tsecr) = o.timestamp.unwrap_or((0, 0));
        Kept {
            ts: seg.ts,
            seq: seg.seq,
            ack: seg.ack,
            tsval,
            tsecr,
            flags: seg.flags.0,
            window: seg.window,
            ip_id: seg.ip_id.unwrap_or(0),
            mss: o.mss.unwrap_or(0),
            wscale: o.wscale.unwrap_or(0),
            bits: bit(dir == Dir::S2C, Bit::S2C)
                | bit(seg.ip_id.is_some(), Bit::IP_ID)
                | bit(o.mss.is_some(), Bit::MSS)
                | bit(o.wscale.is_some(), Bit::WSCALE)
                | bit(o.sack_permitted, Bit::SACK_PERMITTED)
                | bit(o.timestamp.is_some(), Bit::TIMESTAMP)
                | bit(o.truncated, Bit::OPTIONS_TRUNCATED)
                | bit(seg.payload_truncated, Bit::PAYLOAD_TRUNCATED),
            frame: seg.frame,
        }
    }

    fn has(&self, b: Bit) -> bool {
        self.bits.contains(b)
    }

    fn dir(&self) -> Dir {
        if self.has(Bit::S2C) {
            Dir::S2C
        } else {
            Dir::C2S
        }
    }

    fn flags(&self) -> TcpFlags {
        TcpFlags(self.flags)
    }

    /// The segment again, between `client` and `server`.
    fn unpack(&self, client: Endpoint, server: Endpoint) -> Segment {
        let (src, dst) = match self.dir() {
            Dir::C2S => (client, server),
            Dir::S2C => (server, client),
        };
        let some = |b: Bit| self.has(b);
        Segment {
            ts: self.ts,
            src: src.addr,
            dst: dst.addr,
            sport: src.port,
            dport: dst.port,
            seq: self.seq,
            ack: self.ack,
            flags: self.flags(),
            window: self.window,
            payload_len: 0,
            ip_id: some(Bit::IP_ID).then_some(self.ip_id),
            options: TcpOptions {
                mss: some(Bit::MSS).then_some(self.mss),
                wscale: some(Bit::WSCALE).then_some(self.wscale),
                sack_permitted: some(Bit::SACK_PERMITTED),
                timestamp: some(Bit::TIMESTAMP).then_some((self.tsval, self.tsecr)),
                truncated: some(Bit::OPTIONS_TRUNCATED),
                ..TcpOptions::default()
            },
            payload_truncated: some(Bit::PAYLOAD_TRUNCATED),
            outer: 0,
            frame: self.frame,
        }
    }
}

/// An open connection that has carried no data yet (see the module's doc).
pub struct Embryo {
    client: Endpoint,
    server: Endpoint,
    flow_id: u64,
    /// Time of the first packet (the embryo exists from then, before it keeps it).
    first_ts: Nanos,
    epoch: u32,
    len: u8,
    kept: [Kept; KEPT_SEGMENTS],
}

impl Embryo {
    /// A connection whose first captured packet is `seg` (not kept yet: see [`Self::keep`]).
    pub fn new(flow_id: u64, epoch: u32, seg: &Segment) -> Self {
        let (client, server, _) = roles_of(seg);
        Embryo { client, server, flow_id, first_ts: seg.ts, epoch, len: 0, kept: [Kept::default(); KEPT_SEGMENTS] }
    }

    pub fn flow_id(&self) -> u64 {
        self.flow_id
    }

    pub fn client(&self) -> Endpoint {
        self.client
    }

    fn kept(&self) -> &[Kept] {
        &self.kept[..self.len as usize]
    }

    /// Keep `seg` (travelling in `dir`) if there is room and it packs without loss; false:
    /// the connection must hatch.
    pub fn keep(&mut self, seg: &Segment, dir: Dir) -> bool {
        if self.len as usize == KEPT_SEGMENTS || seg.payload_len != 0 {
            return false;
        }
        let k = Kept::pack(seg, dir);
        if k.unpack(self.client, self.server) != *seg {
            return false; // SACK blocks, MPTCP, or roles that the first segment did not set
        }
        self.kept[self.len as usize] = k;
        self.len += 1;
        true
    }

    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// The kept segments, in order (the flow table replays them when the embryo hatches).
    pub fn segments(&self) -> impl Iterator<Item = Segment> + '_ {
        self.kept().iter().map(|k| k.unpack(self.client, self.server))
    }

    /// Time of the last packet (what [`crate::flow::ConnBase::last_ts`] would hold).
    pub fn last_ts(&self) -> Nanos {
        self.kept().iter().map(|k| k.ts).fold(self.first_ts, Nanos::max)
    }

    /// [`crate::flow::ConnBase::closed`]: a RST, or a FIN from both sides.
    pub fn closed(&self) -> bool {
        let k = self.kept();
        k.iter().any(|k| k.flags().rst())
            || [Dir::C2S, Dir::S2C].iter().all(|&d| k.iter().any(|k| k.dir() == d && k.flags().fin()))
    }

    /// The sequence number of the client's first SYN ([`crate::flow::connection::Half`]'s
    /// `syn_seq` of c2s).
    pub fn client_syn_seq(&self) -> Option<u32> {
        self.kept().iter().find(|k| k.dir() == Dir::C2S && k.flags().syn()).map(|k| k.seq)
    }

    /// Whether any packet was kept.
    pub fn has_packets(&self) -> bool {
        self.len > 0
    }
}
