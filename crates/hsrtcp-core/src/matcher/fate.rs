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
//! ([`PairFate::take`]) and become [`Fate::CaptureLost`], not network loss.

use std::collections::VecDeque;
use std::hash::{Hash, Hasher};

use rustc_hash::{FxHashMap, FxHasher};
use std::collections::hash_map::Entry;

use crate::flow::engine::spurious::dsack;
use crate::flow::seq::{seq_diff, SeqSpace};
use crate::matcher::chunk_log::ChunkLog;
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
    /// The ACK's SACK blocks above its ACK number, D-SACK left out: RACK's loss evidence
    /// (RFC 8985) when they hold data sent after the head's last copy.
    pub sack: SackAbove,
    /// Record numbers (`Segment::frame`) in the sender's and the receiver's capture; 0: not
    /// seen there (or not read from a file).
    pub frame: [u32; 2],
}

/// The SACK blocks of an ACK that report deliveries above its ACK number, as offsets from
/// it. A D-SACK block (RFC 2883: the first block, below the ACK or inside the second block;
/// the engine's rule, [`dsack`]) reports a duplicate arrival, not a delivery, so it is left
/// out, as are stale blocks at or below the ACK. At most the first three (the most recent,
/// RFC 2018; with timestamps an ACK has room for no more): a held packet stays 72 bytes, the
/// state budget's size (matcher_budget.rs). An unused slot is (0, 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackAbove {
    off: [(u32, u32); 3],
}

impl SackAbove {
    /// The blocks of `seg`, whose ACK number is `ack` in relative sequence numbers.
    pub fn of(seg: &Segment, ack: i64) -> Self {
        let mut out = SackAbove::default();
        let raw = seg.options.sack_blocks();
        if raw.is_empty() {
            return out;
        }
        let rel = |x: u32| ack + seq_diff(x, seg.ack) as i64;
        let mut blocks = [(0i64, 0i64); 4];
        for (b, r) in blocks.iter_mut().zip(raw) {
            *b = (rel(r.left), rel(r.right));
        }
        let blocks = &blocks[..raw.len()];
        let skip = dsack(blocks, ack).is_some() as usize;
        let above = blocks[skip..].iter().filter(|&&(l, r)| l > ack && r > l);
        for (slot, &(l, r)) in out.off.iter_mut().zip(above) {
            *slot = ((l - ack) as u32, (r - ack) as u32);
        }
        out
    }

    /// The blocks as relative [left, right) pairs, given the ACK's relative number.
    pub fn blocks(&self, ack: i64) -> impl Iterator<Item = (i64, i64)> + '_ {
        self.off.iter().take_while(|b| b.1 != 0).map(move |&(l, r)| (ack + l as i64, ack + r as i64))
    }
}

impl Pkt {
    pub fn end(&self) -> i64 {
        self.seq + self.len as i64
    }
    /// A pure ACK (docs/metrics.md M9): ACK flag, no payload, no SYN/FIN/RST.
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

/// Global indices of pending packets with the same key, oldest first, all seen by the same
/// capture (`tx`: the sender's). Nearly every key has one packet: that one is held inline
/// (no allocation per packet).
#[derive(Clone, Debug)]
struct Twins {
    /// [`NO_TWIN`] when empty (small map values: the rare extra twins live behind a box).
    first: u64,
    more: Option<Box<VecDeque<u64>>>,
    tx: bool,
}

const NO_TWIN: u64 = u64::MAX;

impl Twins {
    fn one(gi: u64, tx: bool) -> Self {
        Twins { first: gi, more: None, tx }
    }

    fn more_is_empty(&self) -> bool {
        self.more.as_ref().is_none_or(|m| m.is_empty())
    }

    fn push_back(&mut self, gi: u64) {
        if self.first == NO_TWIN && self.more_is_empty() {
            self.first = gi;
        } else {
            self.more.get_or_insert_default().push_back(gi);
        }
    }

    fn pop_front(&mut self) -> Option<u64> {
        if self.first != NO_TWIN {
            return Some(std::mem::replace(&mut self.first, NO_TWIN));
        }
        self.more.as_mut().and_then(|m| m.pop_front())
    }

    fn is_empty(&self) -> bool {
        self.first == NO_TWIN && self.more_is_empty()
    }


    /// Remove `gi`; whether it was there.
    fn remove(&mut self, gi: u64) -> bool {
        if self.first == gi {
            self.first = self.more.as_mut().and_then(|m| m.pop_front()).unwrap_or(NO_TWIN);
            return true;
        }
        let Some(m) = self.more.as_mut() else { return false };
        match m.iter().position(|&x| x == gi) {
            Some(pos) => {
                m.remove(pos);
                true
            }
            None => false,
        }
    }
}

/// Bytes of one direction seen at the receiver's capture: a contiguous prefix plus ranges
/// above it (for telling capture loss from network loss).
#[derive(Clone, Debug, Default)]
pub struct Coverage {
    next: Option<i64>,
    above: Vec<(i64, i64)>,
}

impl Coverage {
    pub fn add(&mut self, s: i64, e: i64) {
        let n = self.next.get_or_insert(s);
        if s <= *n {
            *n = (*n).max(e);
        } else {
            self.above.push((s, e));
        }
        let mut n = *n;
        absorb(&mut n, &mut self.above);
        self.next = Some(n);
    }

    pub fn covers(&self, s: i64, e: i64) -> bool {
        match self.next {
            None => false,
            Some(n) => e <= n || self.above.iter().any(|&(a, b)| a <= s && e <= b),
        }
    }
}

/// Capture spans for the verdicts that depend on them (see [`PairFate::take`]).
#[derive(Clone, Copy, Debug)]
pub struct Spans {
    /// Per direction: the receiver capture's first/last time on the sender's clock.
    pub rx: [(Nanos, Nanos); 2],
    /// Per direction: the sender capture's first/last time on the receiver's clock.
    pub tx: [(Nanos, Nanos); 2],
    /// Time a packet may still be in flight when a capture ends.
    pub margin: Nanos,
}

/// Matching state and packet log of one paired connection.
///
/// The log holds the packets not yet consumed by the metrics ([`PairFate::take`] hands out
/// settled packets from its front), so a long connection does not keep its whole history.
/// Indices in the matching state are global (`base` + position in the log).
#[derive(Default)]
pub struct PairFate {
    pub seq: [Option<SeqSpace>; 2],
    /// Packets per direction ([`Dir::idx`]) in the order the matcher saw them, from `base` on.
    pub log: [ChunkLog<Pkt>; 2],
    pub base: [u64; 2],
    /// Per direction: key → pending packets with that key. A packet that finds its key
    /// pending from the other capture is its twin's match, so one capture's packets wait per
    /// key at a time and one lookup serves both the match and the wait.
    pending: [FxHashMap<u64, Twins>; 2],
    /// Pending packets in arrival order, for settling by age: (global index, key, seen as tx).
    /// Entries of packets matched since are skipped when settling, and dropped in bulk when
    /// they outnumber the pending ones (a loss at the front would otherwise keep every later
    /// entry for a whole window).
    fifo: [VecDeque<(u64, u64, bool)>; 2],
    /// Packets still pending per direction (entries of `fifo` that settling would act on).
    waiting: [usize; 2],
    /// Include the IPv4 ID in the key (off by default: some NATs rewrite it).
    pub use_ip_id: bool,
    /// Latest send time of a delivered packet, per direction (proof the receiver's capture ran).
    last_delivered_tx: [Nanos; 2],
    /// Earliest receipt of a delivered packet, per direction (proof the sender's capture ran).
    first_delivered_rx: [Nanos; 2],
    /// What each direction's receiver capture showed arriving.
    cover: [Coverage; 2],
    /// Highest acknowledgment (in each direction's space) its receiver was seen sending.
    max_ack_sent: [i64; 2],
    /// Latest lost transmission (global index) per start sequence, per direction.
    last_lost_of: [FxHashMap<i64, u64>; 2],
    /// Payload bytes seen per direction (either capture, each packet once).
    pub payload: [u64; 2],
}

/// A match that yields a one-way-delay sample.
pub struct Matched {
    pub dir: Dir,
    pub tx_ts: Nanos,
    pub rx_ts: Nanos,
}

fn seq_end(p: &Pkt) -> i64 {
    p.end() + (p.flags & F_SYN != 0) as i64 + (p.flags & F_FIN != 0) as i64
}

impl PairFate {
    pub fn new(use_ip_id: bool) -> Self {
        PairFate {
            use_ip_id,
            last_delivered_tx: [Nanos::MIN; 2],
            first_delivered_rx: [Nanos::MAX; 2],
            max_ack_sent: [i64::MIN; 2],
            ..PairFate::default()
        }
    }

    fn at(&mut self, d: usize, gi: u64) -> Option<&mut Pkt> {
        let i = gi.checked_sub(self.base[d])?;
        self.log[d].get_mut(i as usize)
    }

    /// Packets held (not yet consumed), both directions.
    pub fn held(&self) -> usize {
        self.log[0].len() + self.log[1].len()
    }

    /// One segment of this connection, seen by `side`'s capture, travelling in `dir`.
    pub fn push(&mut self, side: Side, dir: Dir, seg: &Segment) -> Option<Matched> {
        let d = dir.idx();
        let is_tx = side == sender_side(dir);
        let key = key_of(seg, self.use_ip_id);
        let seq = self.seq[d].get_or_insert_with(|| SeqSpace::new(seg.seq)).unwrap(seg.seq);
        let ack = if seg.flags.ack() {
            let r = dir.rev().idx();
            self.seq[r].get_or_insert_with(|| SeqSpace::new(seg.ack)).peek(seg.ack)
        } else {
            i64::MIN
        };
        let f = seg.flags;
        if is_tx {
            if ack != i64::MIN {
                let r = dir.rev().idx();
                self.max_ack_sent[r] = self.max_ack_sent[r].max(ack);
            }
        } else if seg.payload_len > 0 || f.syn() || f.fin() {
            let end = seq + seg.payload_len as i64 + f.syn() as i64 + f.fin() as i64;
            self.cover[d].add(seq, end);
        }
        // Either side's packets may arrive first; resolve the twin before creating a new one.
        let gi_new = self.base[d] + self.log[d].len() as u64;
        let twin = match self.pending[d].entry(key) {
            Entry::Occupied(mut e) if e.get().tx != is_tx => {
                let gi = e.get_mut().pop_front();
                if e.get().is_empty() {
                    e.remove();
                }
                gi
            }
            Entry::Occupied(mut e) => {
                e.get_mut().push_back(gi_new);
                None
            }
            Entry::Vacant(e) => {
                e.insert(Twins::one(gi_new, is_tx));
                None
            }
        };
        if let Some(gi) = twin {
            self.waiting[d] -= 1;
            let p = self.at(d, gi).expect("pending packets are held");
            if is_tx {
                p.tx_ts = seg.ts;
                p.frame[0] = seg.frame;
            } else {
                p.rx_ts = seg.ts;
                p.frame[1] = seg.frame;
            }
            p.fate = Fate::Delivered;
            let (tx, rx) = (p.tx_ts, p.rx_ts);
            self.last_delivered_tx[d] = self.last_delivered_tx[d].max(tx);
            self.first_delivered_rx[d] = self.first_delivered_rx[d].min(rx);
            return Some(Matched { dir, tx_ts: tx, rx_ts: rx });
        }
        self.payload[d] += seg.payload_len as u64;
        let flags = ((f.syn() as u8) * F_SYN) | ((f.fin() as u8) * F_FIN) | ((f.rst() as u8) * F_RST) | ((f.ack() as u8) * F_ACK);
        self.log[d].push_back(Pkt {
            tx_ts: if is_tx { seg.ts } else { NONE },
            rx_ts: if is_tx { NONE } else { seg.ts },
            seq,
            ack,
            len: seg.payload_len,
            flags,
            fate: Fate::Pending,
            sack: if f.ack() { SackAbove::of(seg, ack) } else { SackAbove::default() },
            frame: if is_tx { [seg.frame, 0] } else { [0, seg.frame] },
        });
        self.fifo[d].push_back((gi_new, key, is_tx));
        self.waiting[d] += 1;
        if self.fifo[d].len() > 2 * self.waiting[d] + 4096 {
            self.compact(d);
        }
        None
    }

    /// Settle pending packets seen before `cutoff` (merged time; `offset` maps each side's
    /// clock to it). With `cutoff = Nanos::MAX` everything pending is settled.
    pub fn settle(&mut self, cutoff: Nanos, offset: [Nanos; 2]) {
        for dir in [Dir::C2S, Dir::S2C] {
            let d = dir.idx();
            let tx_side = sender_side(dir);
            while let Some(&(gi, key, is_tx)) = self.fifo[d].front() {
                let Some(p) = self.at(d, gi).copied() else {
                    self.fifo[d].pop_front();
                    continue;
                };
                if p.fate != Fate::Pending {
                    self.fifo[d].pop_front();
                    continue;
                }
                let t = if is_tx { p.tx_ts + offset[tx_side.idx()] } else { p.rx_ts + offset[tx_side.other().idx()] };
                if cutoff != Nanos::MAX && t >= cutoff {
                    break;
                }
                self.fifo[d].pop_front();
                if let Entry::Occupied(mut e) = self.pending[d].entry(key) {
                    if e.get().tx == is_tx {
                        if e.get_mut().remove(gi) {
                            self.waiting[d] -= 1;
                        }
                        if e.get().is_empty() {
                            e.remove();
                        }
                    }
                }
                let fate = if is_tx { Fate::Lost } else { Fate::SenderMissed };
                self.at(d, gi).expect("held").fate = fate;
                if is_tx {
                    let e = self.last_lost_of[d].entry(p.seq).or_insert(gi);
                    *e = (*e).max(gi);
                }
            }
        }
    }

    /// Drop the `fifo` entries of packets no longer pending (order of the rest kept: settling
    /// skips those entries anyway, so its results do not change).
    fn compact(&mut self, d: usize) {
        let (log, base) = (&self.log[d], self.base[d]);
        self.fifo[d].retain(|&(gi, _, _)| {
            gi.checked_sub(base).and_then(|i| log.get(i as usize)).is_some_and(|p| p.fate == Fate::Pending)
        });
    }

    pub fn pending_len(&self) -> usize {
        self.fifo[0].len() + self.fifo[1].len()
    }

    /// Hand out settled packets from the front of each direction's log, with their final
    /// verdicts, and forget them. Only packets first seen before `upto` (merged time) are
    /// taken, unless `last` (end of the connection or capture: everything is taken), and
    /// about `max` per direction (both directions up to the same time).
    ///
    /// Verdicts decided here:
    /// - a packet sent before the receiver's capture started, or (without proof that the
    ///   receiver's capture was still running — a later transmission arrived) within
    ///   `margin` of its end, gets [`Fate::Unknown`]; likewise for arrivals the sender's
    ///   capture could not have shown;
    /// - the latest lost transmission of bytes the receiver's capture never showed but the
    ///   receiver acknowledged becomes [`Fate::CaptureLost`] (analyzers.md §3.1 pitfalls,
    ///   models.md §3.0 step 4).
    ///
    /// A lost packet without that proof stops the taking in its direction until the proof
    /// comes or the connection ends.
    pub fn take(
        &mut self,
        upto: Nanos,
        offset: [Nanos; 2],
        spans: &Spans,
        last: bool,
        max: usize,
        data_sender: Side,
    ) -> [Vec<Pkt>; 2] {
        // (sized for what can be taken: no doubling and copying of a large batch)
        let mut out = [0, 1].map(|d| Vec::with_capacity(self.log[d].len().min(max.saturating_add(1))));
        let seen = SeenAt { offset, data_sender };
        let cut = self.first_cut(upto, last, max, seen);
        let cut = self.hold_back(cut, last, spans, seen);
        for dir in [Dir::C2S, Dir::S2C] {
            let d = dir.idx();
            while let Some(&p) = self.log[d].front() {
                if p.fate == Fate::Pending || (cut != Nanos::MAX && seen.of(dir, &p) >= cut) {
                    break;
                }
                let Some(p) = self.final_verdict(d, p, spans, last) else { break };
                self.log[d].pop_front();
                self.base[d] += 1;
                out[d].push(p);
            }
        }
        out
    }

    /// Step 1 of `take` (a time, not a count, so both directions stop at the same moment):
    /// one time cut for both directions, so a chunk never holds ACKs from after the data it
    /// carries (the replay needs both directions in time order).
    fn first_cut(&self, upto: Nanos, last: bool, max: usize, seen: SeenAt) -> Nanos {
        let mut cut = if last { Nanos::MAX } else { upto };
        let mut front = Nanos::MAX;
        for dir in [Dir::C2S, Dir::S2C] {
            let d = dir.idx();
            if let Some(p) = self.log[d].get(max) {
                cut = cut.min(seen.of(dir, p));
            }
            if let Some(p) = self.log[d].front() {
                front = front.min(seen.of(dir, p));
            }
        }
        if cut != Nanos::MAX && cut <= front && (last || front < upto) {
            cut = front + 1; // always progress
        }
        cut
    }

    /// Step 2 of `take` (the two directions wait for each other): a packet that cannot be
    /// taken yet holds the other direction back to its time too.
    fn hold_back(&self, mut cut: Nanos, last: bool, spans: &Spans, seen: SeenAt) -> Nanos {
        for dir in [Dir::C2S, Dir::S2C] {
            let d = dir.idx();
            for p in self.log[d].iter() {
                let at = seen.of(dir, p);
                if cut != Nanos::MAX && at >= cut {
                    break;
                }
                let unproven = p.fate == Fate::Lost && self.last_delivered_tx[d] <= p.tx_ts && p.tx_ts >= spans.rx[d].0;
                if p.fate == Fate::Pending || (!last && unproven) {
                    cut = cut.min(at);
                    break;
                }
            }
        }
        cut
    }

    /// Step 3 of `take` (the verdicts that need the capture spans and the receiver's ACKs):
    /// the final verdict of `p`, the front packet of direction `d`, or None when it must
    /// wait (a loss not yet proven; nothing is changed then).
    fn final_verdict(&mut self, d: usize, mut p: Pkt, spans: &Spans, last: bool) -> Option<Pkt> {
        let gi = self.base[d];
        let (rs, re) = spans.rx[d];
        let (ts, te) = spans.tx[d];
        match p.fate {
            Fate::Lost => {
                let proven = self.last_delivered_tx[d] > p.tx_ts;
                if !proven && !last && p.tx_ts >= rs {
                    return None;
                }
                if p.tx_ts < rs || (!proven && p.tx_ts > re - spans.margin) {
                    p.fate = Fate::Unknown;
                } else {
                    let end = seq_end(&p);
                    let counts = p.len > 0 || p.flags & (F_SYN | F_FIN) != 0;
                    if counts
                        && self.max_ack_sent[d] >= end
                        && !self.cover[d].covers(p.seq, end)
                        && self.last_lost_of[d].get(&p.seq) == Some(&gi)
                    {
                        p.fate = Fate::CaptureLost;
                    }
                }
                if self.last_lost_of[d].get(&p.seq) == Some(&gi) {
                    self.last_lost_of[d].remove(&p.seq);
                }
            }
            Fate::SenderMissed => {
                let proven = self.first_delivered_rx[d] < p.rx_ts;
                if p.rx_ts > te || (!proven && p.rx_ts < ts + spans.margin) {
                    p.fate = Fate::Unknown;
                }
            }
            _ => {}
        }
        Some(p)
    }
}

/// When a packet counts for [`PairFate::take`]: the time the data sender's capture saw it
/// (its replay time: a data packet leaving, an ACK arriving), else the other capture's
/// time, on the merged clock.
#[derive(Clone, Copy)]
struct SeenAt {
    offset: [Nanos; 2],
    data_sender: Side,
}

impl SeenAt {
    #[inline]
    fn of(&self, dir: Dir, p: &Pkt) -> Nanos {
        let tx = sender_side(dir);
        let (txo, rxo) = (self.offset[tx.idx()], self.offset[tx.other().idx()]);
        let (first, second) = if tx == self.data_sender {
            ((p.tx_ts, txo), (p.rx_ts, rxo))
        } else {
            ((p.rx_ts, rxo), (p.tx_ts, txo))
        };
        if first.0 != NONE {
            first.0 + first.1
        } else {
            second.0 + second.1
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

/// The verdicts written per capture record (`packets.fate`, docs/formats/packets.md), index
/// = code in [`FrameFates`]. At the sender's capture: delivered, lost (a transmission that
/// is not a pure ACK), ack_lost (a pure ACK: M9's numerator), capture_lost, unknown; at the
/// receiver's capture: delivered, sender_missed, unknown.
pub const FATE_NAMES: [&str; 6] = ["delivered", "lost", "ack_lost", "capture_lost", "sender_missed", "unknown"];

/// The matcher's verdict on each record of one capture it judged: (frame, code in
/// [`FATE_NAMES`]). Frames are `Segment::frame` (mod 2^32, as the segments carry them).
#[derive(Clone, Debug, Default)]
pub struct FrameFates {
    v: Vec<(u32, u8)>,
    sorted: bool,
}

impl FrameFates {
    pub fn len(&self) -> usize {
        self.v.len()
    }

    pub fn is_empty(&self) -> bool {
        self.v.is_empty()
    }

    fn push(&mut self, frame: u32, code: u8) {
        // (0: the segment was not read from a file)
        if frame != 0 {
            self.v.push((frame, code));
            self.sorted = false;
        }
    }

    /// Add the verdicts of `other` (another pair's, on the same capture).
    pub fn extend(&mut self, other: FrameFates) {
        self.v.extend(other.v);
        self.sorted = false;
    }

    /// Verdict of record `frame` (its name), if judged.
    pub fn get(&mut self, frame: u64) -> Option<&'static str> {
        if !self.sorted {
            self.v.sort_unstable_by_key(|e| e.0);
            self.sorted = true;
        }
        let f = frame as u32;
        if frame == 0 {
            return None;
        }
        let i = self.v.partition_point(|e| e.0 < f);
        self.v.get(i).filter(|e| e.0 == f).map(|e| FATE_NAMES[e.1 as usize])
    }

    /// Counts per code (tests, and the witness against the matched row's counters).
    pub fn counts(&self) -> [u64; 6] {
        let mut c = [0; 6];
        for e in &self.v {
            c[e.1 as usize] += 1;
        }
        c
    }

    /// `batch` (of the `packets` table, one capture's rows) with its `fate` column set from
    /// these verdicts by `frame`; rows not judged stay null.
    pub fn apply(&mut self, batch: &arrow_array::RecordBatch) -> arrow_array::RecordBatch {
        use arrow_array::{Array, ArrayRef, StringArray, UInt64Array};
        let schema = batch.schema();
        let (Ok(fi), Ok(ki)) = (schema.index_of("frame"), schema.index_of("fate")) else { return batch.clone() };
        let Some(frames) = batch.column(fi).as_any().downcast_ref::<UInt64Array>() else { return batch.clone() };
        let col: StringArray = (0..frames.len()).map(|r| if frames.is_valid(r) { self.get(frames.value(r)) } else { None }).collect();
        let mut cols: Vec<ArrayRef> = batch.columns().to_vec();
        cols[ki] = std::sync::Arc::new(col);
        arrow_array::RecordBatch::try_new(schema, cols).expect("same schema, fate is a nullable string")
    }
}

/// Record the final verdicts of `batch` (from [`PairFate::take`]) per capture:
/// `out[Side::idx()]`.
pub fn record_fates(out: &mut [FrameFates; 2], batch: &[Vec<Pkt>; 2]) {
    for dir in [Dir::C2S, Dir::S2C] {
        let tx = sender_side(dir);
        for p in &batch[dir.idx()] {
            let at_tx = match p.fate {
                Fate::Delivered => 0,
                Fate::Lost if p.pure_ack() => 2,
                Fate::Lost => 1,
                Fate::CaptureLost => 3,
                _ => 5,
            };
            let at_rx = match p.fate {
                Fate::Delivered => 0,
                Fate::SenderMissed => 4,
                _ => 5,
            };
            out[tx.idx()].push(p.frame[0], at_tx);
            out[tx.other().idx()].push(p.frame[1], at_rx);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SackAbove;
    use crate::wire::{SackBlock, Segment, TcpFlags, TcpOptions};

    /// The blocks kept of an ACK numbered `ack` (raw; relative 0) carrying `raw` blocks.
    fn kept(ack: u32, raw: &[(u32, u32)]) -> Vec<(i64, i64)> {
        let mut options = TcpOptions::default();
        for (k, &(left, right)) in raw.iter().enumerate() {
            options.sack[k] = SackBlock { left, right };
        }
        options.sack_count = raw.len() as u8;
        let seg = Segment {
            ts: 0,
            src: [10, 0, 0, 1].into(),
            dst: [10, 0, 0, 2].into(),
            sport: 1,
            dport: 2,
            seq: 0,
            ack,
            flags: TcpFlags(TcpFlags::ACK),
            window: 0,
            payload_len: 0,
            ip_id: None,
            options,
            payload_truncated: false,
            outer: 0,
            frame: 0,
        };
        SackAbove::of(&seg, 0).blocks(0).collect()
    }

    #[test]
    fn deliveries_above_the_ack_without_d_sack() {
        assert_eq!(kept(1001, &[(3001, 4001), (5001, 6001)]), vec![(2000, 3000), (4000, 5000)]);
        // RFC 2883 §4.1.1: a first block below the ACK reports a duplicate
        assert_eq!(kept(4001, &[(2001, 3001)]), vec![]);
        assert_eq!(kept(4001, &[(2001, 3001), (5001, 6001)]), vec![(1000, 2000)]);
        // §4.2.1: a first block inside the second one reports a duplicate above the ACK
        assert_eq!(kept(1001, &[(3001, 4001), (3001, 5001)]), vec![(2000, 4000)]);
        // a later block at or below the ACK is stale; an empty block is none
        assert_eq!(kept(4001, &[(5001, 6001), (2001, 3001), (7001, 7001)]), vec![(1000, 2000)]);
        // the first three of four (the fourth was reported before)
        assert_eq!(kept(1, &[(11, 21), (31, 41), (51, 61), (71, 81)]), vec![(10, 20), (30, 40), (50, 60)]);
        assert_eq!(std::mem::size_of::<super::Pkt>(), 72, "the state budget's packet size");
        // across the wrap of the sequence space
        assert_eq!(kept(u32::MAX - 99, &[(900, 1900)]), vec![(1000, 2000)]);
    }
}
