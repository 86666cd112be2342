//! One direction of data and the ACKs that answer it: retransmission classification
//! (analyzers.md §3.4), reordering and network duplicates told apart from retransmissions
//! (Tstat's out-of-sequence taxonomy, with the flow's own RTT/TSval/IP-ID instead of WAN
//! floors), DupACKs (M15), bytes in flight (M17), RTT by ACK matching with Karn's rule (M7),
//! timeout sequences (M10) and the sender-side spurious tests (D-SACK, Eifel; M12/M13/M16).
//!
//! Vantage matters (analyzers.md §3): `vantage` says whether the capture sits at this
//! direction's sender, at its receiver, or is unknown.

use crate::flow::event::{Dir, Event, EventKind};
use crate::flow::rtt_sample::RttMethod;
use crate::flow::seq::seq_lt;
use crate::wire::Nanos;

use super::kinds::{DataVantage, RetransClass, SpuriousMethod};
use super::rtt::RttBook;
use super::series::Bins;
use super::spurious::{dsack, RecentRetx, RecentRing};
use super::store::{Overlap, Prior, Store};
use super::timeout::{EpisodeMark, Recovery, RecoveryKind, SenderTimer, TimeoutSeq};
use super::window::WindowStats;

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
    /// M13 numerator: retransmitted segments of spurious RTO episodes.
    pub spurious_rto_segments: u64,
    pub rto_bias_sum: f64,
    pub rto_bias_n: u64,
    pub bif_max: u64,
    pub bif_sum: f64,
    pub bif_n: u64,
}

/// Receiver-side spurious-timeout episode: duplicates of RTO type arriving back to back.
struct RxSpurious {
    start: Nanos,
    last: Nanos,
    seq_start: i64,
    seq_end: i64,
    segments: u32,
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
    tlp_since_advance: bool,
    max_tsval: Option<u32>,
    max_ip_id: Option<u16>,
    ipid_inc: u32,
    ipid_other: u32,
    fr: Option<Recovery>,
    rto_ep: Option<Recovery>,
    tseq: Option<TimeoutSeq>,
    /// The sender's own RTO as far as the capture shows it (sender vantage).
    timer: SenderTimer,
    episodes: u32,
    marks: [EpisodeMark; 4],
    recent: RecentRing,
    rx_spur: Option<RxSpurious>,
    /// Recent cumulative-ACK advances (ack, time), to date the original of a repeat whose
    /// records were already pruned below the ACK.
    advances: [(i64, Nanos); 32],
    adv_next: usize,
    /// Receiver side: a timeout recovery is under way until data beyond this arrives.
    rx_rto_point: Option<i64>,
    /// Receiver side: new data arrived after a suspension; the next hole is the data lost
    /// during it, and its fills belong to the timeout recovery.
    after_silence: bool,
    rx_silence_hole: Option<(i64, i64)>,
    /// Receiver side, senders whose IP IDs count up: the newest original (IP ID, end, arrival),
    /// the IP ID of the first re-sent segment seen after it and
    /// how many segments with later IDs arrived since (see `unseen_original`).
    rx_orig: Option<(u16, i64, Nanos)>,
    rx_first_retx: Option<u16>,
    rx_seen_after: u16,
    /// Receiver side: segments counted as re-sends of unseen originals since that original
    /// (each missing ID pays for one, whatever the segments' sizes).
    rx_unseen_counted: u16,
    /// Receiver side: the highest IP ID of any data seen (a reordered packet may arrive
    /// before the originals with lower IDs: its ID is then not missing after them).
    rx_id_high: Option<u16>,
    /// Receiver side: arrival of the latest data segment.
    rx_last_data: Nanos,
    /// Receiver side: arrival of the first data after a silence of the RTO scale since the
    /// newest original (a timeout's go-back-N burst begins).
    rx_burst: Option<Nanos>,
    /// Receiver side: the window was closed since the newest original (the sender's empty
    /// probes take IP IDs too: missing IDs then say nothing about data).
    rx_closed_since: bool,
    /// Receiver side: when the phone last sent an ACK that makes a Reno sender re-send (the
    /// third DupACK since an advance, or an advance with data beyond it: a partial ACK).
    rx_trigger_ts: Nanos,
    /// Receiver side: the ACK number of that ACK, and when the phone last sent such an ACK
    /// for another ACK number (the sender may have re-sent those older bytes too).
    rx_trigger_ack: i64,
    rx_other_trigger_ts: Nanos,
    /// Receiver side: pure ACKs repeating the ACK number and window with nothing seen
    /// beyond it (count, first send time), waiting for the next data to tell whether the
    /// sender had data outstanding (RFC 5681 DupACK condition (a)).
    rx_pending_dup: (u32, Nanos),
    pub win: WindowStats,
    pub bins: Bins,
    pub c: Counts,
    /// Largest payload seen (MSS fallback).
    pub max_payload: u32,
}

impl Stream {
    /// Receiver side: DupACK candidates waiting for the next data to be decided.
    pub fn pending_dupacks(&self) -> u32 {
        self.rx_pending_dup.0
    }

    fn rto_threshold(rtt: &RttBook) -> Nanos {
        match rtt.est.rto() {
            Some(r) => (r * RTO_FRACTION_NUM / RTO_FRACTION_DEN).max(MIN_TIMER_RTO),
            None => RTO_THRESHOLD_NO_RTT,
        }
    }

    /// Bytes sent and not cumulatively acknowledged (M17), if both are known.
    pub fn in_flight(&self) -> Option<u64> {
        (self.started && self.ack_seen).then(|| (self.nxt - self.una).max(0) as u64)
    }

    pub fn una_opt(&self) -> Option<i64> {
        self.ack_seen.then_some(self.una)
    }

    fn mark(&mut self, id: u32) -> &mut EpisodeMark {
        &mut self.marks[id as usize % self.marks.len()]
    }

    fn ipid_monotone(&self) -> bool {
        self.ipid_inc >= 8 && self.ipid_inc >= 9 * self.ipid_other
    }

    /// A data segment [s, e) of this direction (payload only). `mss`: the segment size that
    /// turns bytes into packets (MSS, or the largest payload seen); only data needs it, so
    /// it is not in the [`Ctx`] every ACK builds.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn on_data(
        &mut self,
        x: &mut Ctx,
        s: i64,
        e: i64,
        ts: Nanos,
        tsval: Option<u32>,
        ip_id: Option<u16>,
        peer_zero_window: bool,
        mss: i64,
    ) {
        let len = e - s;
        self.c.data_segments += 1;
        self.max_payload = self.max_payload.max(len as u32);
        if !self.started {
            self.started = true;
            self.nxt = e;
            self.store.add(s, e, ts, tsval.unwrap_or(0), ip_id, false);
            self.note_order(tsval, ip_id);
            return;
        }
        if peer_zero_window {
            self.rx_closed_since = true;
        }
        // Zero-window probe (RFC 9293 §3.8.6.1): ≤ 1 byte against a closed window.
        if peer_zero_window && len <= 1 {
            self.window_probe(x, s, e, ts, "one_byte");
            if e > self.nxt {
                self.nxt = e;
            }
            return;
        }
        let merge = x.vantage != DataVantage::Sender;
        if x.vantage == DataVantage::Receiver {
            if ts - self.rx_last_data >= Self::rto_threshold(x.rtt) {
                self.rx_burst = Some(ts);
            }
            self.rx_last_data = ts;
        }
        // duplicates of one timeout come back within about one RTO scale (go-back-N, paced
        // re-sends of what the timeout marked lost); after a longer pause the receiver-side
        // spurious episode is over
        let gap = x.rtt.est.rto().map_or(TIMER_TICK, |r| {
            (2 * x.rtt.est.srtt.unwrap_or(0)).max(r) + TIMER_TICK
        });
        if self.rx_spur.as_ref().is_some_and(|r| ts - r.last > gap) {
            self.close_rx_spurious(x);
        }
        let (kind, prior) = if self.ack_seen && e <= self.una {
            // wholly below the cumulative ACK: a repeat of acknowledged bytes, last seen
            // before the first ACK that covered them (if still remembered)
            let covered = self
                .advances
                .iter()
                .filter(|&&(a, t)| t != 0 && a >= e)
                .map(|&(_, t)| t)
                .min();
            let seen = covered.unwrap_or(ts);
            (
                Overlap::Repeat,
                Prior {
                    first_ts: seen,
                    last_ts: seen,
                    ..Default::default()
                },
            )
        } else {
            let s2 = if self.ack_seen { s.max(self.una) } else { s };
            self.store.add(s2, e, ts, tsval.unwrap_or(0), ip_id, merge)
        };
        if let Overlap::New { .. } = kind {
            if x.vantage == DataVantage::Receiver {
                let resent = self.unseen_original(x, s, e, ts, ip_id);
                self.settle_pending_dupacks(x, resent);
                if resent {
                    self.nxt = e;
                    let prior = Prior { first_ts: ts, last_ts: ts, ..Default::default() };
                    self.retransmission(x, s, e, ts, tsval, ip_id, kind, &prior);
                    if let Some(ev) = x.ev.last_mut() {
                        ev.cause = Some("unseen_original");
                        ev.value = None;
                    }
                    return;
                }
            }
            // judged against the highest byte seen: the store may be empty after pruning
            let gap = s > self.nxt;
            if self.rx_rto_point.is_some_and(|p| s >= p) {
                self.rx_rto_point = None;
            }
            if x.after_silence {
                self.after_silence = true;
            } else if self.after_silence && gap {
                // data lost during a silence, re-sent by the timeout recovery that ended it
                self.rx_silence_hole = Some((self.nxt, s));
                self.after_silence = false;
            }
            self.nxt = e;
            self.note_order(tsval, ip_id);
            let una = self.una_opt();
            let q = 1i64 << x.peer_shift;
            self.win.on_new_data(s, e, una, q, mss, ts, x.dir, x.ev);
            return;
        }
        if e > self.nxt {
            self.nxt = e;
        }
        if x.vantage == DataVantage::Receiver {
            if let Some(id) = ip_id {
                if self.rx_id_high.is_none_or(|h| (id.wrapping_sub(h) as i16) > 0) {
                    self.rx_id_high = Some(id);
                }
            }
            if let (Some((o, _, _)), Some(id)) = (self.rx_orig, ip_id) {
                if (id.wrapping_sub(o) as i16) > 0 {
                    self.rx_seen_after = self.rx_seen_after.saturating_add(1);
                    if self.rx_first_retx.is_none() {
                        self.rx_first_retx = Some(id);
                    }
                }
            }
        }
        if x.vantage == DataVantage::Unknown && matches!(kind, Overlap::Repeat | Overlap::Fill) {
            // Loss pattern: a sender-side capture sees the originals of what it re-sends
            // (repeats); a receiver-side capture mostly sees holes being filled.
            x.vantage = if kind == Overlap::Repeat { DataVantage::Sender } else { DataVantage::Receiver };
            x.decided = x.vantage;
        }
        match kind {
            Overlap::Repeat
                if x.vantage == DataVantage::Receiver && self.is_late_original(s, tsval, ip_id) =>
            {
                self.c.reordering += 1;
                let mut ev = Event::on_bytes(EventKind::Reordering, ts, x.dir, s, e);
                ev.class = Some("late_original");
                ev.value = Some((ts - prior.last_ts) as f64 * 1e-9);
                x.ev.push(ev);
                // the original arrived after all: the re-send that overtook it was not needed
                // (the phone saw two copies, one sent as a re-send); once per re-send
                if let Some(r) = self.recent.claim_latest_at(s) {
                    self.c.unnecessary += 1;
                    let mut ev = Event::on_bytes(EventKind::SpuriousRetransmission, ts, x.dir, r.start, r.end);
                    ev.class = Some(SpuriousMethod::Receiver.as_str());
                    ev.cause = Some(r.class.as_str());
                    x.ev.push(ev);
                }
                return;
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
                    return;
                }
            }
            Overlap::Fill
                if !(x.vantage == DataVantage::Receiver && self.sent_after_later_data(e, tsval, ip_id))
                    && self.is_reordering(x, ts, tsval, ip_id, &prior) =>
            {
                self.c.reordering += 1;
                let mut ev = Event::on_bytes(EventKind::Reordering, ts, x.dir, s, e);
                ev.value = prior.hole_seen_ts.map(|h| (ts - h) as f64 * 1e-9);
                x.ev.push(ev);
                return;
            }
            _ => {}
        }
        self.retransmission(x, s, e, ts, tsval, ip_id, kind, &prior);
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
            self.rx_closed_since = true;
            self.window_probe(x, seq, seq, ts, "empty");
        }
    }

    fn window_probe(&mut self, x: &mut Ctx, s: i64, e: i64, ts: Nanos, class: &'static str) {
        self.c.zero_window_probes += 1;
        let mut ev = Event::on_bytes(EventKind::WindowProbe, ts, x.dir, s, e);
        ev.class = Some(class);
        x.ev.push(ev);
    }

    /// Receiver side: whether data arriving beyond everything seen is in fact a re-send
    /// whose original never arrived. The sender numbers its packets (IP IDs counting up) and
    /// sends new data in sequence order, so the packet after the newest original P is the
    /// next original unless it is a re-send. When the IDs right after P are missing and the
    /// first packet seen after them is a re-send (the sender is recovering), and then data
    /// arrives exactly at the highest byte with every hole filled, within the RTO scale of P
    /// (fast recovery: a NewReno partial ACK answered, or the go-back-N copies of it), the
    /// missing IDs were the originals of that data and it is their re-send. At most as many
    /// segments as IDs are missing. After a silence the missing IDs may as well be a lost
    /// timeout re-send (spurious, after ACK loss): not judged (docs/engine.md, known limits).
    fn unseen_original(&mut self, x: &Ctx, s: i64, e: i64, ts: Nanos, ip_id: Option<u16>) -> bool {
        let Some(id) = ip_id else { return false };
        if !self.ipid_monotone() {
            self.rx_orig = Some((id, e, ts));
            self.rx_first_retx = None;
            return false;
        }
        if let Some((o, end, t_o)) = self.rx_orig {
            let thr = Self::rto_threshold(x.rtt);
            let in_burst = |st: &Self, t_b: Nanos| {
                !st.rx_closed_since && ts - t_b < thr && t_b - t_o >= thr && s == st.nxt
            };
            let mut unjudged = false;
            // (IDs missing, segments already counted against them)
            let (missing, paid) = match (self.rx_first_retx, self.rx_burst) {
                // fast recovery right after P: the IDs missing before the first re-send, each
                // paying for one segment (a short re-send left room for new data within
                // `missing` segments of P: a live run counted 174 against 173). Only when the
                // phone's ACKs since two SRTTs before P asked for one hole only: DupACKs for
                // older bytes may have made the sender re-send those too, and that lost re-send
                // is then the missing ID (a live run: DupACKs for 2979781, then the hole
                // 2981241; ID 6122, lost, re-sent 2979781; 65 counted against 64): undecided
                (Some(f), _) if ts - t_o < thr && (id.wrapping_sub(f) as i16) > 0 => {
                    let m = (f.wrapping_sub(o) as i16) as i64 - 1 - self.rx_unseen_counted as i64;
                    let one_hole = x.rtt.est.srtt.is_some_and(|r| self.rx_other_trigger_ts < t_o - 2 * r);
                    if !one_hole {
                        if m >= 1 && s == self.nxt && self.ack_seen && self.una >= self.nxt && s < end + (m + self.rx_unseen_counted as i64) * self.max_payload as i64 {
                            self.c.undecided += 1;
                            self.rx_unseen_counted = self.rx_unseen_counted.saturating_add(1);
                            self.rx_seen_after = self.rx_seen_after.saturating_add(1);
                            return false;
                        }
                        (0, 0)
                    } else {
                        ((f.wrapping_sub(o) as i16) as i64 - 1, self.rx_unseen_counted as i64)
                    }
                }
                // the go-back-N burst of a timeout: every ID after P never seen is an
                // original of the data after P unless it was a lost re-send; a Reno sender
                // re-sends only at the third DupACK, at a partial ACK or at the timeout (the
                // burst), and the phone sent no such ACK from one RTT before P's arrival on
                (_, Some(t_b))
                    if !self.rx_closed_since
                        && ts - t_b < thr
                        && t_b - t_o >= thr
                        && x.rtt.est.rto().is_some_and(|r| t_b - t_o < 2 * r)
                        && x.rtt.est.srtt.is_some_and(|r| self.rx_trigger_ts < t_o - 2 * r) =>
                {
                    ((id.wrapping_sub(o) as i16) as i64 - 1 - self.rx_seen_after as i64, 0)
                }
                // the same burst after an ACK that may have made the sender re-send: each
                // missing ID may have been that lost re-send or an original of the data
                // after P, and no capture at the phone says which (docs/engine.md, "What a
                // receiver-side capture cannot tell"): counted as undecided, not as a
                // retransmission, at most as many segments as IDs are missing
                (_, Some(t_b)) if in_burst(self, t_b) => {
                    let m = (id.wrapping_sub(o) as i16) as i64 - 1 - self.rx_seen_after as i64;
                    if m >= 1
                        && self.ack_seen
                        && self.una >= self.nxt
                        && s < end + m * self.max_payload as i64
                    {
                        self.c.undecided += 1;
                        self.rx_seen_after = self.rx_seen_after.saturating_add(1);
                        return false;
                    }
                    (0, 0)
                }
                _ => {
                    unjudged = true;
                    (0, 0)
                }
            };
            if missing - paid >= 1
                && s == self.nxt
                && self.ack_seen
                && self.una >= self.nxt
                && s < end + missing * self.max_payload as i64
            {
                self.rx_seen_after = self.rx_seen_after.saturating_add(1);
                self.rx_unseen_counted = self.rx_unseen_counted.saturating_add(1);
                return true;
            }
            // No rule above judged this arrival (outside their time windows: a lab run, SACK
            // and timestamps on, where a timeout's TSval echo inflated the RTO scale). The
            // sender was re-sending since P (the first packet after it was a re-send), so an
            // ID after P never seen may have been the original of this data or a lost re-send
            // of older bytes: undecided, at most as many segments as IDs are missing
            // (docs/engine.md, "What a receiver-side capture cannot tell")
            let m = (id.wrapping_sub(o) as i16) as i64 - 1 - self.rx_seen_after as i64;
            if unjudged
                && self.rx_first_retx.is_some()
                && !self.rx_closed_since
                && m >= 1
                && s == self.nxt
                && self.ack_seen
                && s < end + m * self.max_payload as i64
            {
                self.c.undecided += 1;
                self.rx_seen_after = self.rx_seen_after.saturating_add(1);
                return false;
            }
        }
        // IDs up to the highest seen are not missing after P
        let floor = match self.rx_id_high {
            Some(h) if (h.wrapping_sub(id) as i16) > 0 => h,
            _ => id,
        };
        self.rx_id_high = Some(floor);
        self.rx_orig = Some((floor, e, ts));
        self.rx_first_retx = None;
        self.rx_seen_after = 0;
        self.rx_unseen_counted = 0;
        self.rx_burst = None;
        self.rx_closed_since = false;
        false
    }

    /// Receiver side: the phone sent an ACK (number `a`) that can make a Reno sender re-send.
    fn rx_trigger(&mut self, a: i64, ts: Nanos) {
        if a != self.rx_trigger_ack {
            self.rx_other_trigger_ts = self.rx_trigger_ts;
            self.rx_trigger_ack = a;
        }
        self.rx_trigger_ts = ts;
    }

    /// Receiver side: decide the pending DupACK candidates when data beyond their ACK number
    /// arrives. They were DupACKs if that data was sent before they reached the sender,
    /// which the phone knows only when it is a re-send (its original went out before).
    /// How soon new data arrives proves nothing: it was sent before the ACK arrived iff it
    /// arrived sooner than that ACK's way up plus its own way down, and one ACK may be
    /// fast (live runs: an ACK 5 us up against 36-46 us for its neighbours, the next data
    /// 31 us after it; a lost ACK, the data 26 us after it, sent after the ACK sent just
    /// before it arrived). The rule of half an SRTT counted both (issue 30 item 1).
    fn settle_pending_dupacks(&mut self, x: &Ctx, resent: bool) {
        let (n, t0) = self.rx_pending_dup;
        if n == 0 {
            return;
        }
        self.rx_pending_dup = (0, 0);
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
    fn is_reordering(
        &self,
        x: &Ctx,
        ts: Nanos,
        tsval: Option<u32>,
        ip_id: Option<u16>,
        prior: &Prior,
    ) -> bool {
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

    #[allow(clippy::too_many_arguments)]
    fn retransmission(
        &mut self,
        x: &mut Ctx,
        s: i64,
        e: i64,
        ts: Nanos,
        tsval: Option<u32>,
        ip_id: Option<u16>,
        kind: Overlap,
        prior: &Prior,
    ) {
        // a timeout recovery the receiver already saw needed (its first re-send filled a hole)
        let genuine_recovery = self.rx_rto_point.is_some() && self.rx_spur.is_none();
        let class = match x.vantage {
            DataVantage::Sender => self.sender_class(x, s, e, ts, tsval, prior),
            DataVantage::Receiver => {
                self.receiver_class(x, s, e, ts, ts - prior.last_ts, kind == Overlap::Repeat)
            }
            DataVantage::Unknown => RetransClass::Unclassified,
        };
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
        let episode = if class == RetransClass::Rto {
            self.rto_ep.map(|r| r.id)
        } else {
            None
        };
        self.recent.push(RecentRetx {
            start: s,
            end: e,
            ts,
            class,
            episode,
            attributed: false,
            tsval,
            ip_id,
        });
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
            if class == RetransClass::Rto && !genuine_recovery {
                match self.rx_spur.as_mut() {
                    Some(r) => {
                        r.segments += 1;
                        r.last = ts;
                        r.seq_start = r.seq_start.min(s);
                        r.seq_end = r.seq_end.max(e);
                    }
                    None => {
                        self.rx_spur = Some(RxSpurious {
                            start: ts,
                            last: ts,
                            seq_start: s,
                            seq_end: e,
                            segments: 1,
                        })
                    }
                }
            } else {
                let mut ev = Event::on_bytes(EventKind::SpuriousRetransmission, ts, x.dir, s, e);
                ev.class = Some(SpuriousMethod::Receiver.as_str());
                ev.cause = Some(class.as_str());
                x.ev.push(ev);
            }
        }
    }

    /// Sender vantage (analyzers.md §3.4): inside an RTO episode everything is RTO recovery;
    /// DupACK/SACK evidence answered within the RTO scale is a fast retransmit (the first of
    /// an episode) or a SACK hole refill; a lone re-send of the highest segment with more
    /// outstanding and no loss evidence is a tail-loss probe; everything else is an RTO.
    fn sender_class(
        &mut self,
        x: &mut Ctx,
        s: i64,
        e: i64,
        ts: Nanos,
        tsval: Option<u32>,
        prior: &Prior,
    ) -> RetransClass {
        let idle = if self.ack_seen {
            ts - self.last_ack_ts
        } else {
            Nanos::MAX
        };
        // The sender's own timer cannot have fired before its RTO ran out. It was armed no
        // earlier than the last advancing ACK in a recovery (Linux re-arms it there; no
        // probe timer), and in the open state no earlier than that or the head's last
        // transmission (Linux measures from the head after a probe timer): before 3/4 of
        // that RTO, nothing is timer-driven (issue 30: paced ACK-clocked re-sends after a
        // stall were taken for timeouts the kernel never had).
        let since_armed = if !self.ack_seen {
            Nanos::MAX
        } else if self.fr.is_some() || self.rto_ep.is_some() {
            ts - self.last_advance_ts
        } else {
            ts - prior.last_ts.min(self.last_advance_ts)
        };
        let timer_early = self
            .timer
            .rto()
            .is_some_and(|r| since_armed < r * RTO_FRACTION_NUM / RTO_FRACTION_DEN);
        let thr = if timer_early {
            Nanos::MAX / 4
        } else {
            Self::rto_threshold(x.rtt)
        };
        if let Some(ep) = self.rto_ep {
            match self.tseq.as_mut() {
                Some(t) if ep.id == t.id => {
                    t.retransmissions += 1;
                    t.last_retx = ts;
                    if !t.ack_seen_after {
                        t.retx_before_ack += 1;
                    }
                    if s <= t.seg_start && e > t.seg_start {
                        // the timed-out segment again: one more (backed-off) timeout
                        t.timeouts += 1;
                        t.repeated += 1;
                        self.timer.expired(ts - prior.last_ts);
                        let id = t.id;
                        self.mark(id).head_resends += 1;
                    }
                    return RetransClass::Rto;
                }
                // The sequence ended but the recovery goes on: ACK-clocked re-sends are part
                // of it; the oldest outstanding data re-sent after a silence is a new timeout.
                _ if !(s <= self.una && idle >= thr + TIMER_TICK) => return RetransClass::Rto,
                _ => {}
            }
        }
        // Without SACK a recovery re-sends a segment once more only on a partial ACK, which
        // advances: a copy again with no advance since the last one is the timer's, however
        // close to a DupACK (issue 35, audit run 002: a needed RTO re-send 5 ms after a DupACK
        // was taken for a fast one, and its needless back-off for the sequence's first).
        let timer_resend =
            !x.sack && self.fr.is_some() && prior.max_tx >= 2 && self.last_advance_ts <= prior.last_ts && !timer_early;
        let evidence = !timer_resend
            && (self.dupacks_since_advance > 0 || (self.sack_high > s && self.sack_high > self.una));
        // Loss evidence answered within the RTO scale: SACK/DupACK-driven recovery, sent at
        // once (RFC 5681/6675) or after a RACK reorder timer or probe (RFC 8985), which are
        // clocked in ticks: one tick of grace. Later than that the retransmission timer fired.
        let _ = prior;
        if (evidence || self.fr.is_some()) && idle < thr + TIMER_TICK && !timer_resend {
            return match self.fr {
                None => {
                    self.episodes += 1;
                    self.fr = Some(Recovery {
                        kind: RecoveryKind::Fast,
                        point: self.nxt,
                        id: self.episodes,
                    });
                    RetransClass::Fast
                }
                Some(_) if x.sack && s > self.una => RetransClass::SackRefill,
                Some(_) => RetransClass::Fast,
            };
        }
        // A copy of the newest data with no loss signal and no recovery under way: the tail
        // loss probe (RFC 8985), at most one per advance. With SACK this holds also when the
        // newest segment is the only one outstanding: Linux then delays the probe to about
        // the RTO (PTO = 2·SRTT + 200 ms, capped at the RTO timer) but sends it as a probe,
        // not a timeout (issue 30: total_rto 0 against one "timeout"). Later than that PTO
        // the probe would have gone already: the timer's. Without SACK Linux sends no probe.
        let lone_probe = x.sack
            && x.rtt
                .est
                .srtt
                .is_some_and(|r| ts - prior.last_ts <= 2 * r + LONE_PROBE_EXTRA + TIMER_TICK);
        if !evidence && e >= self.nxt && (s > self.una || lone_probe) && !self.tlp_since_advance {
            self.tlp_since_advance = true;
            return RetransClass::Tlp;
        }
        if idle < thr && !timer_resend {
            // no loss signal, yet too soon after an ACK for any timer: the tail of a fast
            // recovery that just ended (the sender's recovery point lies beyond ours, or
            // RACK marked the bytes lost by time). No RTO episode is open here (that case
            // returned above), so it is not a timeout's.
            return RetransClass::Fast;
        }
        // RTO: open the episode and its timeout sequence
        self.fr = None;
        self.episodes += 1;
        let id = self.episodes;
        self.rto_ep = Some(Recovery {
            kind: RecoveryKind::Rto,
            point: self.nxt,
            id,
        });
        let armed = prior.last_ts.max(if self.ack_seen {
            self.last_advance_ts
        } else {
            prior.last_ts
        });
        self.timer.expired(ts - armed);
        self.tseq = Some(TimeoutSeq {
            id,
            armed,
            first_retx: ts,
            first_tsval: tsval,
            seg_start: s,
            seg_end: e,
            timeouts: 1,
            retransmissions: 1,
            retx_before_ack: 1,
            ack_seen_after: false,
            repeated: 0,
            last_retx: ts,
        });
        *self.mark(id) = EpisodeMark {
            id,
            first_retx: ts,
            first_tsval: tsval,
            head_resends: 1,
            retx_before_ack: 1,
            ..Default::default()
        };
        RetransClass::Rto
    }

    /// Receiver vantage: the receiver's own DupACKs (or SACKs above the bytes) shortly before
    /// mean the sender recovered fast; without them the sender's timer fired.
    fn receiver_class(
        &mut self,
        x: &mut Ctx,
        s: i64,
        e: i64,
        ts: Nanos,
        since_prev: Nanos,
        repeat: bool,
    ) -> RetransClass {
        // The sender answers a DupACK/SACK within about one RTT, plus a RACK reorder window
        // or probe timer; both are clocked in ticks, so allow one timer tick beyond 2 RTTs.
        let window = x
            .rtt
            .est
            .rto()
            .map(|r| (2 * x.rtt.est.srtt.unwrap_or(0)).max(r) + TIMER_TICK);
        let recent_dupack = match (self.last_dupack_ts, window) {
            (Some(t), Some(w)) => ts - t <= w,
            (Some(_), None) => {
                self.dupacks_since_advance > 0 || (self.sack_high > s && self.sack_high > self.una)
            }
            _ => false,
        };
        let in_silence_hole = self.rx_silence_hole.is_some_and(|(a, b)| s >= a && s < b);
        // A repeat of bytes that arrived more than ~2 RTTs (plus a timer tick) earlier: a
        // DupACK-driven re-send would have come one RTT after the receiver asked, and it
        // asked before the original arrived; only a timer waits that long.
        let late_repeat = repeat
            && x.rtt
                .est
                .srtt
                .is_some_and(|r| since_prev >= 2 * r + TIMER_TICK);
        if self.rx_spur.is_some() || self.rx_rto_point.is_some() || in_silence_hole {
            // the rest of a timeout recovery (go-back-N / slow start after the RTO)
            RetransClass::Rto
        } else if recent_dupack && !late_repeat {
            if x.sack && s > self.una {
                RetransClass::SackRefill
            } else {
                RetransClass::Fast
            }
        } else if e >= self.nxt
            && x.rtt
                .est
                .srtt
                .is_none_or(|r| since_prev < 2 * r + TIMER_TICK)
        {
            // a copy of the newest data without loss signals, about two RTTs after the
            // original: the sender's tail-loss probe (RFC 8985 PTO = 2·SRTT). Later than that
            // it is the retransmission timer (with one segment in flight Linux delays the
            // probe to about the RTO, and the two cannot be told apart: counted as RTO)
            RetransClass::Tlp
        } else {
            self.rx_rto_point = Some(self.nxt);
            RetransClass::Rto
        }
    }

    fn close_rx_spurious(&mut self, x: &mut Ctx) {
        if let Some(r) = self.rx_spur.take() {
            self.c.spurious_timeouts += 1;
            self.c.spurious_receiver += 1;
            self.c.spurious_rto_segments += r.segments as u64;
            let mut ev = Event::new(EventKind::SpuriousTimeout, r.start);
            ev.class = Some(SpuriousMethod::Receiver.as_str());
            ev.dir = Some(x.dir);
            ev.ts_end = Some(r.last);
            ev.seq_start = Some(r.seq_start);
            ev.seq_end = Some(r.seq_end);
            ev.count = Some(r.segments as u64);
            x.ev.push(ev);
        }
    }

    /// An ACK from the peer. `pure`: no payload, no SYN/FIN/RST. `sack`: relative SACK blocks.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn on_ack(
        &mut self,
        x: &mut Ctx,
        a: i64,
        ts: Nanos,
        window: u16,
        shift: Option<u8>,
        pure: bool,
        sack: &[(i64, i64)],
        tsecr: Option<u32>,
    ) {
        if let Some(w) = self.win.on_window(window, shift, ts, x.dir, x.ev) {
            self.bins.awnd(x.first_ts, ts, w);
        }
        if window == 0 {
            self.rx_closed_since = true;
        }
        if !self.ack_seen {
            self.ack_seen = true;
            self.una = a;
            self.last_ack_ts = ts;
            self.last_advance_ts = ts;
            self.last_ack_window = window;
            if self.started {
                self.store.prune_below(a);
            }
            return;
        }
        if pure {
            self.c.pure_acks += 1;
        }
        if let Some(t) = self.tseq.as_mut() {
            t.ack_seen_after = true;
            let id = t.id;
            let n = t.retx_before_ack;
            self.mark(id).retx_before_ack = n;
        }
        for &(l, r) in sack.iter() {
            if l >= a {
                // a SACK above the cumulative ACK is a loss signal like a DupACK
                self.last_dupack_ts = Some(ts);
                if r > self.sack_high {
                    self.sack_high = r;
                }
            }
        }
        if let Some((l, r)) = dsack(sack, a) {
            self.c.dsack_blocks += 1;
            self.on_dsack(x, l, r, ts, tsecr);
        }
        if a > self.una {
            let adv = a - self.una;
            self.advances[self.adv_next] = (a, ts);
            self.adv_next = (self.adv_next + 1) % self.advances.len();
            self.c.acked_bytes += adv as u64;
            if self.fr.is_none() && self.rto_ep.is_none() {
                self.c.advancing_acks_ca += 1;
                self.c.acked_bytes_ca += adv as u64;
            }
            self.bins.at(x.first_ts, ts).goodput += adv as u64;
            if x.vantage != DataVantage::Receiver {
                if let Some(t0) = self.store.karn_first_ts(a) {
                    if ts >= t0 {
                        self.timer.sample(ts - t0);
                    }
                }
                // Karn (M7): only never-repeated bytes, and nothing re-sent after them
                if let Some(rec) = self.store.last_covered(a) {
                    if rec.tx == 1
                        && !rec.filled
                        && rec.first_ts > self.last_retx_ts
                        && ts >= rec.first_ts
                    {
                        let rtt = ts - rec.first_ts;
                        if x.vantage == DataVantage::Sender {
                            x.rtt.sample(RttMethod::Ack, x.dir, ts, rtt, Some((&mut self.bins, x.first_ts)));
                        } else {
                            // vantage not known yet: kept until it is (at the sender these
                            // are RTTs, at the receiver only ACK delays)
                            x.rtt.hold(x.dir, ts, rtt);
                        }
                    }
                }
            }
            if let Some(t) = self.tseq {
                if a > t.seg_start {
                    self.close_timeout(x, t, ts, tsecr);
                }
            }
            self.una = a;
            if a > self.nxt {
                self.nxt = a; // the capture missed data the peer has (capture loss)
            }
            self.store.prune_below(a);
            if self.nxt > a && x.vantage == DataVantage::Receiver {
                self.rx_trigger(a, ts); // a partial ACK
            }
            self.dupacks_since_advance = 0;
            self.last_advance_ts = ts;
            self.tlp_since_advance = false;
            if self.fr.is_some_and(|f| a >= f.point) {
                self.fr = None;
            }
            if self.rto_ep.is_some_and(|f| a >= f.point) {
                self.rto_ep = None;
            }
        } else if a == self.una && pure && window == self.last_ack_window {
            if self.nxt > a {
                self.c.dupacks += 1;
                self.dupacks_since_advance += 1;
                if x.vantage == DataVantage::Receiver {
                    // any DupACK may be the one that makes the sender re-send: ACKs before it
                    // may be lost, and Linux raises the threshold after reordering
                    self.rx_trigger(a, ts);
                }
                self.last_dupack_ts = Some(ts);
                self.bins.at(x.first_ts, ts).dupacks += 1;
            } else if x.vantage == DataVantage::Receiver && !self.win.probing() {
                self.rx_trigger(a, ts); // a DupACK if the sender had data outstanding
                // the phone saw nothing beyond its ACK (answering a repeat): whether the
                // sender had data outstanding shows with the next data (not for the answers
                // to window probes: a Linux sender probes only with nothing in flight)
                let (n, t0) = self.rx_pending_dup;
                self.rx_pending_dup = if n == 0 { (1, ts) } else { (n + 1, t0) };
            }
        }
        self.last_ack_ts = ts;
        self.last_ack_window = window;
        if x.vantage == DataVantage::Sender {
            if let Some(b) = self.in_flight() {
                self.c.bif_max = self.c.bif_max.max(b);
                self.c.bif_sum += b as f64;
                self.c.bif_n += 1;
                self.bins.bif(x.first_ts, ts, b);
            }
        }
    }

    fn on_dsack(&mut self, x: &mut Ctx, l: i64, r: i64, ts: Nanos, tsecr: Option<u32>) {
        if x.vantage != DataVantage::Sender {
            return;
        }
        let Some(rx) = self.recent.attribute(l, r) else {
            return;
        };
        self.c.unnecessary += 1;
        if let Some(id) = rx.episode {
            let m = *self.mark(id);
            if m.id == id && !m.spurious_dsack && self.dsack_proves_original(id, tsecr, rx.tsval) {
                let newly = !m.any_spurious();
                self.mark(id).spurious_dsack = true;
                self.spurious_timeout(x, SpuriousMethod::Dsack, m, newly, ts, None);
            }
        } else {
            let mut ev = Event::on_bytes(EventKind::SpuriousRetransmission, ts, x.dir, rx.start, rx.end);
            ev.class = Some(SpuriousMethod::Dsack.as_str());
            ev.cause = Some(rx.class.as_str());
            x.ev.push(ev);
        }
    }

    /// M12 judges a timeout sequence by its first RTO re-send: a D-SACK proves it needless
    /// only if a copy sent before that re-send arrived. A D-SACK of a back-off copy shows
    /// only that some earlier copy arrived, maybe the first re-send itself after the ACK of
    /// it was lost (issue 35, audit runs 002/007). With timestamps the D-SACK's echo names
    /// the copy that arrived (it echoes the last segment that advanced the window): older
    /// than the first re-send means an original. Without them, RFC 3708's rule: spurious only
    /// when every re-send of the timed-out segment has been D-SACKed.
    /// A duplicate that ends at the receiver's last window update is processed as new and
    /// echoes its own TSval: no news, so RFC 3708's count decides then too.
    fn dsack_proves_original(&mut self, id: u32, tsecr: Option<u32>, dup_tsval: Option<u32>) -> bool {
        let m = self.mark(id);
        m.dsacked += 1;
        match (tsecr, m.first_tsval) {
            (Some(echo), Some(first)) if Some(echo) != dup_tsval => (first.wrapping_sub(echo) as i32) > 0,
            _ => m.dsacked >= m.head_resends,
        }
    }

    fn spurious_timeout(
        &mut self,
        x: &mut Ctx,
        method: SpuriousMethod,
        m: EpisodeMark,
        newly: bool,
        ts: Nanos,
        bias: Option<f64>,
    ) {
        match method {
            SpuriousMethod::Dsack => self.c.spurious_dsack += 1,
            SpuriousMethod::Eifel => self.c.spurious_eifel += 1,
            // the sender's own evidence only: the others are counted where they are found
            SpuriousMethod::Receiver | SpuriousMethod::TwoVantage => {
                unreachable!("spurious_timeout at the sender with {method:?}")
            }
        }
        if newly {
            self.c.spurious_timeouts += 1;
            self.c.spurious_rto_segments += m.retx_before_ack as u64;
        }
        let mut ev = Event::new(EventKind::SpuriousTimeout, m.first_retx);
        ev.class = Some(method.as_str());
        ev.dir = Some(x.dir);
        ev.ts_end = Some(ts);
        ev.count = Some(m.retx_before_ack as u64);
        ev.value = bias;
        x.ev.push(ev);
    }

    /// The first ACK past the timed-out segment ends the M10 phase; Eifel test on it.
    fn close_timeout(&mut self, x: &mut Ctx, t: TimeoutSeq, ts: Nanos, tsecr: Option<u32>) {
        self.tseq = None;
        let dur = (ts - t.armed) as f64 * 1e-9;
        let first = (t.first_retx - t.armed) as f64 * 1e-9;
        self.count_timeout(&t, dur, first);
        self.bins.backoff(x.first_ts, t.armed, ts);
        let mut ev = Event::new(EventKind::TimeoutSequence, t.armed);
        ev.class = Some("recovered");
        ev.dir = Some(x.dir);
        ev.ts_end = Some(ts);
        ev.seq_start = Some(t.seg_start);
        ev.seq_end = Some(t.seg_end);
        ev.count = Some(t.timeouts as u64);
        ev.value = Some(first);
        x.ev.push(ev);
        if let (Some(ecr), Some(v)) = (tsecr, t.first_tsval) {
            if seq_lt(ecr, v) {
                let m = *self.mark(t.id);
                if m.id == t.id && !m.spurious_eifel {
                    let newly = !m.any_spurious();
                    self.mark(t.id).spurious_eifel = true;
                    // M16: bias = arrival of the original's ACK − the RTO retransmission
                    let bias = (ts - t.first_retx) as f64 * 1e-9;
                    self.c.rto_bias_sum += bias;
                    self.c.rto_bias_n += 1;
                    self.spurious_timeout(x, SpuriousMethod::Eifel, m, newly, ts, Some(bias));
                }
            }
        }
    }

    fn count_timeout(&mut self, t: &TimeoutSeq, dur: f64, first: f64) {
        self.c.timeout_sequences += 1;
        self.c.timeout_finished += 1;
        self.c.timeouts += t.timeouts as u64;
        self.c.timeout_retransmissions += t.retransmissions as u64;
        self.c.timeout_repeated += t.repeated as u64;
        self.c.timeout_duration_sum += dur;
        self.c.timeout_duration_max = self.c.timeout_duration_max.max(dur);
        self.c.rto_first_sum += first;
    }

    /// End of the connection: close what is still open.
    pub fn finish(&mut self, x: &mut Ctx, end: Nanos) {
        self.close_rx_spurious(x);
        if let Some(t) = self.tseq.take() {
            let first = (t.first_retx - t.armed) as f64 * 1e-9;
            // still backing off when the capture or connection ended: counted, no duration
            self.c.timeout_sequences += 1;
            self.c.timeouts += t.timeouts as u64;
            self.c.timeout_retransmissions += t.retransmissions as u64;
            self.c.timeout_repeated += t.repeated as u64;
            self.c.rto_first_sum += first;
            self.bins
                .backoff(x.first_ts, t.armed, t.last_retx.max(end.min(t.last_retx)));
            let mut ev = Event::new(EventKind::TimeoutSequence, t.armed);
            ev.class = Some("unfinished");
            ev.dir = Some(x.dir);
            ev.seq_start = Some(t.seg_start);
            ev.seq_end = Some(t.seg_end);
            ev.count = Some(t.timeouts as u64);
            ev.value = Some(first);
            x.ev.push(ev);
        }
        self.win.finish(x.dir, x.ev);
    }
}
