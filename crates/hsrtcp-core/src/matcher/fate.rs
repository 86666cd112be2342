//! Per-packet fate: every packet of a paired connection seen at its sender's capture is
//! matched with its arrival in the receiver's capture, or declared lost.
//!
//! Identity of a packet across the two captures. NAT rewrites addresses, ports and the
//! checksums, nothing else we use, so a packet is keyed by direction plus
//! (sequence, acknowledgment, payload length, SYN/FIN/RST/ACK flags, window field, TSval,
//! TSecr, SACK blocks) and, when the connection carries no timestamps, the IPv4 ID. A
//! retransmission gets a new TSval (Linux) or a new IP ID, so it stays distinct from its
//! original; two packets that are still identical (two dupACKs in the same timestamp tick)
//! are matched as a multiset, first sent ↔ first seen, which keeps counts exact.
//!
//! Matching is symmetric, because which capture shows a packet first depends on the clock
//! offset: a packet looks for its twin among the other capture's pending packets and waits
//! in its own pending list otherwise. Pending packets older than the matching window are
//! settled: a transmission nobody received is [`Fate::Lost`]; an arrival the sender's capture
//! never showed is [`Fate::SenderMissed`] (capture loss at the sender's capture point).
//! Packets the receiver acknowledged but its capture never showed are found later
//! ([`mark_receiver_capture_loss`]) and become [`Fate::CaptureLost`], not network loss.

use std::collections::VecDeque;
use std::hash::{Hash, Hasher};

use rustc_hash::{FxHashMap, FxHasher};

use crate::flow::seq::SeqSpace;
use crate::flow::Dir;
use crate::matcher::Side;
use crate::wire::{Nanos, Segment};

/// Marker for "no time" in [`Pkt`].
pub const NONE: Nanos = Nanos::MIN;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Not settled yet.
    Pending,
    /// Seen in both captures.
    Delivered,
    /// Seen leaving the sender, never at the receiver: lost in the network.
    Lost,
    /// Never seen at the receiver's capture, but the receiver acknowledged its bytes: the
    /// receiver got it and its capture dropped it (capture loss, not network loss).
    CaptureLost,
    /// Seen at the receiver only: the sender's capture dropped it.
    SenderMissed,
    /// Sent while the receiver's capture was not running (or the reverse): no verdict.
    Unknown,
}

/// Flag bits kept in [`Pkt::flags`].
pub const F_SYN: u8 = 1;
pub const F_FIN: u8 = 2;
pub const F_RST: u8 = 4;
pub const F_ACK: u8 = 8;

/// One packet of one direction of a paired connection.
#[derive(Clone, Copy, Debug)]
pub struct Pkt {
    /// Sender's capture time (sender's clock), [`NONE`] if the sender's capture missed it.
    pub tx_ts: Nanos,
    /// Receiver's capture time (receiver's clock), [`NONE`] if not seen there.
    pub rx_ts: Nanos,
    /// Relative sequence number (0 = the direction's ISN when the SYN was captured).
    pub seq: i64,
    /// Relative acknowledgment number (in the other direction's space); `i64::MIN` without ACK.
    pub ack: i64,
    pub len: u32,
    pub flags: u8,
    pub fate: Fate,
}

impl Pkt {
    pub fn end(&self) -> i64 {
        self.seq + self.len as i64
    }
    /// A pure ACK (targets.md M9): ACK flag, no payload, no SYN/FIN/RST.
    pub fn pure_ack(&self) -> bool {
        self.len == 0 && self.flags == F_ACK
    }
}

/// The capture that sees a direction's packets leave.
pub fn sender_side(dir: Dir) -> Side {
    match dir {
        Dir::C2S => Side::Client,
        Dir::S2C => Side::Server,
    }
}

fn key_of(seg: &Segment, use_ip_id: bool) -> u64 {
    let mut h = FxHasher::default();
    seg.seq.hash(&mut h);
    seg.ack.hash(&mut h);
    seg.payload_len.hash(&mut h);
    (seg.flags.0 & 0x17).hash(&mut h);
    seg.window.hash(&mut h);
    seg.options.timestamp.hash(&mut h);
    for b in seg.options.sack_blocks() {
        (b.left, b.right).hash(&mut h);
    }
    if use_ip_id || seg.options.timestamp.is_none() {
        seg.ip_id.hash(&mut h);
    }
    h.finish()
}

/// Matching state and packet log of one paired connection.
#[derive(Default)]
pub struct PairFate {
    pub seq: [Option<SeqSpace>; 2],
    /// Every packet per direction ([`Dir::idx`]), in the order the matcher saw them.
    pub log: [Vec<Pkt>; 2],
    pending: [[FxHashMap<u64, VecDeque<u32>>; 2]; 2],
    /// Pending packets in arrival order, for settling by age: (log index, key, seen as tx).
    fifo: [VecDeque<(u32, u64, bool)>; 2],
    /// Include the IPv4 ID in the key (off by default: some NATs rewrite it).
    pub use_ip_id: bool,
}

/// A match that yields a one-way-delay sample.
pub struct Matched {
    pub dir: Dir,
    pub tx_ts: Nanos,
    pub rx_ts: Nanos,
}

impl PairFate {
    pub fn new(use_ip_id: bool) -> Self {
        PairFate { use_ip_id, ..PairFate::default() }
    }

    /// One segment of this connection, seen by `side`'s capture, travelling in `dir`.
    pub fn push(&mut self, side: Side, dir: Dir, seg: &Segment) -> Option<Matched> {
        let d = dir.idx();
        let is_tx = side == sender_side(dir);
        let key = key_of(seg, self.use_ip_id);
        let seq = self.seq[d].get_or_insert_with(|| SeqSpace::new(seg.seq)).unwrap(seg.seq);
        // Either side's packets may arrive first; resolve the twin before creating a new one.
        let other = !is_tx as usize;
        if let Some(q) = self.pending[d][other].get_mut(&key) {
            if let Some(i) = q.pop_front() {
                if q.is_empty() {
                    self.pending[d][other].remove(&key);
                }
                let p = &mut self.log[d][i as usize];
                if is_tx {
                    p.tx_ts = seg.ts;
                } else {
                    p.rx_ts = seg.ts;
                }
                p.fate = Fate::Delivered;
                return Some(Matched { dir, tx_ts: p.tx_ts, rx_ts: p.rx_ts });
            }
        }
        let ack = if seg.flags.ack() {
            let r = dir.rev().idx();
            self.seq[r].get_or_insert_with(|| SeqSpace::new(seg.ack)).peek(seg.ack)
        } else {
            i64::MIN
        };
        let f = seg.flags;
        let flags = ((f.syn() as u8) * F_SYN) | ((f.fin() as u8) * F_FIN) | ((f.rst() as u8) * F_RST) | ((f.ack() as u8) * F_ACK);
        let idx = self.log[d].len() as u32;
        self.log[d].push(Pkt {
            tx_ts: if is_tx { seg.ts } else { NONE },
            rx_ts: if is_tx { NONE } else { seg.ts },
            seq,
            ack,
            len: seg.payload_len,
            flags,
            fate: Fate::Pending,
        });
        self.pending[d][is_tx as usize].entry(key).or_default().push_back(idx);
        self.fifo[d].push_back((idx, key, is_tx));
        None
    }

    /// Settle pending packets seen before `cutoff` (merged time; `offset` maps each side's
    /// clock to it). With `cutoff = Nanos::MAX` everything pending is settled.
    pub fn settle(&mut self, cutoff: Nanos, offset: [Nanos; 2]) {
        for dir in [Dir::C2S, Dir::S2C] {
            let d = dir.idx();
            let tx_side = sender_side(dir);
            while let Some(&(i, key, is_tx)) = self.fifo[d].front() {
                let p = self.log[d][i as usize];
                if p.fate != Fate::Pending {
                    self.fifo[d].pop_front();
                    continue;
                }
                let t = if is_tx { p.tx_ts + offset[tx_side.idx()] } else { p.rx_ts + offset[tx_side.other().idx()] };
                if cutoff != Nanos::MAX && t >= cutoff {
                    break;
                }
                self.fifo[d].pop_front();
                let list = &mut self.pending[d][is_tx as usize];
                if let Some(q) = list.get_mut(&key) {
                    if let Some(pos) = q.iter().position(|&x| x == i) {
                        q.remove(pos);
                    }
                    if q.is_empty() {
                        list.remove(&key);
                    }
                }
                self.log[d][i as usize].fate = if is_tx { Fate::Lost } else { Fate::SenderMissed };
            }
        }
    }

    pub fn pending_len(&self) -> usize {
        self.fifo[0].len() + self.fifo[1].len()
    }
}

/// After settling: verdicts that need the capture spans and the other direction.
///
/// - A packet sent while the receiver's capture was not running has no verdict
///   ([`Fate::Unknown`]); `rx_span[d]` is the receiver capture's first/last time mapped to the
///   sender's clock, `tx_span[d]` the sender capture's span.
/// - Bytes the receiver acknowledged without its capture showing them: their latest lost
///   transmission becomes [`Fate::CaptureLost`].
pub fn finalize(log: &mut [Vec<Pkt>; 2], rx_span: [(Nanos, Nanos); 2], tx_span: [(Nanos, Nanos); 2], margin: Nanos) {
    for d in 0..2 {
        let (rs, re) = rx_span[d];
        let (ts, te) = tx_span[d];
        // A later transmission that arrived proves the receiver's capture was running when
        // this one should have arrived (and an earlier arrival that the sender's capture
        // showed proves the sender's capture was running). Only without such proof do the
        // capture ends decide, with `margin` for packets still in flight.
        let last_delivered_tx = log[d].iter().filter(|p| p.fate == Fate::Delivered).map(|p| p.tx_ts).max();
        let first_delivered_rx = log[d].iter().filter(|p| p.fate == Fate::Delivered).map(|p| p.rx_ts).min();
        for p in log[d].iter_mut() {
            match p.fate {
                Fate::Lost => {
                    let proven = last_delivered_tx.is_some_and(|t| t > p.tx_ts);
                    if p.tx_ts < rs || (!proven && p.tx_ts > re - margin) {
                        p.fate = Fate::Unknown;
                    }
                }
                // rx times are on the receiver clock; tx_span is mapped to it by the caller.
                Fate::SenderMissed => {
                    let proven = first_delivered_rx.is_some_and(|t| t < p.rx_ts);
                    if p.rx_ts > te || (!proven && p.rx_ts < ts + margin) {
                        p.fate = Fate::Unknown;
                    }
                }
                _ => {}
            }
        }
    }
    for dir in [Dir::C2S, Dir::S2C] {
        mark_receiver_capture_loss(log, dir);
    }
}

/// Capture loss at the receiver of `dir` (analyzers.md §3.1 pitfalls, models.md §3.0 step 4):
/// walk the receiver's view in its own time order — data it captured arriving, ACKs it
/// captured leaving. An ACK beyond every byte the capture has shown arriving means the
/// receiver's stack got bytes its capture missed; the last lost transmission of each such
/// range is re-labelled [`Fate::CaptureLost`].
pub fn mark_receiver_capture_loss(log: &mut [Vec<Pkt>; 2], dir: Dir) {
    let (d, r) = (dir.idx(), dir.rev().idx());
    // Receiver-side events: (time, 0 = data arrival / 1 = ACK leaving, index)
    let mut ev: Vec<(Nanos, u8, u32)> = Vec::new();
    for (i, p) in log[d].iter().enumerate() {
        if p.rx_ts != NONE && (p.len > 0 || p.flags & (F_SYN | F_FIN) != 0) {
            ev.push((p.rx_ts, 0, i as u32));
        }
    }
    for (i, p) in log[r].iter().enumerate() {
        if p.tx_ts != NONE && p.ack != i64::MIN {
            ev.push((p.tx_ts, 1, i as u32));
        }
    }
    if ev.is_empty() {
        return;
    }
    ev.sort_unstable();
    // Received byte ranges not yet contiguous with `next`.
    let mut next: Option<i64> = None;
    let mut above: Vec<(i64, i64)> = Vec::new();
    let mut gaps: Vec<(i64, i64, Nanos)> = Vec::new();
    for (t, kind, i) in ev {
        if kind == 0 {
            let p = log[d][i as usize];
            let end = p.end() + (p.flags & F_SYN != 0) as i64 + (p.flags & F_FIN != 0) as i64;
            let n = next.get_or_insert(p.seq);
            if p.seq <= *n {
                *n = (*n).max(end);
            } else {
                above.push((p.seq, end));
            }
            absorb(n, &mut above);
        } else {
            let a = log[r][i as usize].ack;
            if let Some(n) = next.as_mut() {
                if a > *n {
                    gaps.push((*n, a, t));
                    *n = a;
                    absorb(n, &mut above);
                }
            }
        }
    }
    for (lo, hi, t_ack) in gaps {
        // Latest lost transmission per start sequence inside the gap, sent before the ACK
        // (on the sender clock, so compare loosely: the ACK left after the bytes arrived).
        let mut last_by_seq: FxHashMap<i64, usize> = FxHashMap::default();
        for (i, p) in log[d].iter().enumerate() {
            if p.fate == Fate::Lost && p.seq < hi && p.end() > lo && p.tx_ts != NONE {
                let _ = t_ack;
                last_by_seq.insert(p.seq, i);
            }
        }
        for (_, i) in last_by_seq {
            log[d][i].fate = Fate::CaptureLost;
        }
    }
}

fn absorb(next: &mut i64, above: &mut Vec<(i64, i64)>) {
    loop {
        let before = above.len();
        above.retain(|&(s, e)| {
            if s <= *next {
                *next = (*next).max(e);
                false
            } else {
                true
            }
        });
        if above.len() == before {
            break;
        }
    }
}
