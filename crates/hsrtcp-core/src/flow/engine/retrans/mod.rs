//! One direction of data and the ACKs that answer it: retransmission classification
//! (analyzers.md §3.4), reordering and network duplicates told apart from retransmissions
//! (Tstat's out-of-sequence taxonomy, with the flow's own RTT/TSval/IP-ID instead of WAN
//! floors), DupACKs (M15), bytes in flight (M17), RTT by ACK matching with Karn's rule (M7),
//! timeout sequences (M10) and the sender-side spurious tests (D-SACK, Eifel; M12/M13/M16).
//!
//! Vantage matters (analyzers.md §3): `vantage` says whether the capture sits at this
//! direction's sender, at its receiver, or is unknown.

mod heard;
mod receiver;
mod sender;

use crate::flow::event::{Dir, Event, EventKind};
use crate::flow::seq::seq_lt;
use crate::wire::{Nanos, Segment};

use super::kinds::{DataVantage, RetransClass, SpuriousMethod};
use super::rtt::RttBook;
use super::series::Bins;
use super::spurious::{dsack, RecentRetx, RecentRing};
use super::store::{Overlap, Prior, Store};
use super::window::{Repeats, WindowStats};
use heard::Heard;
use receiver::{Edge, ReceiverState};
use sender::SenderState;

/// Share of a fixed RTO estimate a silence must reach before a retransmission is taken as
/// timer-driven. RFC 6298 RTOs are never below SRTT + 4·RTTVAR (Linux adds a 200 ms floor),
/// so 3/4 of it keeps margin for estimator noise at every RTT scale.
const RTO_FRACTION_NUM: i64 = 3;
const RTO_FRACTION_DEN: i64 = 4;
/// No stack's retransmission timer fires sooner than this, whatever the RTT (default
/// minimum RTOs: Linux 200 ms, Windows 300 ms, FreeBSD 30 ms). On sub-millisecond paths
/// SRTT + 4·RTTVAR is far below it, and RACK reorder-timer re-sends (no fresh loss
/// evidence, a fraction of an RTT after the last ACK) were taken for timeouts: the bench
/// capture (0.26 ms RTT, kernel total_rto 0) showed two.
const MIN_TIMER_RTO: Nanos = 10_000_000;
/// Before any RTT sample exists: Linux's minimum RTO (the only scale available).
const RTO_THRESHOLD_NO_RTT: Nanos = 200_000_000;

/// Coarsest retransmission-timer tick of common stacks (Linux HZ=100: 10 ms; probe and
/// RACK timers need up to two ticks): loss-driven retransmissions may lag their trigger by
/// this much on paths whose RTT is far below it.
const TIMER_TICK: Nanos = 20_000_000;
/// Linux's TCP_RTO_MIN, which the probe timeout adds when one segment is outstanding
/// (`tcp_schedule_loss_probe`: PTO = 2·SRTT + TCP_RTO_MIN, capped at the RTO timer).
const LONE_PROBE_EXTRA: Nanos = 200_000_000;

/// A data segment of this direction as the rules read it: the captured segment and where
/// its payload starts in the direction's relative sequence space. Two words, so it travels
/// in registers (a struct of the five values was built on the stack for every segment).
#[derive(Clone, Copy)]
pub struct DataSeg<'a> {
    /// First payload byte (relative).
    pub s: i64,
    pub seg: &'a Segment,
}

impl DataSeg<'_> {
    /// One past the last payload byte.
    #[inline]
    pub fn e(&self) -> i64 {
        self.s + self.seg.payload_len as i64
    }

    /// [s, e), the capture time, and the sender's marks that tell copies and re-sends apart
    /// (TSval, IP ID).
    #[inline]
    pub fn parts(&self) -> (i64, i64, Nanos, Option<u32>, Option<u16>) {
        (self.s, self.e(), self.seg.ts, self.seg.options.timestamp.map(|t| t.0), self.seg.ip_id)
    }
}

/// What the engine needs from the rest of the connection when handling one segment.
pub struct Ctx<'a> {
    pub first_ts: Nanos,
    pub vantage: DataVantage,
    pub sack: bool,
    pub dir: Dir,
    /// Window scale shift of this direction's receiver (0 when unknown).
    pub peer_shift: u8,
    pub rtt: &'a mut RttBook,
    pub ev: &'a mut Vec<Event>,
    /// Set when this segment decided an unknown vantage (else Unknown).
    pub decided: DataVantage,
    /// This segment ended a suspension (silence in both directions).
    pub after_silence: bool,
}

impl<'a> Ctx<'a> {
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn new(
        first_ts: Nanos,
        vantage: DataVantage,
        sack: bool,
        dir: Dir,
        peer_shift: u8,
        rtt: &'a mut RttBook,
        ev: &'a mut Vec<Event>,
        after_silence: bool,
    ) -> Self {
        Ctx { first_ts, vantage, sack, dir, peer_shift, rtt, ev, decided: DataVantage::Unknown, after_silence }
    }
}

#[derive(Default)]
pub struct Counts {
    pub data_segments: u64,
    pub retransmissions: u64,
    pub retransmitted_bytes: u64,
    pub fast: u64,
    pub sack_refill: u64,
    pub rto: u64,
    pub tlp: u64,
    pub unclassified: u64,
    /// Receiver side: in-sequence segments whose original may or may not have been lost
    /// (see `unseen_original`): re-sends or new data, undecidable at the phone.
    pub undecided: u64,
    /// Receiver side: DupACK candidates answering a repeat that the rules above do not count
    /// (see `settle_pending_dupacks`).
    pub dupacks_undecided: u64,
    pub reordering: u64,
    pub network_duplicates: u64,
    pub zero_window_probes: u64,
    /// Retransmissions whose bytes had all been seen (receiver) or D-SACKed (sender).
    pub unnecessary: u64,
    pub pure_acks: u64,
    pub dupacks: u64,
    pub dsack_blocks: u64,
    pub acked_bytes: u64,
    pub advancing_acks_ca: u64,
    pub acked_bytes_ca: u64,
    pub timeout_sequences: u64,
    pub timeouts: u64,
    pub timeout_retransmissions: u64,
    pub timeout_repeated: u64,
    pub timeout_finished: u64,
    pub timeout_duration_sum: f64,
    pub timeout_duration_max: f64,
    pub rto_first_sum: f64,
    pub spurious_timeouts: u64,
    pub spurious_receiver: u64,
    pub spurious_dsack: u64,
    pub spurious_eifel: u64,
    /// Sender side: timeout sequences whose verdict the sender's evidence cannot give
    /// (`SenderState::undecided_at_close`).
    pub spurious_undecided: u64,
    /// M13 numerator: retransmitted segments of spurious RTO episodes.
    pub spurious_rto_segments: u64,
    pub rto_bias_sum: f64,
    pub rto_bias_n: u64,
    pub bif_max: u64,
    pub bif_sum: f64,
    pub bif_n: u64,
}

#[derive(Default)]
pub struct Stream {
    pub store: Store,
    pub started: bool,
    /// Highest payload byte seen + 1.
    pub nxt: i64,
    /// Highest cumulative ACK from the peer.
    pub una: i64,
    pub ack_seen: bool,
    /// Every byte below it was seen or acknowledged (no hole below it at the capture).
    seen_to: i64,
    last_ack_ts: Nanos,
    last_advance_ts: Nanos,
    last_ack_window: u16,
    dupacks_since_advance: u32,
    /// Latest DupACK or SACK-bearing ACK (a loss signal).
    last_dupack_ts: Option<Nanos>,
    /// Highest right edge SACKed by the peer (meaningful above una).
    sack_high: i64,
    /// Latest retransmission (Karn's "intervening transmission" rule).
    last_retx_ts: Nanos,
    /// Latest send time of a re-sent copy the cumulative ACK reached: data sent after a
    /// segment's last copy was delivered, what lets RACK mark that segment lost by time.
    acked_retx_ts: Nanos,
    max_tsval: Option<u32>,
    max_ip_id: Option<u16>,
    ipid_inc: u32,
    ipid_other: u32,
    recent: RecentRing,
    /// Recent cumulative-ACK advances, to date the original of a repeat whose records were
    /// already pruned below the ACK.
    advances: [Advance; 32],
    adv_next: usize,
    /// The ACK of the newest advance pushed out of `advances`: bytes up to it may have been
    /// covered by an advance no longer remembered.
    evicted_ack: Option<i64>,
    /// Receiver side: which of the phone's ACKs the sender had taken (TSecr).
    heard: Heard,
    /// What only the sender-side rules keep (recovery episodes, timer, timeout sequences).
    tx: SenderState,
    /// What only the receiver-side rules keep (unseen originals, the phone's triggers).
    rx: ReceiverState,
    pub win: WindowStats,
    /// Repeated windows not yet in `win` and `bins`.
    win_repeats: Repeats,
    pub bins: Bins,
    pub c: Counts,
    /// Largest payload seen (MSS fallback).
    pub max_payload: u32,
}

/// A cumulative-ACK advance: ACK number, time, the ACK's TSval and (receiver side) the TSecr
/// bound of the bytes it covered ([`Heard::on_advance`]); zero when unknown.
#[derive(Clone, Copy, Default)]
struct Advance {
    ack: i64,
    ts: Nanos,
    tsval: u32,
    tsecr_low: u32,
}

/// The silence a re-send must follow to be taken as timer-driven, from the RTT estimate.
#[inline]
fn rto_threshold(rtt: &RttBook) -> Nanos {
    match rtt.est.rto() {
        Some(r) => (r * RTO_FRACTION_NUM / RTO_FRACTION_DEN).max(MIN_TIMER_RTO),
        None => RTO_THRESHOLD_NO_RTT,
    }
}

impl Stream {
    /// Receiver side: DupACK candidates waiting for the next data to be decided.
    pub fn pending_dupacks(&self) -> u32 {
        self.rx.pending_dupacks()
    }

    /// Bytes sent and not cumulatively acknowledged (M17), if both are known.
    pub fn in_flight(&self) -> Option<u64> {
        (self.started && self.ack_seen).then(|| (self.nxt - self.una).max(0) as u64)
    }

    /// Bytes are in flight (the stall test every segment makes; `in_flight() > 0`).
    #[inline]
    pub fn stalled(&self) -> bool {
        self.started && self.ack_seen && self.nxt > self.una
    }

    pub fn una_opt(&self) -> Option<i64> {
        self.ack_seen.then_some(self.una)
    }

    fn ipid_monotone(&self) -> bool {
        self.ipid_inc >= 8 && self.ipid_inc >= 9 * self.ipid_other
    }

    /// The shared state the receiver-side rules may read.
    #[inline]
    fn edge(&self) -> Edge {
        Edge {
            nxt: self.nxt,
            una: self.una,
            ack_seen: self.ack_seen,
            seen_to: self.seen_to,
            max_payload: self.max_payload as i64,
            ipid_monotone: self.ipid_monotone(),
        }
    }

    /// A data segment of this direction. `mss`: the segment size that turns bytes into
    /// packets (MSS, or the largest payload seen); only data needs it, so it is not in the
    /// [`Ctx`] every ACK builds.
    #[inline]
    pub fn on_data(&mut self, x: &mut Ctx, d: DataSeg, peer_zero_window: bool, mss: i64) {
        let (s, e, ts, tsval, ip_id) = d.parts();
        let len = e - s;
        self.c.data_segments += 1;
        self.max_payload = self.max_payload.max(len as u32);
        if !self.started {
            self.started = true;
            self.nxt = e;
            self.seen_to = if self.ack_seen && s > self.una { self.una } else { e };
            // (the store is empty: the first data is new)
            self.store.append_new(s, e, ts, tsval.unwrap_or(0), ip_id);
            self.note_order(tsval, ip_id);
            return;
        }
        if peer_zero_window {
            self.rx.closed_since = true;
        }
        // Zero-window probe (RFC 9293 §3.8.6.1): ≤ 1 byte against a closed window.
        if peer_zero_window && len <= 1 {
            self.window_probe(x, s, e, ts, "one_byte");
            if e > self.nxt {
                self.nxt = e;
            }
            return;
        }
        if x.vantage == DataVantage::Receiver {
            self.rx.note_arrival(ts, rto_threshold(x.rtt));
        }
        if let Some((_, echo)) = d.seg.options.timestamp.filter(|_| x.vantage != DataVantage::Sender) {
            self.heard.on_data(echo);
        }
        self.rx.close_spurious_after_pause(x, &mut self.c, ts);
        let (kind, prior) = match self.place(x, d) {
            Ok(gap) => {
                let kind = Overlap::New { gap };
                self.note_seen(s, e, kind);
                self.new_data(x, d, kind, mss);
                return;
            }
            Err(old) => old,
        };
        self.note_seen(s, e, kind);
        if e > self.nxt {
            self.nxt = e;
        }
        if x.vantage == DataVantage::Receiver {
            self.rx.note_old_data(ip_id);
        }
        if x.vantage == DataVantage::Unknown && matches!(kind, Overlap::Repeat | Overlap::Fill) {
            // Loss pattern: a sender-side capture sees the originals of what it re-sends
            // (repeats); a receiver-side capture mostly sees holes being filled.
            x.vantage = if kind == Overlap::Repeat { DataVantage::Sender } else { DataVantage::Receiver };
            x.decided = x.vantage;
        }
        if !self.not_a_retransmission(x, d, kind, &prior) {
            self.retransmission(x, d, kind, &prior);
        }
    }

    /// [s, e) arrived: moves the edge below which no hole is open (a fill may join it to
    /// records seen beyond; new data is the tail, nothing lies beyond it).
    #[inline]
    fn note_seen(&mut self, s: i64, e: i64, kind: Overlap) {
        if s <= self.seen_to && e > self.seen_to {
            match kind {
                Overlap::New { .. } => self.seen_to = e,
                _ => self.raise_seen_to(e),
            }
        }
    }

    /// Raises `seen_to` to `to` (bytes arrived, or acknowledged: the capture missed them)
    /// and over the records that continue it.
    fn raise_seen_to(&mut self, to: i64) {
        if to <= self.seen_to {
            return; // every ACK: the phone acknowledges only what it has
        }
        self.seen_to = to;
        while let Some(r) = self.store.covering(self.seen_to) {
            self.seen_to = r.end;
        }
    }

    /// Where [s, e) stands against the bytes seen: wholly below the cumulative ACK it is a
    /// repeat of acknowledged bytes, last seen before the first ACK that covered them (if
    /// still remembered); else the store places it: `Ok(gap)` for new data (nearly every
    /// segment, no [`Prior`] built or copied), else fill, repeat or partial.
    #[inline]
    fn place(&mut self, x: &Ctx, d: DataSeg) -> Result<bool, (Overlap, Prior)> {
        let (s, e, ts, tsval, ip_id) = d.parts();
        if self.ack_seen && e <= self.una {
            let seen = self.covering(e).map_or(ts, |v| v.ts);
            return Err((Overlap::Repeat, Prior { first_ts: seen, last_ts: seen, ..Default::default() }));
        }
        let s2 = if self.ack_seen { s.max(self.una) } else { s };
        let tsval = tsval.unwrap_or(0);
        match self.store.append_new(s2, e, ts, tsval, ip_id) {
            Some(gap) => Ok(gap),
            None => Err(self.store.add_below_tail(s2, e, ts, tsval, ip_id, x.vantage != DataVantage::Sender)),
        }
    }

    /// The earliest remembered advance that covered bytes up to `e`.
    #[inline]
    fn covering(&self, e: i64) -> Option<Advance> {
        self.advances.iter().filter(|v| v.ts != 0 && v.ack >= e).min_by_key(|v| v.ts).copied()
    }

    /// Data beyond everything seen: new data (M17 windows), unless at the receiver its
    /// original was never seen and it is a re-send of it.
    #[inline]
    fn new_data(&mut self, x: &mut Ctx, d: DataSeg, kind: Overlap, mss: i64) {
        let (s, e, ts, tsval, ip_id) = d.parts();
        if x.vantage == DataVantage::Receiver {
            let edge = self.edge();
            let resent = self.rx.unseen_original(x, edge, &mut self.c, d);
            self.settle_pending_dupacks(x, resent);
            if resent {
                self.nxt = e;
                let prior = Prior { first_ts: ts, last_ts: ts, ..Default::default() };
                self.retransmission(x, d, kind, &prior);
                if let Some(ev) = x.ev.last_mut() {
                    ev.cause = Some("unseen_original");
                    ev.value = None;
                }
                return;
            }
        }
        // judged against the highest byte seen: the store may be empty after pruning
        self.rx.note_new_data(x.after_silence, s, self.nxt);
        self.nxt = e;
        self.note_order(tsval, ip_id);
        let una = self.una_opt();
        let q = 1i64 << x.peer_shift;
        self.win.on_new_data(s, e, una, q, mss, ts, x.dir, x.ev);
    }

    /// Old bytes that are no retransmission: at the receiver the original overtaken by its
    /// re-send (late original), a copy made by the network (same IP ID and TSval), or a hole
    /// fill sent before the data that overtook it (reordering). Returns whether it was one.
    #[inline]
    fn not_a_retransmission(&mut self, x: &mut Ctx, d: DataSeg, kind: Overlap, prior: &Prior) -> bool {
        let (s, e, ts, tsval, ip_id) = d.parts();
        match kind {
            Overlap::Repeat
                if x.vantage == DataVantage::Receiver && self.is_late_original(s, tsval, ip_id) =>
            {
                self.late_original(x, s, e, ts, prior);
                true
            }
            Overlap::Repeat => {
                let same_copy = prior.same_start_ip_id.is_some()
                    && prior.same_start_ip_id == ip_id
                    && (tsval.is_none() || prior.same_start_tsval == tsval);
                if same_copy {
                    self.c.network_duplicates += 1;
                    let mut ev = Event::on_bytes(EventKind::Duplicate, ts, x.dir, s, e);
                    ev.class = Some("network");
                    x.ev.push(ev);
                }
                same_copy
            }
            Overlap::Fill
                if !(x.vantage == DataVantage::Receiver && self.sent_after_later_data(e, tsval, ip_id))
                    && self.is_reordering(x, d, prior) =>
            {
                if x.vantage == DataVantage::Receiver && self.rx.overtaken_resend(&mut self.c, s, ip_id) {
                    return true;
                }
                self.c.reordering += 1;
                let mut ev = Event::on_bytes(EventKind::Reordering, ts, x.dir, s, e);
                ev.value = prior.hole_seen_ts.map(|h| (ts - h) as f64 * 1e-9);
                x.ev.push(ev);
                true
            }
            _ => false,
        }
    }

    /// The original arrived after its re-send (reordering, class `late_original`): the
    /// re-send that overtook it was not needed (the phone saw two copies, one sent as a
    /// re-send); once per re-send.
    fn late_original(&mut self, x: &mut Ctx, s: i64, e: i64, ts: Nanos, prior: &Prior) {
        self.c.reordering += 1;
        let mut ev = Event::on_bytes(EventKind::Reordering, ts, x.dir, s, e);
        ev.class = Some("late_original");
        ev.value = Some((ts - prior.last_ts) as f64 * 1e-9);
        x.ev.push(ev);
        if let Some(r) = self.recent.claim_latest_at(s) {
            self.c.unnecessary += 1;
            let mut ev = Event::on_bytes(EventKind::SpuriousRetransmission, ts, x.dir, r.start, r.end);
            ev.class = Some(SpuriousMethod::Receiver.as_str());
            ev.cause = Some(r.class.as_str());
            x.ev.push(ev);
        }
    }

    /// A segment without payload, SYN, FIN or RST from this direction's sender, at relative
    /// sequence number `seq`. Linux probes a zero window with such a segment one byte below
    /// snd_una (tcp_xmit_probe_skb: "use a previous sequence" so the receiver must answer);
    /// the sender's snd_una is at most the cumulative ACK seen here, so a probe lies below
    /// it. Counted while the window is zero, or was and no new data came since (a probe
    /// may cross the window update). Below the ACK with an open window it is a keepalive.
    #[inline]
    pub fn on_empty(&mut self, x: &mut Ctx, seq: i64, ts: Nanos) {
        if self.ack_seen && seq < self.una && self.win.probing() {
            self.rx.closed_since = true;
            self.window_probe(x, seq, seq, ts, "empty");
        }
    }

    fn window_probe(&mut self, x: &mut Ctx, s: i64, e: i64, ts: Nanos, class: &'static str) {
        self.c.zero_window_probes += 1;
        let mut ev = Event::on_bytes(EventKind::WindowProbe, ts, x.dir, s, e);
        ev.class = Some(class);
        x.ev.push(ev);
    }

    /// Receiver side: decide the pending DupACK candidates (M15) when data beyond their ACK
    /// number arrives. They were DupACKs if that data was sent before they reached the
    /// sender, which the phone knows only when it is a re-send (its original went out
    /// before). How soon new data arrives proves nothing: it was sent before the ACK arrived
    /// iff it arrived sooner than that ACK's way up plus its own way down, and one ACK may be
    /// fast (live runs: an ACK 5 us up against 36-46 us for its neighbours, the next data
    /// 31 us after it; a lost ACK, the data 26 us after it, sent after the ACK sent just
    /// before it arrived). The rule of half an SRTT counted both (issue 30 item 1).
    fn settle_pending_dupacks(&mut self, x: &Ctx, resent: bool) {
        let (n, t0) = self.rx.take_pending_dupacks();
        if n == 0 {
            return;
        }
        if resent {
            self.c.dupacks += n as u64;
            self.dupacks_since_advance += n;
            self.bins.at(x.first_ts, t0).dupacks += n;
        } else {
            // whether the sender had sent beyond the ACK number when the ACK reached it
            // depends on one-way delays and on data lost on the way, which the phone never
            // sees: undecided (the count above is the lower bound)
            self.c.dupacks_undecided += n as u64;
        }
    }

    /// Keep the highest TSval / IP ID of in-order data and whether IP IDs count up.
    fn note_order(&mut self, tsval: Option<u32>, ip_id: Option<u16>) {
        if let Some(v) = tsval {
            if self.max_tsval.is_none_or(|m| seq_lt(m, v) || m == v) {
                self.max_tsval = Some(v);
            }
        }
        if let Some(id) = ip_id {
            if let Some(m) = self.max_ip_id {
                let d = id.wrapping_sub(m) as i16;
                if d > 0 && d < 64 {
                    self.ipid_inc += 1;
                } else {
                    self.ipid_other += 1;
                }
                if d > 0 {
                    self.max_ip_id = Some(id);
                }
            } else {
                self.max_ip_id = Some(id);
            }
        }
    }

    /// Whether a copy carrying (`tsval`, `ip_id`) was sent before one carrying (`ref_tsval`,
    /// `ref_ip_id`): a strictly older TSval, else (equal or missing TSvals) an older IP ID from
    /// a sender whose IDs count up. `None` when neither tells.
    fn sent_before(
        &self,
        tsval: Option<u32>,
        ip_id: Option<u16>,
        ref_tsval: Option<u32>,
        ref_ip_id: Option<u16>,
    ) -> Option<bool> {
        if let (Some(v), Some(m)) = (tsval, ref_tsval) {
            if v != m {
                return Some(seq_lt(v, m));
            }
        }
        match (ip_id, ref_ip_id) {
            (Some(id), Some(m)) if self.ipid_monotone() => Some((id.wrapping_sub(m) as i16) < 0),
            _ => None,
        }
    }

    /// Receiver side: bytes arriving again after a re-send of them already arrived are the
    /// original, overtaken on the path, when they were sent before that re-send (a re-send
    /// always gets the newest TSval and IP ID). Seen on sub-millisecond paths where RACK
    /// re-sends before a delayed original arrives; counting it as a repeat double-counted
    /// retransmissions.
    fn is_late_original(&self, s: i64, tsval: Option<u32>, ip_id: Option<u16>) -> bool {
        self.recent
            .latest_at(s)
            .and_then(|r| self.sent_before(tsval, ip_id, r.tsval, r.ip_id))
            .unwrap_or(false)
    }

    /// Receiver side: a hole fill [.., e) sent after some copy of data beyond it (newer TSval,
    /// or a later IP ID on a sender whose IDs count up) cannot be the original: the sender
    /// sends new data in sequence order, so the original went out before every copy of later
    /// bytes. It is a re-send, even when data sent after it overtook it (issue 30: a re-send
    /// with IP ID 22383 arrived after new data with ID 22385, and was read as reordering
    /// though data beyond it carried ID 22378).
    fn sent_after_later_data(&self, e: i64, tsval: Option<u32>, ip_id: Option<u16>) -> bool {
        let mono = self.ipid_monotone();
        self.store.any_copy_beyond(e, |r| {
            if let Some(v) = tsval {
                if r.tsval_last != v {
                    return seq_lt(r.tsval_last, v);
                }
            }
            match (ip_id, r.ip_id) {
                (Some(id), Some(m)) if mono => (id.wrapping_sub(m) as i16) > 0,
                _ => false,
            }
        })
    }

    /// A hole fill is reordering (sent before data that overtook it), not a retransmission,
    /// when its TSval is older than the newest in-order data, or (no timestamps) its IP ID is
    /// older on a sender whose IDs count up, or (neither) it came less than half the path's
    /// minimum RTT after the hole appeared — a retransmission needs at least one RTT.
    fn is_reordering(&self, x: &Ctx, d: DataSeg, prior: &Prior) -> bool {
        let (_, _, ts, tsval, ip_id) = d.parts();
        if let Some(older) = self.sent_before(tsval, ip_id, self.max_tsval, self.max_ip_id) {
            return older;
        }
        // At the receiver every real loss makes it send a DupACK/SACK as soon as the data
        // after the hole arrives (RFC 5681 §4.2), and the sender needs that signal (or a
        // timer of at least an RTT) to re-send: a fill before any such ACK was only late.
        if x.vantage == DataVantage::Receiver {
            if let Some(h) = prior.hole_seen_ts {
                return self.last_dupack_ts.is_none_or(|d| d < h);
            }
        }
        match (x.rtt.est.min, prior.hole_seen_ts) {
            (Some(min), Some(h)) => ts - h < min / 2,
            _ => false,
        }
    }

    /// A retransmission (M8 counts): classified by the rules of the vantage, remembered for
    /// the spurious tests, and at the receiver a repeat of bytes it had is unnecessary.
    fn retransmission(&mut self, x: &mut Ctx, d: DataSeg, kind: Overlap, prior: &Prior) {
        let (s, e, ts, tsval, ip_id) = d.parts();
        // a timeout recovery the receiver already saw needed (its first re-send filled a hole)
        let genuine_recovery = self.rx.rto_point.is_some() && !self.rx.in_spurious();
        if x.vantage == DataVantage::Receiver && kind == Overlap::Repeat && self.ends_episode(d) {
            // the open episode is over: this copy is judged on its own (a timer's, or a probe)
            self.rx.close_spurious(x, &mut self.c);
        }
        let class = match x.vantage {
            DataVantage::Sender => self.sender_class(x, d, prior),
            DataVantage::Receiver => {
                self.heard.on_resend();
                // a copy the sender sent having taken no loss signal of the phone's is the
                // timer's, however soon after a DupACK of the phone's it arrived
                let recent = self.recent_dupack(x, s, ts) && !self.timer_only(d, kind);
                // (the newest-data test in sequence space: the phone's ACK of a FIN moves the
                // edge one beyond the payload)
                let end = e + d.seg.flags.fin() as i64;
                self.rx.class(x, self.edge(), recent, s, end, ts - prior.last_ts, kind == Overlap::Repeat)
            }
            DataVantage::Unknown => RetransClass::Unclassified,
        };
        self.count_retransmission(x, class, s, e, ts);
        let episode = if class == RetransClass::Rto { self.tx.rto_ep.map(|r| r.id) } else { None };
        self.recent.push(RecentRetx { start: s, end: e, ts, class, episode, attributed: false, tsval, ip_id });
        let mut ev = Event::on_bytes(EventKind::Retransmission, ts, x.dir, s, e);
        ev.class = Some(class.as_str());
        // time since these bytes were last seen (tcptrace "retr time")
        ev.value = Some((ts - prior.last_ts) as f64 * 1e-9);
        if kind == Overlap::Repeat {
            ev.cause = Some("duplicate");
        } else if kind == Overlap::Fill {
            ev.cause = Some("hole_fill");
        }
        x.ev.push(ev);
        if x.vantage == DataVantage::Receiver && kind == Overlap::Repeat {
            self.c.unnecessary += 1;
            self.rx.unnecessary_repeat(x, class, genuine_recovery, d);
        }
    }

    #[inline]
    fn count_retransmission(&mut self, x: &Ctx, class: RetransClass, s: i64, e: i64, ts: Nanos) {
        self.c.retransmissions += 1;
        self.c.retransmitted_bytes += (e - s) as u64;
        match class {
            RetransClass::Fast => self.c.fast += 1,
            RetransClass::SackRefill => self.c.sack_refill += 1,
            RetransClass::Rto => self.c.rto += 1,
            RetransClass::Tlp => self.c.tlp += 1,
            RetransClass::Unclassified => self.c.unclassified += 1,
        }
        self.last_retx_ts = ts;
        self.bins.at(x.first_ts, ts).retransmissions += 1;
    }

    /// Receiver vantage, timestamps on: a repeat of bytes the phone had acknowledged, sent
    /// before its sender took that ACK and with no loss signal of the phone's taken since the
    /// bytes' original left ([`Heard::no_signal_heard`]).
    fn timer_only(&self, d: DataSeg, kind: Overlap) -> bool {
        let (Some((_, echo)), true) = (d.seg.options.timestamp, kind == Overlap::Repeat && d.e() <= self.una) else {
            return false;
        };
        // The covering advance must be the first one that reached e: once an advance that
        // may have been it was evicted, a later one's higher TSecr low would hide a signal.
        if self.evicted_ack.is_some_and(|a| a >= d.e()) {
            return false;
        }
        self.covering(d.e()).is_some_and(|v| v.tsval != 0 && self.heard.no_signal_heard(echo, v.tsval, v.tsecr_low))
    }

    /// Receiver vantage, timestamps on: a copy that is no part of the open timeout episode.
    /// Its sender had taken an ACK covering the episode's first re-sent bytes
    /// (an episode lasts until that ACK: docs/accuracy.md "Truth"), and new data sent after
    /// the episode's latest copy had arrived (its go-back-N was over). The pause rule cannot
    /// tell when delay episodes inflate the phone's RTT samples to seconds.
    fn ends_episode(&self, d: DataSeg) -> bool {
        let (Some((head_end, Some(last))), Some((_, echo)), Some(newest)) =
            (self.rx.open_episode(), d.seg.options.timestamp, self.max_tsval)
        else {
            return false;
        };
        seq_lt(last, newest) && self.covering(head_end).is_some_and(|v| v.tsval != 0 && !seq_lt(echo, v.tsval))
    }

    /// Receiver vantage: the phone sent a DupACK (or a SACK) shortly before. The sender
    /// answers one within about one RTT, plus a RACK reorder window or probe timer; both are
    /// clocked in ticks, so allow one timer tick beyond 2 RTTs.
    #[inline]
    fn recent_dupack(&self, x: &Ctx, s: i64, ts: Nanos) -> bool {
        let window = x.rtt.est.rto().map(|r| (2 * x.rtt.est.srtt.unwrap_or(0)).max(r) + TIMER_TICK);
        match (self.last_dupack_ts, window) {
            (Some(t), Some(w)) => ts - t <= w,
            (Some(_), None) => {
                self.dupacks_since_advance > 0 || (self.sack_high > s && self.sack_high > self.una)
            }
            _ => false,
        }
    }

    /// An ACK from the peer, after its window ([`Self::on_window`]). `pure`: no payload, no
    /// SYN/FIN/RST. `sack`: relative SACK blocks. `stamps`: its (TSval, TSecr).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn on_ack(
        &mut self,
        x: &mut Ctx,
        a: i64,
        ts: Nanos,
        window: u16,
        pure: bool,
        sack: &[(i64, i64)],
        stamps: Option<(u32, u32)>,
    ) {
        if !self.ack_seen {
            self.first_ack(a, ts, window);
            return;
        }
        let (tsval, tsecr) = (stamps.map(|t| t.0), stamps.map(|t| t.1));
        if let Some(v) = tsval.filter(|_| x.vantage != DataVantage::Sender) {
            self.heard.on_ack(v, !sack.is_empty() || a < self.nxt);
        }
        if pure {
            self.c.pure_acks += 1;
        }
        self.tx.note_ack_after_timeout();
        self.note_sack(sack, a, ts);
        if let Some((l, r)) = dsack(sack, a) {
            self.c.dsack_blocks += 1;
            self.on_dsack(x, l, r, ts, tsecr);
        }
        if a > self.una {
            self.advance(x, a, ts, tsval, tsecr);
        } else if a == self.una && pure && window == self.last_ack_window {
            self.duplicate_ack(x, a, ts);
        }
        self.ack_done(x.first_ts, x.vantage, ts, window);
    }

    /// Whether an ACK at `a` with `window` repeats the last one (ACK number and window): what
    /// nearly every data segment of a bulk transfer carries in its ACK field.
    #[inline]
    pub fn repeats_last_ack(&self, a: i64, window: u16) -> bool {
        self.ack_seen && a == self.una && window == self.last_ack_window
    }

    /// [`Self::on_ack`] for an ACK that [`Self::repeats_last_ack`], carries no SACK block and
    /// is not pure: of its steps only the bookkeeping of the last ACK applies (no advance,
    /// no DupACK, no D-SACK), so it needs no [`Ctx`].
    #[inline]
    pub fn on_repeated_ack(&mut self, first_ts: Nanos, vantage: DataVantage, ts: Nanos, window: u16) {
        self.tx.note_ack_after_timeout();
        self.ack_done(first_ts, vantage, ts, window);
    }

    /// The advertised window of an ACK, the first step of each: its statistics, per bin, and
    /// a closed window.
    #[inline]
    pub fn on_window(&mut self, first_ts: Nanos, dir: Dir, ts: Nanos, window: u16, shift: Option<u8>, ev: &mut Vec<Event>) {
        if self.win.repeats(window, shift) && self.win_repeats.covers(ts) {
            self.win_repeats.n += 1;
            return;
        }
        self.window_sample(first_ts, dir, ts, window, shift, ev);
    }

    /// [`Self::on_window`] for a window that is not a repeat in the same bin (kept out of
    /// line: the repeat test is what nearly every segment runs).
    #[inline(never)]
    fn window_sample(&mut self, first_ts: Nanos, dir: Dir, ts: Nanos, window: u16, shift: Option<u8>, ev: &mut Vec<Event>) {
        self.fold_window_repeats();
        if let Some(w) = self.win.on_window(window, shift, ts, dir, ev) {
            let bin = self.bins.awnd(first_ts, ts, w);
            self.win_repeats.span = Bins::span(first_ts, bin);
            self.win_repeats.bin = bin;
        }
        if window == 0 {
            self.rx.closed_since = true;
        }
    }

    /// Adds the repeated windows counted since the last full sample (same window, same bin).
    #[inline]
    fn fold_window_repeats(&mut self) {
        let r = &mut self.win_repeats;
        if r.n > 0 {
            self.win.add_repeats(r.n);
            if let Some(w) = self.win.awnd() {
                self.bins.awnd_repeats(r.bin, w, r.n);
            }
            r.n = 0;
        }
    }

    /// The last step of every ACK after the first: it becomes the last ACK, and at the
    /// sender the bytes in flight are sampled.
    #[inline]
    fn ack_done(&mut self, first_ts: Nanos, vantage: DataVantage, ts: Nanos, window: u16) {
        self.last_ack_ts = ts;
        self.last_ack_window = window;
        if vantage == DataVantage::Sender {
            self.sample_in_flight(first_ts, ts);
        }
    }

    #[inline]
    fn first_ack(&mut self, a: i64, ts: Nanos, window: u16) {
        self.ack_seen = true;
        self.una = a;
        self.last_ack_ts = ts;
        self.last_advance_ts = ts;
        self.last_ack_window = window;
        if self.started {
            self.store.prune_below(a);
        }
        self.raise_seen_to(a);
    }

    /// A SACK block above the cumulative ACK is a loss signal like a DupACK.
    #[inline]
    fn note_sack(&mut self, sack: &[(i64, i64)], a: i64, ts: Nanos) {
        for &(l, r) in sack.iter() {
            if l >= a {
                self.last_dupack_ts = Some(ts);
                if r > self.sack_high {
                    self.sack_high = r;
                }
            }
        }
    }

    /// The cumulative ACK advanced to `a`: acked bytes (goodput, M15's congestion-avoidance
    /// denominators), Karn RTT (M7), the end of a timeout sequence (M10) and of recoveries.
    #[inline]
    fn advance(&mut self, x: &mut Ctx, a: i64, ts: Nanos, tsval: Option<u32>, tsecr: Option<u32>) {
        let adv = a - self.una;
        let tsecr_low = if x.vantage == DataVantage::Sender { 0 } else { self.heard.on_advance(a >= self.nxt) };
        let out = self.advances[self.adv_next];
        if out.ts != 0 {
            self.evicted_ack = Some(out.ack); // advances only grow: the newest evicted is the highest
        }
        self.advances[self.adv_next] = Advance { ack: a, ts, tsval: tsval.unwrap_or(0), tsecr_low };
        self.adv_next = (self.adv_next + 1) % self.advances.len();
        self.c.acked_bytes += adv as u64;
        if self.tx.open_state() {
            self.c.advancing_acks_ca += 1;
            self.c.acked_bytes_ca += adv as u64;
        }
        self.bins.at(x.first_ts, ts).goodput += adv as u64;
        if x.vantage != DataVantage::Receiver {
            self.karn_sample(x, a, ts);
        }
        self.end_timeout_at(x, a, ts, tsecr);
        if self.last_retx_ts > self.acked_retx_ts {
            if let Some(t) = self.store.latest_resend_below(a) {
                self.acked_retx_ts = self.acked_retx_ts.max(t);
            }
        }
        self.una = a;
        if a > self.nxt {
            self.nxt = a; // the capture missed data the peer has (capture loss)
        }
        self.store.prune_below(a);
        self.raise_seen_to(a);
        if self.nxt > a && x.vantage == DataVantage::Receiver {
            self.rx.trigger(a, ts); // a partial ACK
        }
        self.dupacks_since_advance = 0;
        self.last_advance_ts = ts;
        self.tx.on_advance(a);
    }

    /// The same ACK number and window again, no payload: a DupACK (M15) when data beyond it
    /// was seen; at the receiver with nothing seen beyond it, a candidate decided by the next
    /// data (`settle_pending_dupacks`).
    #[inline]
    fn duplicate_ack(&mut self, x: &mut Ctx, a: i64, ts: Nanos) {
        if self.nxt > a {
            self.c.dupacks += 1;
            self.dupacks_since_advance += 1;
            if x.vantage == DataVantage::Receiver {
                // any DupACK may be the one that makes the sender re-send: ACKs before it
                // may be lost, and Linux raises the threshold after reordering
                self.rx.trigger(a, ts);
            }
            self.last_dupack_ts = Some(ts);
            self.bins.at(x.first_ts, ts).dupacks += 1;
        } else if x.vantage == DataVantage::Receiver && !self.win.probing() {
            self.rx.trigger(a, ts); // a DupACK if the sender had data outstanding
            // the phone saw nothing beyond its ACK (answering a repeat): whether the sender
            // had data outstanding shows with the next data (not for the answers to window
            // probes: a Linux sender probes only with nothing in flight)
            self.rx.hold_dupack(ts);
        }
    }

    /// Bytes in flight at each ACK (M17), sender vantage.
    #[inline]
    fn sample_in_flight(&mut self, first_ts: Nanos, ts: Nanos) {
        if let Some(b) = self.in_flight() {
            self.c.bif_max = self.c.bif_max.max(b);
            self.c.bif_sum += b as f64;
            self.c.bif_n += 1;
            self.bins.bif(first_ts, ts, b);
        }
    }

    /// End of the connection: close what is still open.
    pub fn finish(&mut self, x: &mut Ctx, end: Nanos) {
        self.fold_window_repeats();
        self.rx.close_spurious(x, &mut self.c);
        self.finish_timeout(x, end);
        self.win.finish(x.dir, x.ev);
    }
}
