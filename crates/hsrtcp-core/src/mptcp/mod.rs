//! MPTCP connections: subflows grouped by token, data-level accounting (RFC 8684).
//!
//! Read first: RFC 8684 §3 (options), docs/metrics.md M5 and M29-M34, A23-A26, and
//! docs/formats/mptcp.md (the tables written here).
//!
//! Layering: this module depends on [`crate::wire`] only; the flow table
//! ([`crate::flow::FlowTable`]) owns a [`Tracker`], hands it the segments that carry an
//! MPTCP option together with the connection (subflow) they belong to, and asks it for the
//! token and subflow index when it writes a `flows` row. Every subflow is an ordinary TCP
//! connection for the rest of hsrtcp.
//!
//! Cost: nothing for TCP without MPTCP (the flow table tests `options.mptcp_count` of the
//! segment, a byte it has at hand); state exists only for connections that carried an
//! MPTCP option: a [`Subflow`] per such connection, a [`Conn`] per MPTCP connection.
//!
//! Grouping: the initial subflow's token comes from the server's key (its SYN-ACK, or the
//! third ACK that echoes both keys), joined subflows name it in their MP_JOIN SYN. Joined
//! subflows are numbered 1, 2, ... in the order their SYN is seen. A subflow whose
//! handshake was not captured cannot be grouped (no token on its packets): it gets no
//! token and adds nothing to a connection.

mod dsn;
pub mod keys;
pub mod table;

use std::net::IpAddr;

use rustc_hash::FxHashMap;

use crate::wire::mptcp::{Dss, DssMapping, Mptcp, MptcpMalformed, ADD_ADDR, DSS, MP_FAIL, MP_PRIO, REMOVE_ADDR};
use crate::wire::{MptcpOption, Nanos, Segment};
use dsn::DsnMap;

const NANOS_PER_S: i64 = 1_000_000_000;
/// Direction indexes: up = client -> server, down = server -> client (MPTCP-level roles).
const UP: usize = 0;
const DOWN: usize = 1;

/// Where a subflow's TCP connection is, as the flow table knows it.
#[derive(Clone, Copy, Debug)]
pub struct SubflowIds {
    pub flow_id: u64,
    pub client: (IpAddr, u16),
    pub server: (IpAddr, u16),
}

/// What the flow table knows of a subflow when it writes its row.
#[derive(Clone, Copy, Debug)]
pub struct SubflowEnd {
    pub payload_c2s: u64,
    pub payload_s2c: u64,
    pub first_ts: Nanos,
    pub last_ts: Nanos,
    /// The TCP connection's end_reason (fin, rst, half_closed, open).
    pub end_reason: &'static str,
    /// The server's SYN-ACK was captured.
    pub synack_seen: bool,
}

/// Per-subflow state (one per TCP connection that carried an MPTCP option).
#[derive(Debug)]
struct Subflow {
    ids: SubflowIds,
    /// The flow table's slot of its TCP connection (its entry in `Tracker::by_slot`).
    slot: usize,
    /// Its first segment with an MPTCP option (the SYN when captured).
    first_ts: Nanos,
    /// The connection (index into `Conns::list`) and this subflow's index in it.
    conn: Option<(usize, u16)>,
    /// The TCP client of this subflow is the MPTCP server (a join towards the client).
    flipped: bool,
    version: Option<u8>,
    /// The TCP client sent MP_CAPABLE on its SYN.
    capable_syn: bool,
    /// Payload bytes of segments that carried a DSS mapping, per TCP direction (c2s, s2c).
    mapped_payload: [u64; 2],
    /// The last mapping per direction: repeats (every segment of an offloaded burst
    /// carries its skb's mapping) are accounted once.
    last_map: [Option<(u64, u32, u16)>; 2],
    /// The last DSS option per direction that was accounted, as (length, body words): a
    /// segment repeating it byte for byte (the segments of one mapping, while the data ACK
    /// the other way stands still) changes nothing but the mapped payload.
    last_dss: [(u8, [u64; 4]); 2],
    infinite_mapping: bool,
}

/// One subflow as written in `mptcp_subflows`.
#[derive(Clone, Debug)]
struct SubflowRow {
    ids: SubflowIds,
    index: u16,
    address_id: Option<u8>,
    join_ts: Option<Nanos>,
    backup: bool,
    prio_changes: u32,
    data_bytes_down: u64,
    reinjected_bytes_down: u64,
    end: Option<SubflowEnd>,
    flipped: bool,
}

/// One MPTCP connection.
#[derive(Debug, Default)]
struct Conn {
    /// Server token (None: the server answered the MP_CAPABLE SYN without it: fallback).
    token: Option<u32>,
    client_token: Option<u32>,
    version: Option<u8>,
    client_key: Option<u64>,
    server_key: Option<u64>,
    subflows: Vec<SubflowRow>,
    next_join: u16,
    first_ts: Nanos,
    last_ts: Nanos,
    dsn: [DsnMap; 2],
    /// Last full DSN / data ACK per direction (to widen 32-bit ones).
    dsn_ref: [Option<u64>; 2],
    ack_ref: [Option<u64>; 2],
    data_bytes: [u64; 2],
    reinjections: u64,
    reinjected_bytes: u64,
    data_retransmissions: u64,
    data_fin: [bool; 2],
    fastclose: bool,
    mp_fail: u64,
    add_addr: u64,
    remove_addr: u64,
    prio_changes: u64,
    fallback: bool,
    malformed: u64,
    /// Per 1-second bin from `first_ts`: new DSN bytes down, DATA_ACK advance for down data.
    bins: Vec<(u64, u64)>,
}

/// The MPTCP state of one capture.
///
/// Per segment: one array index and one comparison find the subflow (`by_slot`, keyed by
/// the flow table's slot of the TCP connection and checked against its flow id), no hash
/// lookup and no allocation; a DSS option is decoded by [`MptcpOption::decode_dss`] alone.
#[derive(Debug, Default)]
pub struct Tracker {
    /// Subflow state; the entries of written subflows are reused (`free_subs`).
    subs: Vec<Subflow>,
    free_subs: Vec<u32>,
    /// Flow id -> index into `subs`: when a subflow appears and when its row is written.
    by_flow: FxHashMap<u64, u32>,
    /// Flow-table slot -> (flow id, index into `subs`) of the subflow last seen there.
    by_slot: Vec<(u64, u32)>,
    conns: Conns,
}

/// The MPTCP connections of one capture (apart from the subflows, so that a segment's
/// subflow and its connection are borrowed at once).
#[derive(Debug, Default)]
struct Conns {
    list: Vec<Conn>,
    by_token: FxHashMap<u32, usize>,
    by_client_token: FxHashMap<u32, usize>,
    malformed: [u64; MptcpMalformed::ALL.len()],
}

/// Widen a 32-bit sequence number to 64 bits next to `reference` (the closest candidate).
fn widen(v32: u64, reference: Option<u64>) -> u64 {
    let Some(r) = reference else { return v32 };
    let cand = (r & !0xffff_ffff) | (v32 & 0xffff_ffff);
    let d = cand.wrapping_sub(r) as i64;
    if d > i32::MAX as i64 {
        cand.wrapping_sub(1 << 32)
    } else if d < i32::MIN as i64 {
        cand.wrapping_add(1 << 32)
    } else {
        cand
    }
}

impl Tracker {
    /// Whether any MPTCP option was seen (the flow table skips the MPTCP tables' work
    /// otherwise).
    pub fn is_empty(&self) -> bool {
        self.by_flow.is_empty() && self.conns.list.is_empty()
    }

    /// Malformed MPTCP options per reason (non-zero only), for `captures.malformed_reasons`.
    pub fn malformed_reasons(&self) -> Vec<(&'static str, u64)> {
        let m = &self.conns.malformed;
        MptcpMalformed::ALL.iter().filter(|r| m[r.index()] > 0).map(|r| (r.name(), m[r.index()])).collect()
    }

    /// A segment of subflow `flow_id` (in the flow table's `slot`) carrying at least one
    /// MPTCP option; `c2s`: it travels from the subflow's TCP client to its server. `ids`
    /// names the subflow, asked for only on its first MPTCP segment.
    #[inline]
    pub fn on_segment(&mut self, slot: usize, flow_id: u64, c2s: bool, seg: &Segment, ids: impl FnOnce() -> SubflowIds) {
        let k = match self.by_slot.get(slot) {
            Some(&(f, k)) if f == flow_id => k as usize,
            _ => self.subflow_index(slot, flow_id, seg.ts, ids()),
        };
        self.conns.segment(&mut self.subs[k], c2s, seg);
    }

    /// The index of subflow `flow_id` in `subs`, created if new, remembered for `slot`.
    #[cold]
    #[inline(never)]
    fn subflow_index(&mut self, slot: usize, flow_id: u64, ts: Nanos, ids: SubflowIds) -> usize {
        let k = match self.by_flow.get(&flow_id) {
            Some(&k) => k,
            None => {
                let sub = Subflow {
                    ids,
                    slot,
                    first_ts: ts,
                    conn: None,
                    flipped: false,
                    version: None,
                    capable_syn: false,
                    mapped_payload: [0; 2],
                    last_map: [None; 2],
                    last_dss: [(0, [0; 4]); 2],
                    infinite_mapping: false,
                };
                let k = match self.free_subs.pop() {
                    Some(k) => {
                        self.subs[k as usize] = sub;
                        k
                    }
                    None => {
                        self.subs.push(sub);
                        (self.subs.len() - 1) as u32
                    }
                };
                self.by_flow.insert(flow_id, k);
                k
            }
        };
        if self.by_slot.len() <= slot {
            self.by_slot.resize(slot + 1, (u64::MAX, u32::MAX));
        }
        self.by_slot[slot] = (flow_id, k);
        self.subs[k as usize].slot = slot;
        k as usize
    }

    /// The subflow of `flow_id` carried an MPTCP option.
    #[inline]
    pub fn knows(&self, flow_id: u64) -> bool {
        self.by_flow.contains_key(&flow_id)
    }

    /// The flow table writes the row of subflow `flow_id`: its token and subflow index
    /// (None for TCP connections that are no grouped subflow). Its end is recorded for the
    /// MPTCP tables and its per-subflow state freed.
    pub fn subflow_done(&mut self, flow_id: u64, end: SubflowEnd) -> Option<(Option<u32>, u16)> {
        let k = self.by_flow.remove(&flow_id)?;
        self.free_subs.push(k);
        let sub = &mut self.subs[k as usize];
        if self.by_slot.get(sub.slot).is_some_and(|e| e.0 == flow_id) {
            self.by_slot[sub.slot] = (u64::MAX, u32::MAX);
        }
        self.conns.subflow_done(sub, flow_id, end)
    }
}

impl Conns {
    #[cold]
    fn count_malformed(&mut self, r: MptcpMalformed, sub: &Subflow) {
        self.malformed[r.index()] += 1;
        if let Some((c, _)) = sub.conn {
            self.list[c].malformed += 1;
        }
    }

    fn attach(&mut self, sub: &mut Subflow, c: usize, index: u16, address_id: Option<u8>, backup: bool, join_ts: Nanos) {
        sub.conn = Some((c, index));
        self.list[c].subflows.push(SubflowRow {
            ids: sub.ids,
            index,
            address_id,
            join_ts: Some(join_ts),
            backup,
            prio_changes: 0,
            data_bytes_down: 0,
            reinjected_bytes_down: 0,
            end: None,
            flipped: sub.flipped,
        });
    }

    /// The connection of the server token `token`, created if new.
    fn conn_of_token(&mut self, token: u32, ts: Nanos) -> usize {
        if let Some(&c) = self.by_token.get(&token) {
            return c;
        }
        let c = self.list.len();
        self.list.push(Conn { token: Some(token), first_ts: ts, last_ts: ts, next_join: 1, ..Default::default() });
        self.by_token.insert(token, c);
        c
    }

    #[inline(always)]
    fn segment(&mut self, sub: &mut Subflow, c2s: bool, seg: &Segment) {
        let o = &seg.options;
        let Some(raw) = &o.mptcp else { return };
        if o.mptcp_more != 0 {
            self.more_options(sub, o.mptcp_more, o.mptcp_more_backup);
        }
        if raw.subtype == DSS {
            self.dss(sub, c2s, seg, raw);
        } else {
            self.other(sub, c2s, seg, raw);
        }
    }

    /// A segment whose first MPTCP option is not a DSS (handshakes, joins, address and
    /// priority options: a few per subflow).
    #[inline(never)]
    fn other(&mut self, sub: &mut Subflow, c2s: bool, seg: &Segment, raw: &MptcpOption) {
        let ts = seg.ts;
        let opt = match raw.decode() {
            Ok(m) => m,
            Err(r) => {
                self.count_malformed(r, sub);
                return;
            }
        };
        let f = seg.flags;
        match opt {
            Mptcp::Capable { version, sender_key, receiver_key, data_len, .. } => {
                sub.version = Some(version);
                if f.syn() && !f.ack() {
                    sub.capable_syn = true;
                }
                let (client_key, server_key) = if c2s { (sender_key, receiver_key) } else { (receiver_key, sender_key) };
                if sub.conn.is_none() {
                    if let Some(sk) = server_key {
                        let (token, _) = keys::token_and_idsn(sk, version);
                        // (from the SYN when it was captured: the subflow's first packet)
                        let c = self.conn_of_token(token, sub.first_ts);
                        self.attach(sub, c, 0, None, false, sub.first_ts);
                    }
                }
                if let Some((c, _)) = sub.conn {
                    let conn = &mut self.list[c];
                    conn.version.get_or_insert(version);
                    if let (Some(k), None) = (server_key, conn.server_key) {
                        conn.server_key = Some(k);
                        // Data ACKs of down data count from the server's first data byte,
                        // IDSN + 1 (RFC 8684 §3.3: the SYN-like DSN the IDSN takes).
                        let idsn = keys::token_and_idsn(k, version).1;
                        conn.ack_ref[DOWN].get_or_insert(idsn.wrapping_add(1));
                        conn.dsn_ref[DOWN].get_or_insert(idsn.wrapping_add(1));
                    }
                    if let Some(k) = client_key {
                        if conn.client_key.is_none() {
                            conn.client_key = Some(k);
                            let (t, idsn) = keys::token_and_idsn(k, version);
                            conn.ack_ref[UP].get_or_insert(idsn.wrapping_add(1));
                            conn.dsn_ref[UP].get_or_insert(idsn.wrapping_add(1));
                            conn.client_token = Some(t);
                            self.by_client_token.insert(t, c);
                        }
                    }
                }
                if let (Some(n), Some(k)) = (data_len, sender_key) {
                    self.capable_data(sub, c2s, seg, k, version, n);
                }
            }
            Mptcp::Join { backup, address_id, token } => {
                if let (Some(token), true, None) = (token, f.syn() && !f.ack(), sub.conn) {
                    // The SYN names the receiver's token: the server's, or (a subflow the
                    // MPTCP server opens) the client's.
                    let (c, flipped) = match self.by_client_token.get(&token) {
                        Some(&c) if !self.by_token.contains_key(&token) => (c, true),
                        _ => (self.conn_of_token(token, ts), false),
                    };
                    sub.flipped = flipped;
                    let conn = &mut self.list[c];
                    let index = conn.next_join.max(1);
                    conn.next_join = index + 1;
                    self.attach(sub, c, index, address_id, backup, ts);
                }
            }
            // (`segment` hands DSS options to `dss`, which decodes them itself)
            Mptcp::Dss { .. } => debug_assert!(false, "DSS options take the DSS path"),
            Mptcp::AddAddr { echo, .. } => {
                if !echo {
                    self.count_conn(sub, |c| c.add_addr += 1);
                }
            }
            Mptcp::RemoveAddr { .. } => self.count_conn(sub, |c| c.remove_addr += 1),
            Mptcp::Prio { .. } => self.prio(sub),
            Mptcp::Fail { .. } => self.count_conn(sub, |c| c.mp_fail += 1),
            Mptcp::FastClose { .. } => self.count_conn(sub, |c| c.fastclose = true),
            Mptcp::TcpRst { .. } | Mptcp::Other { .. } => {}
        }
        if let Some((c, _)) = sub.conn {
            let conn = &mut self.list[c];
            conn.last_ts = conn.last_ts.max(ts);
        }
    }

    /// A DSS option (RFC 8684 §3.3): the mapping's new, reinjected and re-sent DSN bytes
    /// (a mapping repeated on the segments it covers is accounted once) and the data ACK's
    /// advance (M5 at data level, M29-M31).
    #[inline(always)]
    fn dss(&mut self, sub: &mut Subflow, c2s: bool, seg: &Segment, raw: &MptcpOption) {
        let Some((c, _)) = sub.conn else {
            if let Err(r) = raw.decode_dss() {
                self.count_malformed(r, sub);
            }
            return;
        };
        let ts = seg.ts;
        let tcp_dir = if c2s { 0 } else { 1 };
        let conn = &mut self.list[c];
        conn.last_ts = conn.last_ts.max(ts);
        // Fast path: the same option as the last one accounted in this direction (its
        // mapping already counted, its data ACK no advance). A 32-bit data ACK must still
        // equal the low half of the reference it widens against, which another subflow
        // may have moved: else it takes the full path.
        let key = (raw.len, dss_words(raw));
        if sub.last_dss[tcp_dir] == key {
            let fl = raw.raw[0];
            let stale_ack32 = fl & 0x03 == 0x01 && {
                let acked = if c2s != sub.flipped { DOWN } else { UP };
                conn.ack_ref[acked].is_none_or(|p| p as u32 != u32::from_be_bytes([raw.raw[1], raw.raw[2], raw.raw[3], raw.raw[4]]))
            };
            if !stale_ack32 {
                if fl & 0x04 != 0 {
                    sub.mapped_payload[tcp_dir] += seg.payload_len as u64;
                }
                return;
            }
        }
        self.dss_full(sub, c2s, seg, raw, key);
    }

    /// [`Conns::dss`] for an option that is not a repeat: decoded and accounted in full.
    /// Out of line, so that the repeats' path needs few registers.
    #[inline(never)]
    fn dss_full(&mut self, sub: &mut Subflow, c2s: bool, seg: &Segment, raw: &MptcpOption, key: (u8, [u64; 4])) {
        let Some((c, index)) = sub.conn else { return };
        let ts = seg.ts;
        let tcp_dir = if c2s { 0 } else { 1 };
        let conn = &mut self.list[c];
        let Dss { data_ack, mapping, data_fin } = match raw.decode_dss() {
            Ok(d) => d,
            Err(r) => return self.count_malformed(r, sub),
        };
        sub.last_dss[tcp_dir] = key;
        // MPTCP-level direction: down is server -> client.
        let dir = if c2s != sub.flipped { UP } else { DOWN };
        // (the 1-second bin, worked out only for what is counted in one)
        let first_ts = conn.first_ts;
        let bin = || ((ts.max(first_ts) - first_ts) / NANOS_PER_S) as usize;
        if let Some(m) = mapping {
            map_data(conn, sub, index, [dir, tcp_dir], m, data_fin, seg.payload_len, bin);
        }
        if data_fin {
            conn.data_fin[dir] = true;
        }
        if let Some((ack, wide)) = data_ack {
            // A data ACK sent upwards acknowledges down data.
            let acked_dir = 1 - dir;
            let prev = conn.ack_ref[acked_dir];
            // (a 32-bit data ACK equal to the last one's low half widens to it: no advance)
            if !wide && prev.is_some_and(|p| p as u32 == ack as u32) {
                return;
            }
            let ack = if wide { ack } else { widen(ack, prev) };
            match prev {
                Some(prev) if ack > prev => {
                    if acked_dir == DOWN && ack - prev < 1 << 40 {
                        bin_at(&mut conn.bins, bin()).1 += ack - prev;
                    }
                    conn.ack_ref[acked_dir] = Some(ack);
                }
                None => conn.ack_ref[acked_dir] = Some(ack),
                _ => {}
            }
        }
    }

    /// RFC 8684 §3.1: the initiator's first data segment may carry MP_CAPABLE with both
    /// keys and a data-level length instead of a DSS: an implicit mapping of its payload to
    /// DSN = the sender's IDSN + 1 and relative subflow sequence 1.
    fn capable_data(&mut self, sub: &mut Subflow, c2s: bool, seg: &Segment, key: u64, version: u8, data_len: u16) {
        let Some((c, index)) = sub.conn else { return };
        if data_len == 0 || seg.payload_len == 0 {
            return;
        }
        let dir = if c2s != sub.flipped { UP } else { DOWN };
        let tcp_dir = if c2s { 0 } else { 1 };
        let dsn = keys::token_and_idsn(key, version).1.wrapping_add(1);
        let m = DssMapping { dsn, dsn64: true, subflow_seq: 1, data_len, checksum: None };
        let conn = &mut self.list[c];
        let (first_ts, ts) = (conn.first_ts, seg.ts);
        map_data(conn, sub, index, [dir, tcp_dir], m, false, seg.payload_len, || {
            ((ts.max(first_ts) - first_ts) / NANOS_PER_S) as usize
        });
    }

    fn count_conn(&mut self, sub: &Subflow, f: impl FnOnce(&mut Conn)) {
        if let Some((c, _)) = sub.conn {
            f(&mut self.list[c]);
        }
    }

    fn prio(&mut self, sub: &Subflow) {
        if let Some((c, _)) = sub.conn {
            let conn = &mut self.list[c];
            conn.prio_changes += 1;
            if let Some(row) = conn.subflows.iter_mut().find(|r| r.ids.flow_id == sub.ids.flow_id) {
                row.prio_changes += 1;
            }
        }
    }

    /// The MPTCP options after a segment's first (see `TcpOptions::mptcp_more`).
    #[cold]
    fn more_options(&mut self, sub: &Subflow, more: u16, _backup: bool) {
        if more & (1 << 15) != 0 {
            // (the reader checked only the length: it is not told which subtype failed)
            self.count_malformed(MptcpMalformed::TooLong, sub);
        }
        if more & (1 << ADD_ADDR) != 0 {
            self.count_conn(sub, |c| c.add_addr += 1);
        }
        if more & (1 << REMOVE_ADDR) != 0 {
            self.count_conn(sub, |c| c.remove_addr += 1);
        }
        if more & (1 << MP_FAIL) != 0 {
            self.count_conn(sub, |c| c.mp_fail += 1);
        }
        if more & (1 << MP_PRIO) != 0 {
            self.prio(sub);
        }
    }

    /// [`Tracker::subflow_done`] for the connections (`sub`: the subflow being written).
    fn subflow_done(&mut self, sub: &mut Subflow, flow_id: u64, end: SubflowEnd) -> Option<(Option<u32>, u16)> {
        if sub.capable_syn && sub.conn.is_none() && end.synack_seen {
            // The SYN-ACK answered MP_CAPABLE without it (with it, it would have given the
            // server key and a connection): the server does not speak MPTCP, fallback to TCP
            // at the handshake. Found here, not per packet: TCP without MPTCP pays nothing.
            let c = self.list.len();
            let t0 = sub.first_ts;
            self.list.push(Conn { first_ts: t0, last_ts: end.last_ts, fallback: true, version: sub.version, ..Default::default() });
            self.attach(sub, c, 0, None, false, t0);
        }
        let (c, index) = sub.conn?;
        let conn = &mut self.list[c];
        let (up_tcp, down_tcp) = if sub.flipped { (1, 0) } else { (0, 1) };
        let payload = [end.payload_c2s, end.payload_s2c];
        // Payload a side sent without DSS mappings: the connection fell back to TCP.
        if payload[up_tcp] > sub.mapped_payload[up_tcp] + 1 || payload[down_tcp] > sub.mapped_payload[down_tcp] + 1 {
            if payload[up_tcp] > 0 && sub.mapped_payload[up_tcp] == 0 || payload[down_tcp] > 0 && sub.mapped_payload[down_tcp] == 0 {
                conn.fallback = true;
            }
        }
        conn.last_ts = conn.last_ts.max(end.last_ts);
        if let Some(row) = conn.subflows.iter_mut().find(|r| r.ids.flow_id == flow_id) {
            row.end = Some(end);
        }
        Some((conn.token, index))
    }
}

/// The 32 body bytes of an MPTCP option as four words (compared at once; the bytes past
/// the option's length are zero).
#[inline(always)]
/// A DSS mapping (or MP_CAPABLE's implicit one) of subflow `sub` (connection `conn`, its
/// subflow `index`): the new, reinjected and re-sent DSN bytes, accounted once per mapping
/// however many segments repeat it. `dirs`: [MPTCP-level direction, TCP direction].
#[allow(clippy::too_many_arguments)]
fn map_data(
    conn: &mut Conn,
    sub: &mut Subflow,
    index: u16,
    [dir, tcp_dir]: [usize; 2],
    m: DssMapping,
    data_fin: bool,
    payload_len: u32,
    bin: impl Fn() -> usize,
) {
    if payload_len > 0 {
        sub.mapped_payload[tcp_dir] += payload_len as u64;
    }
    if m.data_len == 0 {
        sub.infinite_mapping = true;
        conn.fallback = true;
    } else if sub.last_map[tcp_dir] != Some((m.dsn, m.subflow_seq, m.data_len)) {
        sub.last_map[tcp_dir] = Some((m.dsn, m.subflow_seq, m.data_len));
        let dsn = if m.dsn64 { m.dsn } else { widen(m.dsn, conn.dsn_ref[dir]) };
        conn.dsn_ref[dir] = Some(dsn);
        // DATA_FIN takes one DSN of the mapping and is no data byte.
        let len = m.data_len as u64 - data_fin as u64;
        let out = conn.dsn[dir].map(dsn, len, index, m.subflow_seq);
        conn.data_bytes[dir] += out.new_bytes;
        if out.reinjected > 0 {
            conn.reinjections += 1;
            conn.reinjected_bytes += out.reinjected;
        }
        if out.retransmitted > 0 {
            conn.data_retransmissions += 1;
        }
        if dir == DOWN {
            if let Some(row) = conn.subflows.iter_mut().find(|r| r.ids.flow_id == sub.ids.flow_id) {
                row.data_bytes_down += out.new_bytes;
                row.reinjected_bytes_down += out.reinjected;
            }
            if out.new_bytes > 0 {
                bin_at(&mut conn.bins, bin()).0 += out.new_bytes;
            }
        }
    }
}

fn dss_words(o: &MptcpOption) -> [u64; 4] {
    let w = |i: usize| u64::from_ne_bytes(o.raw[8 * i..8 * i + 8].try_into().expect("8 bytes"));
    [w(0), w(1), w(2), w(3)]
}

fn bin_at(bins: &mut Vec<(u64, u64)>, bin: usize) -> &mut (u64, u64) {
    if bins.len() <= bin {
        bins.resize(bin + 1, (0, 0));
    }
    &mut bins[bin]
}

#[cfg(test)]
mod tests;
