//! Pairing: which connection of the client capture is which connection of the server capture.
//!
//! Each capture is first split into connections exactly as the single-capture flow table does
//! it (4-tuple + epoch; a SYN with a new ISN opens a new epoch; without a captured SYN the
//! higher port is taken as the client), so a matched row can name the single-capture rows it
//! belongs to by (capture, 4-tuple, epoch).
//!
//! Carrier NAT rewrites the phone's address and port, so the 4-tuples of the two captures
//! differ. What NAT leaves alone identifies the connection instead:
//!
//! 1. `isn`: the client's initial sequence number (from its SYN) plus the server port. Two
//!    connections with the same 32-bit ISN to the same port at the same time are practically
//!    impossible (RFC 6528 ISNs are keyed hashes of the 4-tuple plus a clock).
//! 2. `seq_proximity`: when one capture missed the handshake (started mid-connection), a
//!    connection is paired with an unpaired one of the other capture on the same server port
//!    whose current sequence *and* acknowledgment numbers are within 16 MiB of the new
//!    connection's first packet, and that was active within the matching window.
//!
//! Connections never paired are reported with pairing `client_only` / `server_only`.

use rustc_hash::FxHashMap;

use crate::flow::key::{roles_of, Endpoint, FlowKey};
use crate::flow::seq::seq_diff;
use crate::flow::Dir;
use crate::matcher::Side;
use crate::wire::{Nanos, Segment};

/// How a matched row's connection was found (flows.pairing, docs/formats/matched.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PairingMethod {
    /// By the client's ISN and the server port.
    Isn,
    /// By sequence and acknowledgment numbers near those of a live connection (no handshake seen).
    SeqProximity,
    /// Seen in the client-side capture only.
    ClientOnly,
    /// Seen in the server-side capture only.
    ServerOnly,
}

impl PairingMethod {
    pub const ALL: [Self; 4] = [Self::Isn, Self::SeqProximity, Self::ClientOnly, Self::ServerOnly];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Isn => "isn",
            Self::SeqProximity => "seq_proximity",
            Self::ClientOnly => "client_only",
            Self::ServerOnly => "server_only",
        }
    }

    /// The method named `s` in a `pairing` column (the inverse of [`Self::as_str`]).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == s)
    }

    /// Connections only `side`'s capture has.
    pub fn only(side: Side) -> Self {
        match side {
            Side::Client => Self::ClientOnly,
            Side::Server => Self::ServerOnly,
        }
    }

    /// Found in both captures.
    pub fn is_paired(self) -> bool {
        matches!(self, Self::Isn | Self::SeqProximity)
    }
}

/// Largest sequence distance accepted by `seq_proximity` pairing.
const SEQ_NEAR: i64 = 1 << 24;

/// One connection as one capture sees it.
#[derive(Clone, Debug)]
pub struct SideConn {
    pub key: FlowKey,
    pub epoch: u32,
    pub client: Endpoint,
    pub server: Endpoint,
    pub roles_from_syn: bool,
    /// Sequence number of each direction's SYN (index [`Dir::idx`]).
    pub syn_seq: [Option<u32>; 2],
    /// Whether each direction's SYN offered SACK (None: that SYN not captured).
    pub syn_sack: [Option<bool>; 2],
    /// Last raw sequence and acknowledgment number seen per direction (for proximity pairing).
    pub last_seq: [Option<u32>; 2],
    pub first_ts: Nanos,
    pub last_ts: Nanos,
    pub packets: u64,
    pub fin: [bool; 2],
    pub rst: bool,
    /// First SYN sent by the client, as this capture saw it.
    pub first_syn_ts: Option<Nanos>,
    /// First client→server segment acknowledging the server's SYN (the handshake ACK).
    pub hs_ack_ts: Option<Nanos>,
    /// Index of the pair this connection belongs to.
    pub pair: Option<u32>,
    /// Segments held until the connection is paired (at most one matching window long).
    pub buffer: Vec<Segment>,
    /// Unpaired for longer than the window: no more buffering.
    pub gave_up: bool,
}

impl SideConn {
    /// SACK in use: both SYNs offered it. Unknown (a SYN not captured) counts as on, the
    /// assumption that keeps every sender rule that SACK allows.
    pub fn sack_in_use(&self) -> bool {
        self.syn_sack.iter().all(|s| s.unwrap_or(true))
    }

    fn new(key: FlowKey, epoch: u32, seg: &Segment) -> Self {
        // Same role rule as the single-capture rows, so epochs and roles agree.
        let (client, server, roles_from_syn) = roles_of(seg);
        SideConn {
            key,
            epoch,
            client,
            server,
            roles_from_syn,
            syn_seq: [None; 2],
            syn_sack: [None; 2],
            last_seq: [None; 2],
            first_ts: seg.ts,
            last_ts: seg.ts,
            packets: 0,
            fin: [false; 2],
            rst: false,
            first_syn_ts: None,
            hs_ack_ts: None,
            pair: None,
            buffer: Vec::new(),
            gave_up: false,
        }
    }

    pub fn dir_of(&self, seg: &Segment) -> Dir {
        if seg.src == self.client.addr && seg.sport == self.client.port {
            Dir::C2S
        } else {
            Dir::S2C
        }
    }

    /// Both sides sent FIN, or a RST was seen.
    pub fn closed(&self) -> bool {
        self.rst || (self.fin[0] && self.fin[1])
    }

    fn account(&mut self, seg: &Segment, dir: Dir) {
        self.packets += 1;
        self.last_ts = self.last_ts.max(seg.ts);
        let f = seg.flags;
        let i = dir.idx();
        if f.syn() && self.syn_seq[i].is_none() {
            self.syn_seq[i] = Some(seg.seq);
            self.syn_sack[i] = Some(seg.options.sack_permitted);
        }
        if f.syn() && !f.ack() && dir == Dir::C2S && self.first_syn_ts.is_none() {
            self.first_syn_ts = Some(seg.ts);
        }
        if dir == Dir::C2S && !f.syn() && f.ack() && self.hs_ack_ts.is_none() {
            if let Some(isn) = self.syn_seq[Dir::S2C.idx()] {
                if seg.ack == isn.wrapping_add(1) {
                    self.hs_ack_ts = Some(seg.ts);
                }
            }
        }
        if f.fin() {
            self.fin[i] = true;
        }
        if f.rst() {
            self.rst = true;
        }
        self.last_seq[i] = Some(seg.seq);
        if f.ack() {
            self.last_seq[dir.rev().idx()].get_or_insert(seg.ack);
        }
    }
}

/// Splits one capture into connections (same rules as the single-capture flow table).
#[derive(Default)]
pub struct Tracker {
    pub conns: Vec<SideConn>,
    by_key: FxHashMap<FlowKey, u32>,
    epochs: FxHashMap<FlowKey, u32>,
    /// The connection of the previous segment (most segments follow one of the same
    /// connection: no hashing of the 4-tuple for those).
    last: Option<(FlowKey, u32)>,
}

/// What [`Tracker::push`] found.
pub struct Pushed {
    pub conn: u32,
    pub dir: Dir,
    /// The segment opened a new connection (new 4-tuple or new epoch).
    pub new: bool,
}

impl Tracker {
    pub fn push(&mut self, seg: &Segment) -> Pushed {
        let (key, found) = match self.last {
            Some((k, i)) if k.side_of(seg).is_some() => (k, Some(i)),
            _ => {
                let (key, _) = FlowKey::of(seg);
                (key, self.by_key.get(&key).copied())
            }
        };
        let new = match found {
            None => true,
            Some(i) => starts_new_connection(&self.conns[i as usize], seg),
        };
        let idx = if new {
            let e = self.epochs.entry(key).or_insert(0);
            let epoch = *e;
            *e += 1;
            let idx = self.conns.len() as u32;
            self.conns.push(SideConn::new(key, epoch, seg));
            self.by_key.insert(key, idx);
            idx
        } else {
            found.expect("not new: found")
        };
        self.last = Some((key, idx));
        let c = &mut self.conns[idx as usize];
        let dir = c.dir_of(seg);
        c.account(seg, dir);
        Pushed { conn: idx, dir, new }
    }
}

/// Mirror of flow::table::starts_new_connection: a SYN (without ACK) whose ISN differs from
/// the connection's first SYN opens a new connection on the same 4-tuple.
fn starts_new_connection(c: &SideConn, seg: &Segment) -> bool {
    if !seg.flags.syn() || seg.flags.ack() {
        return false;
    }
    match (c.dir_of(seg), c.syn_seq[Dir::C2S.idx()]) {
        (Dir::C2S, Some(isn)) => isn != seg.seq,
        _ => c.packets > 0,
    }
}

/// Connections of both captures waiting for their partner.
#[derive(Default)]
pub struct PairIndex {
    /// (client ISN, server port) → unpaired connection, per side.
    by_isn: [FxHashMap<(u32, u16), u32>; 2],
    /// server port → unpaired connections, per side (for proximity pairing).
    by_port: [FxHashMap<u16, Vec<u32>>; 2],
}

impl PairIndex {
    /// Register a connection that has just started (or just got its SYN) on `side` and return
    /// its partner in the other capture, if there is one. `now` and `window` are in merged
    /// (server-clock) time; `offset` maps each side's times to it.
    #[allow(clippy::too_many_arguments)]
    pub fn find_partner(
        &mut self,
        side: Side,
        idx: u32,
        trackers: &[Tracker; 2],
        seg: &Segment,
        now: Nanos,
        window: Nanos,
        offset: [Nanos; 2],
    ) -> Option<(u32, PairingMethod)> {
        let me = &trackers[side.idx()].conns[idx as usize];
        let other = side.other();
        if let Some(isn) = me.syn_seq[Dir::C2S.idx()] {
            let k = (isn, me.server.port);
            if let Some(j) = self.by_isn[other.idx()].remove(&k) {
                if trackers[other.idx()].conns[j as usize].pair.is_none() {
                    self.forget_port(other, j, trackers);
                    return Some((j, PairingMethod::Isn));
                }
            }
            self.by_isn[side.idx()].insert(k, idx);
        }
        if !me.roles_from_syn || me.syn_seq[Dir::C2S.idx()].is_none() {
            // Mid-connection start: look for a live connection of the other capture whose
            // sequence numbers are where this segment's are.
            let dir = me.dir_of(seg);
            let cands = self.by_port[other.idx()].get(&me.server.port).cloned().unwrap_or_default();
            for j in cands {
                let o = &trackers[other.idx()].conns[j as usize];
                if o.pair.is_some() || now - (o.last_ts + offset[other.idx()]) > window {
                    continue;
                }
                // The other capture may have guessed the roles the other way round.
                let (od, orev) = if o.server.port == me.server.port { (dir, dir.rev()) } else { (dir.rev(), dir) };
                let near_seq = o.last_seq[od.idx()].map(|s| (seq_diff(s, seg.seq) as i64).abs() < SEQ_NEAR);
                let near_ack = if seg.flags.ack() {
                    o.last_seq[orev.idx()].map(|s| (seq_diff(s, seg.ack) as i64).abs() < SEQ_NEAR)
                } else {
                    Some(true)
                };
                if near_seq == Some(true) && near_ack == Some(true) {
                    self.forget_port(other, j, trackers);
                    return Some((j, PairingMethod::SeqProximity));
                }
            }
        }
        self.by_port[side.idx()].entry(me.server.port).or_default().push(idx);
        None
    }

    fn forget_port(&mut self, side: Side, j: u32, trackers: &[Tracker; 2]) {
        let port = trackers[side.idx()].conns[j as usize].server.port;
        if let Some(v) = self.by_port[side.idx()].get_mut(&port) {
            v.retain(|&x| x != j);
        }
    }

    /// Drop a connection that was paired or given up from the waiting lists.
    pub fn forget(&mut self, side: Side, j: u32, trackers: &[Tracker; 2]) {
        self.forget_port(side, j, trackers);
        let c = &trackers[side.idx()].conns[j as usize];
        if let Some(isn) = c.syn_seq[Dir::C2S.idx()] {
            let k = (isn, c.server.port);
            if self.by_isn[side.idx()].get(&k) == Some(&j) {
                self.by_isn[side.idx()].remove(&k);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::MATCH_COLUMNS;

    #[test]
    fn pairing_names_are_the_documented_ones_and_parse_back() {
        let doc = MATCH_COLUMNS.iter().find(|c| c.name == "pairing").expect("pairing column").doc;
        for m in PairingMethod::ALL {
            assert!(doc.contains(m.as_str()), "{} not in the pairing column's doc", m.as_str());
            assert_eq!(PairingMethod::parse(m.as_str()), Some(m));
        }
        assert_eq!(PairingMethod::parse("ISN"), None);
        let paired: Vec<_> = PairingMethod::ALL.into_iter().filter(|m| m.is_paired()).map(|m| m.as_str()).collect();
        assert_eq!(paired, ["isn", "seq_proximity"]);
        assert_eq!(PairingMethod::only(Side::Server).as_str(), "server_only");
        assert_eq!(PairingMethod::only(Side::Client).as_str(), "client_only");
    }
}
