//! Two-vantage flow metrics from the per-packet fates of one paired connection.
//!
//! Definitions (docs/metrics.md §1, rulings §2, models.md §3):
//!
//! - **p_d** (M8, A15): data transmissions of the data sender (retransmissions included) lost
//!   in the network / data transmissions with a verdict. Capture loss is not network loss.
//! - **p_a** (M9): pure ACKs sent by the receiver (seen in its capture) never seen at the data
//!   sender / pure ACKs sent.
//! - **Timeout sequences** (M10, models.md §3.6) from a replay of the sender's capture: a
//!   retransmission of the head segment (the one holding snd_una) at least `RTO_FLOOR` after
//!   the head's previous transmission, not within `ACK_TRIGGER` of an ACK arrival, and not
//!   within `RTO_FLOOR` of loss evidence that was the last ACK to arrive (that would be a RACK
//!   reordering-timer retransmission), is an RTO retransmission. Loss evidence: an ACK whose
//!   SACK blocks (D-SACK left out) hold data last sent after the head's last copy (RACK, RFC
//!   8985, whether or not the ACK advances); without SACK, a duplicate ACK. (Linux measures the
//!   RTO from the head's send time while a loss-probe or RACK timer is pending, and from the
//!   last advancing ACK otherwise — both at least the minimum RTO after the head's send;
//!   models.md's "later of the two" misses RTOs after late ACKs.) Consecutive RTO
//!   retransmissions of the same head are one sequence, which ends at the first ACK that
//!   covers the head.
//! - **q** (M11, A17): RTO retransmissions of the sequences' head segments lost in the network
//!   / RTO retransmissions, pooled over the flow's sequences.
//! - **Spurious timeout** (M12): an earlier transmission of the head was received before the
//!   first RTO retransmission arrived. **Cause** (M14, A6): `ack_loss` iff the receiver sent an
//!   ACK covering the head before the RTO fired (receiver time mapped to the sender clock) and
//!   none of those ACKs reached the sender; otherwise `rto_estimation` (the ACK arrived too
//!   late, or was sent only after the RTO fired).
//! - **RTO estimation bias** (M16, A8): t6 − t4, t4 = the first RTO retransmission, t6 = the
//!   sender's receipt of the first ACK of the original (sent by the receiver after the
//!   original arrived and before a retransmission did); defined only when that ACK arrived.
//! - **ACK burst loss P_a** (M36, A16, models.md §3.4) measured from rounds: a round starts
//!   with a data transmission and ends at the first ACK above its first sequence number (or at
//!   an RTO). A round outside timeout recovery with ≥ 1 delivered segment is counted; it has an
//!   ACK burst loss when it ended in an RTO, the receiver had sent ≥ 1 ACK for the round's data
//!   before the RTO fired, and none of them arrived.
//! - **One-way delays**: receiver time − sender time with the client clock mapped to the
//!   server clock, per direction (min, median, 95th percentile, max).
//! - **Establishment time** (M18, A9): the server's receipt of the first ACK of its SYN-ACK −
//!   the client's first SYN mapped to the server clock.

use std::collections::VecDeque;

use crate::flow::engine::kinds::SpuriousMethod;
use crate::flow::event::{nanos_to_s, Event, EventKind};
use crate::flow::Dir;
use crate::matcher::clock::ClockFit;
use crate::matcher::fate::{sender_side, Fate, Pkt, SackAbove, NONE};
use crate::matcher::Side;
pub use crate::table::registry::{MATCH_COLUMNS, MATCH_SERIES_COLUMNS};
use crate::table::Row;
use crate::wire::Nanos;

/// Shortest gap treated as a retransmission timeout: Linux's minimum RTO is 200 ms; 10 %
/// below it absorbs timer slack and capture timestamping.
pub const RTO_FLOOR: Nanos = 180_000_000;
/// A head retransmission within this time after an ACK arrival was triggered by that ACK
/// (fast retransmit / SACK recovery), not by the timer.
pub const ACK_TRIGGER: Nanos = 500_000;
/// The largest window TCP can offer (RFC 7323 §2.3: 2^30 bytes), so the most a sender can
/// have in flight.
const MAX_WINDOW: i64 = 1 << 30;
/// More than any segment's payload (an IPv4 or IPv6 packet's length field is 16 bits).
const MAX_SEG: i64 = 1 << 16;

/// One data transmission as the replay keeps it.
#[derive(Clone, Copy, Debug)]
pub struct Tx {
    /// Sender's capture time (sender clock).
    pub tx: Nanos,
    /// Receiver's capture time (receiver clock) or [`NONE`].
    pub rx: Nanos,
    pub seq: i64,
    pub end: i64,
    pub fate: Fate,
}

impl Tx {
    fn got(&self) -> bool {
        got(self.fate)
    }
}

/// One ACK the data receiver sent, as its capture showed it.
#[derive(Clone, Copy, Debug)]
struct AckOut {
    /// Receiver's capture time (receiver clock).
    tx: Nanos,
    /// Arrival at the sender's capture (sender clock) or [`NONE`].
    rx: Nanos,
    ack: i64,
    fate: Fate,
}

/// One timeout sequence found in the sender's capture.
#[derive(Clone, Debug)]
pub struct TimeoutSeq {
    /// Head segment [s, e) (relative sequence numbers).
    pub s: i64,
    pub e: i64,
    pub t_arm: Nanos,
    /// The RTO retransmissions r_1 … r_k.
    pub r: Vec<Tx>,
    pub t_end: Option<Nanos>,
    /// Earlier transmissions covering `s`, as they stood when r_1 left.
    pub orig: Vec<Tx>,
    pub spurious: bool,
    pub cause: Option<&'static str>,
    pub bias: Option<f64>,
    /// Retransmissions (any segment) sent from r_1 until the first ACK arrival after it: the
    /// M13 numerator when the sequence is spurious.
    pub retx_before_ack: u64,
    /// An ACK arrived at the sender since r_1.
    pub acked: bool,
}

/// One-way-delay samples of one direction: (sender time on the server clock, raw delay =
/// receiver capture time − sender capture time, each on its own clock). The clock correction
/// is applied at the end with the final fit, so streaming does not change the result. At most
/// `RESERVOIR` samples are kept (a uniform sample, Algorithm R, fixed seed); below that the
/// summaries are exact.
#[derive(Clone, Debug, Default)]
pub struct Reservoir {
    pub v: Vec<(Nanos, Nanos)>,
    pub seen: u64,
    rng: u64,
}

const RESERVOIR: usize = 1 << 16;

impl Reservoir {
    fn add(&mut self, t: Nanos, raw: Nanos) {
        self.seen += 1;
        if self.v.len() < RESERVOIR {
            self.v.push((t, raw));
            return;
        }
        if self.rng == 0 {
            self.rng = 0x9E37_79B9_7F4A_7C15;
        }
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let j = self.rng % self.seen;
        if (j as usize) < RESERVOIR {
            self.v[j as usize] = (t, raw);
        }
    }

    /// Clock-corrected delays in seconds, sorted. `sign` is +1 downlink, −1 uplink.
    fn corrected(&self, clock: &ClockFit, sign: i64) -> Vec<f64> {
        let mut v: Vec<f64> = self.v.iter().map(|&(t, raw)| nanos_to_s(raw + sign * clock.offset_at(t))).collect();
        v.sort_unstable_by(|a, b| a.total_cmp(b)); // equal under total_cmp means the same bits: any order is this order
        v
    }
}

/// The latest send time of each starting sequence number the sender transmitted (for the
/// head's previous transmission, M10), as a deque sorted by sequence: a sender sends mostly
/// new data, so nearly every entry goes at the back and retransmissions update in place. (A
/// hash map here was 40 % of the replay thread on the bench pair: one random insert per
/// transmission into a map of tens of thousands.)
#[derive(Clone, Debug, Default)]
struct LastSent(VecDeque<(i64, Nanos)>);

impl LastSent {
    fn get(&self, seq: i64) -> Option<Nanos> {
        let i = self.0.partition_point(|e| e.0 < seq);
        self.0.get(i).filter(|e| e.0 == seq).map(|e| e.1)
    }

    fn insert(&mut self, seq: i64, t: Nanos) {
        if self.0.back().is_none_or(|b| b.0 < seq) {
            return self.0.push_back((seq, t)); // new data: nearly every call
        }
        let i = self.0.partition_point(|e| e.0 < seq);
        match self.0.get_mut(i) {
            Some(e) if e.0 == seq => e.1 = t,
            _ => self.0.insert(i, (seq, t)),
        }
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    /// Forget the sequence numbers below `floor`.
    fn forget_below(&mut self, floor: i64) {
        while self.0.front().is_some_and(|e| e.0 < floor) {
            self.0.pop_front();
        }
    }
}

/// Results for one paired connection.
#[derive(Clone, Debug, Default)]
pub struct PairMetrics {
    pub data_dir: Option<Dir>,
    pub data_sent: u64,
    pub data_lost: u64,
    pub acks_sent: u64,
    pub acks_lost: u64,
    pub rounds: u64,
    pub burst_rounds: u64,
    pub rto_retx: u64,
    pub rto_retx_lost: u64,
    /// Data transmissions re-sending bytes sent before (M13 denominator).
    pub retx: u64,
    pub seqs: Vec<TimeoutSeq>,
    pub owd: [Reservoir; 2],
    pub establishment: Option<f64>,
    pub capture_loss: [u64; 2],
    pub unknown: u64,
    pub first_tx: Option<Nanos>,
    pub last_tx: Option<Nanos>,
    /// M6 per 1-s bin from `bin0` (sender clock): [transmissions with a verdict, lost].
    pub loss_bins: super::loss_bins::LossBins,
    pub bin0: Nanos,
}

fn map_time(clock: &ClockFit, t: Nanos, from: Side, to: Side) -> Nanos {
    match (from, to) {
        (Side::Client, Side::Server) => clock.to_server(t),
        (Side::Server, Side::Client) => clock.to_client(t),
        _ => t,
    }
}

fn got(f: Fate) -> bool {
    matches!(f, Fate::Delivered | Fate::CaptureLost)
}

/// One round of transmissions: what its evaluation needs, kept as it grows (not the list).
struct Round {
    first_seq: i64,
    /// Send time of its first transmission.
    first_tx: Nanos,
    in_recovery: bool,
    /// Of its delivered transmissions: how many, the lowest sequence, the earliest arrival
    /// (receiver clock; `Nanos::MAX` if none was seen arriving).
    delivered: u64,
    lo_seq: i64,
    first_rx: Nanos,
}

impl Round {
    fn new(p: &Tx, in_recovery: bool) -> Self {
        let mut rd = Round {
            first_seq: p.seq,
            first_tx: p.tx,
            in_recovery,
            delivered: 0,
            lo_seq: i64::MAX,
            first_rx: Nanos::MAX,
        };
        rd.add(p);
        rd
    }

    fn add(&mut self, p: &Tx) {
        if p.got() {
            self.delivered += 1;
            self.lo_seq = self.lo_seq.min(p.seq);
            if p.rx != NONE {
                self.first_rx = self.first_rx.min(p.rx);
            }
        }
    }
}

/// The metrics of one paired connection, computed incrementally: packets are fed in batches
/// as they settle ([`Replay::feed`]), so only the state of the sender (outstanding segments,
/// the open round and timeout sequence) and a bounded history of the receiver's ACKs are kept.
pub struct Replay {
    pub m: PairMetrics,
    dir: Dir,
    snd: Side,
    rcv: Side,
    clock: ClockFit,
    /// Sequences are analysed this long after they end (their ACKs must have been fed).
    lag: Nanos,
    started: bool,
    snd_una: i64,
    snd_nxt: i64,
    last_adv: Nanos,
    last_ack_any: Nanos,
    /// Latest duplicate ACK (loss evidence without SACK).
    last_dupack: Nanos,
    /// Of the last ACK to arrive: the latest send time of the data its SACK blocks hold
    /// (RACK.xmit_ts, RFC 8985); `Nanos::MIN` when it SACKed nothing.
    last_sack_xmit: Nanos,
    /// snd_nxt when the last RTO fired, until snd_una passes it: the RTO recovery.
    rto_point: Option<i64>,
    now: Nanos,
    last_tx_of: LastSent,
    /// SACK in use (both SYNs): without it only the timer re-sends a head twice.
    sack: bool,
    /// The latest retransmission of the head: (seq, time).
    last_head_resend: Option<(i64, Nanos)>,
    /// Transmissions not yet cumulatively acknowledged, ordered by (end, arrival order).
    /// Sent mostly in that order, so a deque sorted by insertion (at the back, but for
    /// retransmissions) beats a tree.
    outstanding: VecDeque<Tx>,
    open: Option<TimeoutSeq>,
    waiting: Vec<TimeoutSeq>,
    round: Option<Round>,
    acks: VecDeque<AckOut>,
}

impl Replay {
    /// `dir` is the data direction; `lag` should exceed the largest one-way delay; `bin0`
    /// (sender's clock) is where the M6 bins start: the connection's first packet there.
    pub fn new(dir: Dir, lag: Nanos, bin0: Nanos, sack: bool) -> Self {
        let snd = sender_side(dir);
        Replay {
            m: PairMetrics { data_dir: Some(dir), bin0, ..PairMetrics::default() },
            dir,
            snd,
            rcv: snd.other(),
            clock: ClockFit::none(),
            lag,
            started: false,
            snd_una: 0,
            snd_nxt: 0,
            last_adv: 0,
            last_ack_any: Nanos::MIN,
            last_dupack: Nanos::MIN,
            last_sack_xmit: Nanos::MIN,
            sack,
            last_head_resend: None,
            rto_point: None,
            now: Nanos::MIN,
            last_tx_of: LastSent::default(),
            outstanding: VecDeque::new(),
            open: None,
            waiting: Vec::new(),
            round: None,
            acks: VecDeque::new(),
        }
    }

    /// The capture that sees the data leave.
    pub fn sender(&self) -> Side {
        self.snd
    }

    /// The data direction: the one with more payload (downloads: s2c).
    pub fn data_dir(payload: [u64; 2]) -> Dir {
        if payload[Dir::S2C.idx()] >= payload[Dir::C2S.idx()] {
            Dir::S2C
        } else {
            Dir::C2S
        }
    }

    /// Feed settled packets (per direction, from [`crate::matcher::fate::PairFate::take`]).
    pub fn feed(&mut self, batch: &[Vec<Pkt>; 2], clock: &ClockFit) {
        tally(&mut self.m, self.dir, batch);
        self.feed_ordered(batch, clock);
    }

    /// The data direction.
    pub fn dir(&self) -> Dir {
        self.dir
    }

    /// The order-free part of the metrics so far (M6 bins, M8/M9 counts, capture loss,
    /// one-way delays), moved out to be tallied apart ([`tally`], e.g. on another thread)
    /// while [`Replay::feed_ordered`] takes the same batches; [`Replay::put_tally`] puts it back.
    pub fn take_tally(&mut self) -> PairMetrics {
        let m = &mut self.m;
        PairMetrics {
            data_dir: m.data_dir,
            data_sent: m.data_sent,
            data_lost: m.data_lost,
            acks_sent: m.acks_sent,
            acks_lost: m.acks_lost,
            capture_loss: m.capture_loss,
            unknown: m.unknown,
            owd: std::mem::take(&mut m.owd),
            first_tx: m.first_tx,
            last_tx: m.last_tx,
            loss_bins: std::mem::take(&mut m.loss_bins),
            bin0: m.bin0,
            ..PairMetrics::default()
        }
    }

    /// Put back what [`Replay::take_tally`] moved out, tallied since.
    pub fn put_tally(&mut self, t: PairMetrics) {
        let m = &mut self.m;
        m.data_sent = t.data_sent;
        m.data_lost = t.data_lost;
        m.acks_sent = t.acks_sent;
        m.acks_lost = t.acks_lost;
        m.capture_loss = t.capture_loss;
        m.unknown = t.unknown;
        m.owd = t.owd;
        m.first_tx = t.first_tx;
        m.last_tx = t.last_tx;
        m.loss_bins = t.loss_bins;
    }

    /// The part of [`Replay::feed`] that needs the packets in order (the sender's state,
    /// rounds, timeout sequences); [`tally`] is the rest.
    pub fn feed_ordered(&mut self, batch: &[Vec<Pkt>; 2], clock: &ClockFit) {
        self.clock = *clock;
        let (d, r) = (self.dir.idx(), self.dir.rev().idx());
        // The receiver's ACKs, in its own time order (history for the cause and burst tests).
        let mut outs: Vec<AckOut> = batch[r]
            .iter()
            .filter(|p| p.tx_ts != NONE && p.ack != i64::MIN)
            .map(|p| AckOut { tx: p.tx_ts, rx: p.rx_ts, ack: p.ack, fate: p.fate })
            .collect();
        outs.sort_by_key(|a| a.tx);
        for a in outs {
            if self.acks.back().is_none_or(|b| b.tx <= a.tx) {
                self.acks.push_back(a);
            } else {
                let at = self.acks.partition_point(|b| b.tx <= a.tx);
                self.acks.insert(at, a);
            }
        }
        // Sender events in the sender's time order: data transmissions and ACK arrivals (an
        // ACK first at equal times; equal times of one kind in batch order). Each kind is
        // nearly in order already: sorted apart (small items, stable), then merged.
        let mut txs: Vec<(Nanos, u32)> = Vec::with_capacity(batch[d].len());
        for (i, p) in batch[d].iter().enumerate() {
            if p.len > 0 && p.tx_ts != NONE {
                txs.push((p.tx_ts, i as u32));
            }
        }
        let mut arr: Vec<(Nanos, u32)> = Vec::with_capacity(batch[r].len());
        for (i, p) in batch[r].iter().enumerate() {
            if p.rx_ts != NONE && p.ack != i64::MIN {
                arr.push((p.rx_ts, i as u32));
            }
        }
        txs.sort_by_key(|e| e.0);
        arr.sort_by_key(|e| e.0);
        let (mut i, mut j) = (0, 0);
        while i < txs.len() || j < arr.len() {
            if j < arr.len() && (i == txs.len() || arr[j].0 <= txs[i].0) {
                let (t, k) = arr[j];
                j += 1;
                self.now = self.now.max(t);
                let a = &batch[r][k as usize];
                self.on_ack(t, a.ack, &a.sack);
            } else {
                let (t, k) = txs[i];
                i += 1;
                self.now = self.now.max(t);
                let p = &batch[d][k as usize];
                self.on_tx(Tx { tx: p.tx_ts, rx: p.rx_ts, seq: p.seq, end: p.end(), fate: p.fate });
            }
        }
        self.analyze_waiting(false);
        self.trim();
    }

    fn on_ack(&mut self, t: Nanos, ack: i64, sack: &SackAbove) {
        self.last_ack_any = t;
        if let Some(o) = self.open.as_mut() {
            o.acked = true;
        }
        if !self.started {
            return;
        }
        // RACK marks the head lost a reordering window after data sent after it is SACKed,
        // whether or not this ACK also advances (issue 35, v5 run 039: a re-send 17.6 ms
        // after an advancing ACK with a SACK block was counted as a timeout)
        self.last_sack_xmit = self.sacked_xmit(ack, sack);
        if ack <= self.snd_una {
            if self.snd_nxt > self.snd_una {
                self.last_dupack = t; // data outstanding, no progress: a duplicate ACK
            }
            return;
        }
        self.snd_una = ack;
        if self.rto_point.is_some_and(|pt| ack >= pt) {
            self.rto_point = None;
        }
        self.last_adv = t;
        while self.outstanding.front().is_some_and(|x| x.end <= ack) {
            self.outstanding.pop_front();
        }
        if self.open.as_ref().is_some_and(|o| ack >= o.e) {
            let mut o = self.open.take().unwrap();
            o.t_end = Some(t);
            self.waiting.push(o);
        }
        if self.round.as_ref().is_some_and(|rd| ack > rd.first_seq) {
            let rd = self.round.take().unwrap();
            self.eval_round(&rd, None);
        }
    }

    fn on_tx(&mut self, p: Tx) {
        if !self.started {
            self.started = true;
            self.snd_una = p.seq;
            self.snd_nxt = p.seq;
            self.last_adv = p.tx;
        }
        let mut is_rto = false;
        if p.seq < self.snd_nxt && p.seq <= self.snd_una && self.snd_una < p.end {
            let prev = self.last_tx_of.get(p.seq).unwrap_or(Nanos::MIN);
            if self.is_timeout(&p, prev) {
                is_rto = true;
                self.rto_point = Some(self.snd_nxt);
                self.open_timeout(p, self.last_adv.max(prev));
            }
        }
        if p.seq < self.snd_nxt && p.seq <= self.snd_una && self.snd_una < p.end {
            self.last_head_resend = Some((p.seq, p.tx));
        }
        if is_rto {
            if let Some(rd) = self.round.take() {
                self.eval_round(&rd, Some(p.tx));
            }
        }
        if p.seq < self.snd_nxt {
            self.m.retx += 1;
            if let Some(o) = self.open.as_mut().filter(|o| !o.acked) {
                o.retx_before_ack += 1;
            }
        }
        self.snd_nxt = self.snd_nxt.max(p.end);
        self.last_tx_of.insert(p.seq, p.tx);
        if p.end > self.snd_una {
            if self.outstanding.back().is_none_or(|x| x.end <= p.end) {
                self.outstanding.push_back(p);
            } else {
                let at = self.outstanding.partition_point(|x| x.end <= p.end);
                self.outstanding.insert(at, p);
            }
        }
        // A sender never has more than MAX_WINDOW bytes in flight: what lies further below the
        // highest byte sent was acknowledged though no ACK of it was fed (a capture without
        // the ACK direction, or one whose broken clock puts every ACK first). Without this a
        // connection's every segment would stay outstanding.
        while self.outstanding.front().is_some_and(|x| x.end < self.snd_nxt - MAX_WINDOW) {
            self.outstanding.pop_front();
        }
        let in_recovery = self.open.is_some();
        match self.round.as_mut() {
            None => self.round = Some(Round::new(&p, in_recovery)),
            Some(rd) => rd.add(&p),
        }
    }

    /// The latest send time of any transmission that overlaps the ACK's SACK blocks (Linux
    /// keeps one timestamp per segment, its last copy's); `Nanos::MIN` without blocks.
    fn sacked_xmit(&self, ack: i64, sack: &SackAbove) -> Nanos {
        let mut latest = Nanos::MIN;
        for (l, r) in sack.blocks(ack) {
            // sorted by end, and no segment is longer than an IP packet: past r + MAX_SEG
            // every transmission starts above the block
            let from = self.outstanding.partition_point(|x| x.end <= l);
            for x in self.outstanding.range(from..).take_while(|x| x.end < r + MAX_SEG) {
                if x.seq < r {
                    latest = latest.max(x.tx);
                }
            }
        }
        latest
    }

    /// Whether the re-sent head `p` (last sent at `prev`) is the retransmission timer's.
    fn is_timeout(&self, p: &Tx, prev: Nanos) -> bool {
        // Timer-driven: the head waited at least the minimum RTO since it was last sent
        // (Linux measures the RTO from the head's send time while a loss-probe or RACK
        // timer is pending, from the last advancing ACK otherwise: both are later), no
        // ACK arrival triggered it, and the last ACK, recent, was no loss evidence (that would
        // be a RACK reordering-timer retransmission): with SACK, evidence is data sent after
        // the head's last copy SACKed (a D-SACK or a SACK of older data is none; RFC 8985);
        // without, a duplicate ACK. Inside an RTO recovery (snd_una
        // below snd_nxt at the last RTO) an ACK that advances snd_una re-arms the timer,
        // so a head re-sent sooner than the minimum RTO after one is ACK-clocked (the slow
        // start of the recovery, paced a few ms after its ACK), not a new timeout:
        // counting those made rto_sequences exceed the kernel's total_rto_recoveries (M10).
        let evidence = self.last_sack_xmit > prev || (!self.sack && self.last_dupack >= self.last_ack_any);
        let dupack_recent = evidence && p.tx.saturating_sub(self.last_ack_any) < RTO_FLOOR;
        let clocked_in_recovery = self.rto_point.is_some() && p.tx.saturating_sub(self.last_adv) < RTO_FLOOR;
        // Without SACK (no RACK) a recovery re-sends the head again only on a partial ACK,
        // which advances: a second re-send with no advance since is the timer's, however
        // close to a DupACK (issue 35, audit run 002).
        let timer_resend =
            !self.sack && self.last_head_resend.is_some_and(|(s, t)| s == p.seq && t >= self.last_adv);
        prev != Nanos::MIN
            && p.tx.saturating_sub(prev) >= RTO_FLOOR
            && !clocked_in_recovery
            && (timer_resend || (p.tx.saturating_sub(self.last_ack_any) >= ACK_TRIGGER && !dupack_recent))
    }

    /// Start the timeout sequence of the head `p` (armed at `t_arm`), or add `p` to the
    /// open one when it re-sends the same head again.
    fn open_timeout(&mut self, p: Tx, t_arm: Nanos) {
        match self.open.as_mut() {
            Some(o) if o.s == p.seq => o.r.push(p),
            _ => {
                if let Some(o) = self.open.take() {
                    self.waiting.push(o);
                }
                let from = self.outstanding.partition_point(|x| x.end <= p.seq);
                let orig: Vec<Tx> = self
                    .outstanding
                    .range(from..)
                    .copied()
                    .filter(|x| x.seq <= p.seq && x.tx < p.tx)
                    .collect();
                self.open = Some(TimeoutSeq {
                    s: p.seq,
                    e: p.end,
                    t_arm,
                    r: vec![p],
                    t_end: None,
                    orig,
                    spurious: false,
                    cause: None,
                    bias: None,
                    retx_before_ack: 0,
                    acked: false,
                });
            }
        }
    }

    /// ACKs the receiver sent in [t_from, t_to) (receiver clock) acknowledging beyond `above`.
    fn acks_between(&self, t_from: Nanos, t_to: Nanos, above: i64) -> Vec<AckOut> {
        let a = self.acks.partition_point(|x| x.tx < t_from);
        let b = self.acks.partition_point(|x| x.tx < t_to).max(a);
        self.acks.range(a..b).filter(|x| x.ack > above).copied().collect()
    }

    fn eval_round(&mut self, rd: &Round, rto_at: Option<Nanos>) {
        if rd.in_recovery {
            return;
        }
        if rd.delivered == 0 {
            return;
        }
        self.m.rounds += 1;
        if let Some(t_r) = rto_at {
            let t0 = if rd.first_rx == Nanos::MAX { Nanos::MIN } else { rd.first_rx };
            let sent = self.acks_between(t0, map_time(&self.clock, t_r, self.snd, self.rcv), rd.lo_seq);
            if !sent.is_empty() && sent.iter().all(|a| !got(a.fate)) {
                self.m.burst_rounds += 1;
            }
        }
    }

    /// Spurious test, cause and bias of sequences old enough that their ACKs have been fed.
    fn analyze_waiting(&mut self, all: bool) {
        let mut keep = Vec::new();
        for mut o in std::mem::take(&mut self.waiting) {
            let last = o.t_end.unwrap_or_else(|| o.r.last().unwrap().tx);
            if !all && self.now - last < self.lag {
                keep.push(o);
                continue;
            }
            self.analyze(&mut o);
            self.m.seqs.push(o);
        }
        self.waiting = keep;
    }

    fn analyze(&mut self, o: &mut TimeoutSeq) {
        for x in &o.r {
            match x.fate {
                Fate::Lost => {
                    self.m.rto_retx += 1;
                    self.m.rto_retx_lost += 1;
                }
                Fate::Delivered | Fate::CaptureLost => self.m.rto_retx += 1,
                _ => {}
            }
        }
        let (snd, rcv) = (self.snd, self.rcv);
        let t_r = o.r[0].tx;
        // First arrival of any RTO retransmission of this sequence (receiver clock).
        let retx_arrival = o.r.iter().filter(|x| x.rx != NONE).map(|x| x.rx).min();
        let mut orig_arrival: Option<Nanos> = None;
        for q in o.orig.iter().filter(|q| q.got()) {
            let arr = if q.rx != NONE { q.rx } else { map_time(&self.clock, q.tx, snd, rcv) };
            if retx_arrival.is_none_or(|ra| arr <= ra) {
                orig_arrival = Some(orig_arrival.map_or(arr, |x: Nanos| x.min(arr)));
            }
        }
        let Some(orig) = orig_arrival else { return };
        o.spurious = true;
        let t_r_rcv = map_time(&self.clock, t_r, snd, rcv);
        let before = self.acks_between(orig, t_r_rcv, o.s);
        let ack_loss = !before.is_empty() && before.iter().all(|a| a.fate == Fate::Lost);
        o.cause = Some(if ack_loss { "ack_loss" } else { "rto_estimation" });
        if !ack_loss {
            // ACKs of the original: sent after it arrived, before a retransmission arrived.
            let until = retx_arrival.unwrap_or(Nanos::MAX);
            let t6 = self.acks_between(orig, until, o.s).iter().filter(|a| a.rx != NONE).map(|a| a.rx).min();
            o.bias = t6.map(|t6| nanos_to_s(t6 - t_r));
        }
    }

    /// Forget receiver ACKs no pending question can need any more.
    fn trim(&mut self) {
        let mut need = self.now;
        for x in self.outstanding.iter().take(64) {
            need = need.min(x.tx);
        }
        if let Some(o) = &self.open {
            need = need.min(o.t_arm);
            for q in &o.orig {
                need = need.min(q.tx);
            }
        }
        for o in &self.waiting {
            need = need.min(o.t_arm);
            for q in &o.orig {
                need = need.min(q.tx);
            }
        }
        if let Some(rd) = &self.round {
            need = need.min(rd.first_tx);
        }
        if need == Nanos::MIN {
            return;
        }
        // One extra lag of slack for clock error and receiver-side delays.
        let cut = map_time(&self.clock, need, self.snd, self.rcv) - self.lag;
        while self.acks.front().is_some_and(|a| a.tx < cut) {
            self.acks.pop_front();
        }
        if self.last_tx_of.len() > 4 * self.outstanding.len() + 1024 {
            self.last_tx_of.forget_below(self.snd_una - (1 << 24));
        }
    }

    /// End of the connection: close the open sequence, analyse every sequence.
    pub fn finish(mut self, establishment: Option<f64>) -> PairMetrics {
        if let Some(o) = self.open.take() {
            self.waiting.push(o);
        }
        self.analyze_waiting(true);
        self.m.seqs.sort_by_key(|o| o.r[0].tx);
        self.m.establishment = establishment;
        self.m
    }
}

/// The order-free part of [`Replay::feed`] for data direction `dir`: M6 bins, M8/M9 counts,
/// capture loss, one-way delays (each direction's samples in batch order, as the reservoir
/// needs).
pub fn tally(m: &mut PairMetrics, dir: Dir, batch: &[Vec<Pkt>; 2]) {
    let (d, r) = (dir.idx(), dir.rev().idx());
    // Counters (M8, M9), capture loss, one-way delays.
    for p in &batch[d] {
        if p.len > 0 && p.tx_ts != NONE && matches!(p.fate, Fate::Delivered | Fate::Lost | Fate::CaptureLost) {
            m.data_sent += 1;
            m.data_lost += (p.fate == Fate::Lost) as u64;
            let k = (p.tx_ts.saturating_sub(m.bin0).max(0) / 1_000_000_000) as u64;
            m.loss_bins.add(k, p.fate == Fate::Lost);
        }
    }
    for p in &batch[r] {
        if p.pure_ack() && p.tx_ts != NONE && matches!(p.fate, Fate::Delivered | Fate::Lost | Fate::CaptureLost) {
            m.acks_sent += 1;
            m.acks_lost += (p.fate == Fate::Lost) as u64;
        }
    }
    for dd in [Dir::C2S, Dir::S2C] {
        let tx = sender_side(dd);
        for p in &batch[dd.idx()] {
            match p.fate {
                Fate::CaptureLost => m.capture_loss[tx.other().idx()] += 1,
                Fate::SenderMissed => m.capture_loss[tx.idx()] += 1,
                Fate::Unknown => m.unknown += 1,
                Fate::Delivered => {
                    // server-clock time of the sample (for the drift term), raw delay
                    let t = match dd {
                        Dir::S2C => p.tx_ts,
                        Dir::C2S => p.rx_ts,
                    };
                    m.owd[dd.idx()].add(t, p.rx_ts - p.tx_ts);
                    m.first_tx = Some(m.first_tx.map_or(t, |x| x.min(t)));
                    m.last_tx = Some(m.last_tx.map_or(t, |x| x.max(t)));
                }
                _ => {}
            }
        }
    }
}

fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    // Nearest-rank on the sorted samples.
    let k = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    Some(sorted[k])
}

fn ratio(n: u64, d: u64) -> Option<f64> {
    (d > 0).then(|| n as f64 / d as f64)
}

/// Write the metric columns of one matched row (identity columns are written by the driver).
pub fn write_metrics(m: &mut PairMetrics, clock: &ClockFit, row: &mut Row<'_>) {
    let spurious: Vec<&TimeoutSeq> = m.seqs.iter().filter(|o| o.spurious).collect();
    let biases: Vec<f64> = spurious.iter().filter_map(|o| o.bias).collect();
    let n_ackl = spurious.iter().filter(|o| o.cause == Some("ack_loss")).count() as u64;
    let n_spur = spurious.len() as u64;
    let spur_pkts: u64 = spurious.iter().map(|o| o.retx_before_ack).sum();
    row.str("matched_data_dir", m.data_dir.map(Dir::name))
        .u64("data_packets_sent", m.data_sent)
        .u64("lost_data_packets", m.data_lost)
        .f64("p_d", ratio(m.data_lost, m.data_sent))
        .u64("ack_packets_sent", m.acks_sent)
        .u64("lost_ack_packets", m.acks_lost)
        .f64("p_a", ratio(m.acks_lost, m.acks_sent))
        .u64("rounds", m.rounds)
        .u64("ack_burst_loss_rounds", m.burst_rounds)
        .f64("ack_burst_loss", ratio(m.burst_rounds, m.rounds))
        .u64("rto_sequences", m.seqs.len() as u64)
        .u64("rto_retransmissions", m.rto_retx)
        .u64("rto_retransmissions_lost", m.rto_retx_lost)
        .f64("q", ratio(m.rto_retx_lost, m.rto_retx))
        .u64("spurious_timeouts_2v", n_spur)
        .u64("spurious_timeouts", n_spur)
        .u64("spurious_timeouts_undecided", 0u64)
        .u64("retransmitted_packets", m.retx)
        .u64("spurious_rto_packets", spur_pkts)
        .f64("spurious_rto_rate", ratio(spur_pkts, m.retx))
        .f64("spurious_timeout_share", ratio(n_spur, m.seqs.len() as u64))
        .u64("spurious_timeouts_ack_loss", n_ackl)
        .u64("spurious_timeouts_rto_estimation", n_spur - n_ackl)
        .f64("rto_bias_mean_s", (!biases.is_empty()).then(|| biases.iter().sum::<f64>() / biases.len() as f64))
        .f64("rto_bias_max_s", biases.iter().copied().reduce(f64::max))
        .f64_finite("establishment_time_s", m.establishment)
        .u64("capture_loss_client_packets", m.capture_loss[Side::Client.idx()])
        .u64("capture_loss_server_packets", m.capture_loss[Side::Server.idx()])
        .u64("unknown_fate_packets", m.unknown);
    for (dd, names) in [
        (Dir::S2C, ["owd_down_min_s", "owd_down_median_s", "owd_down_p95_s", "owd_down_max_s"]),
        (Dir::C2S, ["owd_up_min_s", "owd_up_median_s", "owd_up_p95_s", "owd_up_max_s"]),
    ] {
        // downlink: t_cli_rx + θ − t_srv_tx; uplink: t_srv_rx − (t_cli_tx + θ)
        let v = m.owd[dd.idx()].corrected(clock, if dd == Dir::S2C { 1 } else { -1 });
        row.f64(names[0], v.first().copied())
            .f64(names[1], quantile(&v, 0.5))
            .f64(names[2], quantile(&v, 0.95))
            .f64(names[3], v.last().copied());
    }
    if clock.known() {
        let mid = match (m.first_tx, m.last_tx) {
            (Some(a), Some(b)) => a + (b - a) / 2,
            _ => clock.t_ref,
        };
        row.f64("clock_offset_s", nanos_to_s(clock.offset_at(mid)))
            .f64("clock_drift_ppm", clock.drift * 1e6)
            .f64_finite("clock_offset_uncertainty_s", Some(clock.uncertainty_s));
    }
}

/// M6 series rows of one matched flow: one per 1-s bin up to the last bin with a data
/// transmission (bins without one: counts 0, loss_rate null), none inside stretches of more
/// than 300 s without a transmission (`loss_bins::GAP_BINS`).
pub fn write_loss_series(m: &PairMetrics, id: u64, out: &mut crate::table::TableBuilder) {
    for (k, [sent, lost]) in m.loss_bins.rows() {
        let start = m.bin0.saturating_add((k as Nanos).saturating_mul(1_000_000_000));
        out.row()
            .u64("flow_id", id)
            .u64("bin", k as u64)
            .f64("t_rel", Some(k as f64))
            .f64("ts", Some(nanos_to_s(start)))
            .u64("data_sent", sent)
            .u64("data_lost", lost)
            .f64("loss_rate", ratio(lost, sent));
    }
}

/// One `spurious_timeout` event per spurious timeout sequence (sender clock).
pub fn spurious_events(m: &PairMetrics) -> Vec<Event> {
    let Some(dir) = m.data_dir else { return Vec::new() };
    m.seqs
        .iter()
        .filter(|o| o.spurious)
        .map(|o| {
            let mut e = Event::new(EventKind::SpuriousTimeout, o.r[0].tx);
            e.class = Some(SpuriousMethod::TwoVantage.as_str());
            e.cause = o.cause;
            e.ts_end = o.t_end;
            e.dir = Some(dir);
            e.seq_start = Some(o.s);
            e.seq_end = Some(o.e);
            e.count = Some(o.r.len() as u64);
            e.value = o.bias;
            e
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::LastSent;
    use std::collections::HashMap;

    /// The same answers as the map it replaced, through new data, retransmissions of old
    /// sequence numbers, sequence numbers between the known ones, and forgetting.
    #[test]
    fn last_sent_behaves_like_a_map() {
        let (mut ls, mut model) = (LastSent::default(), HashMap::<i64, i64>::new());
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        let mut top = 0i64;
        for t in 0..20_000i64 {
            let seq = match next(10) {
                0..=5 => {
                    top += 1 + next(3) as i64 * 1448;
                    top
                }
                6..=8 => top - next(50) as i64 * 1448,
                _ => top - next(100_000) as i64,
            };
            ls.insert(seq, t);
            model.insert(seq, t);
            if next(500) == 0 {
                let floor = top - next(200_000) as i64;
                ls.forget_below(floor);
                model.retain(|&s, _| s >= floor);
            }
            assert_eq!(ls.len(), model.len());
            for q in [seq, seq - 1, seq + 1, top - 1448, top - next(300_000) as i64] {
                assert_eq!(ls.get(q), model.get(&q).copied(), "seq {q}");
            }
        }
        assert!(ls.0.iter().zip(ls.0.iter().skip(1)).all(|(a, b)| a.0 < b.0));
    }
}
