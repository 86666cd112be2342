//! The sender's view of one direction (capture at the sender, or vantage not yet known):
//! recovery episodes and their classes (analyzers.md §3.4), the sender's own RTO timer,
//! timeout sequences (M10) and the sender-side spurious tests (D-SACK, Eifel; M12/M13/M16).

use crate::flow::event::{Event, EventKind};
use crate::flow::rtt_sample::RttMethod;
use crate::flow::seq::seq_lt;
use crate::wire::Nanos;

use super::super::kinds::{DataVantage, RetransClass, SpuriousMethod};
use super::super::spurious::RecentRetx;
use super::super::store::Prior;
use super::super::timeout::{EpisodeMark, Recovery, RecoveryKind, SenderTimer, TimeoutSeq};
use super::{rto_threshold, Ctx, DataSeg, Stream, LONE_PROBE_EXTRA, RTO_FRACTION_DEN, RTO_FRACTION_NUM, TIMER_TICK};

/// State only the sender-side rules keep.
#[derive(Default)]
pub(super) struct SenderState {
    /// Open fast recovery episode.
    pub fr: Option<Recovery>,
    /// Open RTO recovery episode.
    pub rto_ep: Option<Recovery>,
    tseq: Option<TimeoutSeq>,
    /// The sender's own RTO as far as the capture shows it (sender vantage).
    timer: SenderTimer,
    episodes: u32,
    marks: [EpisodeMark; 4],
    /// A tail-loss probe was counted since the last advancing ACK (at most one per advance).
    tlp_since_advance: bool,
}

impl SenderState {
    #[inline]
    fn mark(&mut self, id: u32) -> &mut EpisodeMark {
        &mut self.marks[id as usize % self.marks.len()]
    }

    /// No recovery episode is open (congestion avoidance, for the M15 denominators).
    #[inline]
    pub fn open_state(&self) -> bool {
        self.fr.is_none() && self.rto_ep.is_none()
    }

    /// An ACK arrived after an RTO retransmission: its segments before it are counted (M13).
    #[inline]
    pub fn note_ack_after_timeout(&mut self) {
        if let Some(t) = self.tseq.as_mut() {
            t.ack_seen_after = true;
            let id = t.id;
            let n = t.retx_before_ack;
            self.mark(id).retx_before_ack = n;
        }
    }

    /// M12 judges a timeout sequence by its first RTO re-send: a D-SACK proves it needless
    /// only if a copy sent before that re-send arrived. A D-SACK of a back-off copy shows
    /// only that some earlier copy arrived, maybe the first re-send itself after the ACK of
    /// it was lost (issue 35, audit runs 002/007). With timestamps the D-SACK's echo names
    /// the copy that arrived (it echoes the last segment that advanced the window): older
    /// than the first re-send means an original. A duplicate that ends at the receiver's last
    /// window update is processed as new and echoes its own TSval: no news. Without an
    /// informative echo, RFC 3708's rule: spurious only when every re-send of the timed-out
    /// segment has been D-SACKed.
    fn dsack_proves_original(&mut self, id: u32, tsecr: Option<u32>, dup_tsval: Option<u32>) -> bool {
        let m = self.mark(id);
        m.dsacked += 1;
        match (tsecr, m.first_tsval) {
            (Some(echo), Some(first)) if Some(echo) != dup_tsval => {
                m.echo_decided = true;
                (first.wrapping_sub(echo) as i32) > 0
            }
            _ => m.dsacked >= m.head_resends,
        }
    }

    /// The first ACK past the timed-out segment arrived and no rule found the timeout
    /// spurious. If the segment had been D-SACKed by then, the ACK its first arrival drew was
    /// lost: "the first RTO copy arrived first" (needed) and "an earlier copy arrived"
    /// (spurious, its re-sends' D-SACKs lost too) then look the same, unless an echo named
    /// the copy. RFC 3708's count is no verdict there: undecided (fixture cubic_lost_evidence).
    fn undecided_at_close(&mut self, id: u32) -> bool {
        let m = self.mark(id);
        if m.id == id && m.dsacked > 0 && !m.any_spurious() && !m.echo_decided {
            m.undecided = true;
        }
        m.id == id && m.undecided
    }

    /// A D-SACK after the close decided an undecided sequence (every re-send D-SACKed, or an
    /// echo): it leaves the undecided count.
    fn settled(&mut self, id: u32) -> bool {
        let m = self.mark(id);
        let settled = m.undecided && (m.any_spurious() || m.echo_decided);
        m.undecided &= !settled;
        settled
    }

    /// The cumulative ACK advanced to `a`: episodes whose recovery point it passed end, and
    /// a new tail-loss probe is possible.
    #[inline]
    pub fn on_advance(&mut self, a: i64) {
        self.tlp_since_advance = false;
        if self.fr.is_some_and(|f| a >= f.point) {
            self.fr = None;
        }
        if self.rto_ep.is_some_and(|f| a >= f.point) {
            self.rto_ep = None;
        }
    }
}

impl Stream {
    /// Sender vantage (analyzers.md §3.4): inside an RTO episode everything is RTO recovery;
    /// DupACK/SACK evidence answered within the RTO scale is a fast retransmit (the first of
    /// an episode) or a SACK hole refill; a lone re-send of the highest segment with more
    /// outstanding and no loss evidence is a tail-loss probe; everything else is an RTO.
    pub(super) fn sender_class(&mut self, x: &mut Ctx, d: DataSeg, prior: &Prior) -> RetransClass {
        let (s, e, ts, _, _) = d.parts();
        let idle = if self.ack_seen { ts - self.last_ack_ts } else { Nanos::MAX };
        let thr = self.timer_threshold(x, ts, prior);
        if let Some(class) = self.within_rto_episode(s, e, ts, idle, thr, prior) {
            return class;
        }
        // Without SACK a recovery re-sends a segment once more only on a partial ACK, which
        // advances: a copy again with no advance since the last one is the timer's, however
        // close to a DupACK (issue 35, audit run 002: a needed RTO re-send 5 ms after a DupACK
        // was taken for a fast one, and its needless back-off for the sequence's first).
        let timer_early = thr >= Nanos::MAX / 4;
        let timer_resend = !x.sack
            && self.tx.fr.is_some()
            && prior.max_tx >= 2
            && self.last_advance_ts <= prior.last_ts
            && !timer_early;
        let evidence = !timer_resend
            && (self.dupacks_since_advance > 0 || (self.sack_high > s && self.sack_high > self.una));
        // Loss evidence answered within the RTO scale: SACK/DupACK-driven recovery, sent at
        // once (RFC 5681/6675) or after a RACK reorder timer or probe (RFC 8985), which are
        // clocked in ticks: one tick of grace. Later than that the retransmission timer fired.
        if (evidence || self.tx.fr.is_some()) && idle < thr + TIMER_TICK && !timer_resend {
            return self.fast_recovery_class(x, s);
        }
        if !evidence && self.is_tail_probe(x, s, e, ts, prior) {
            self.tx.tlp_since_advance = true;
            return RetransClass::Tlp;
        }
        // Marked lost after its last copy went out: by time (RACK: a copy sent later was
        // acknowledged) or by DupACKs or SACK blocks that arrived later (the DupACK threshold;
        // without SACK, Linux counts DupACKs as SACKed segments and marks the head lost)
        // -- or already acknowledged when it left: a timer re-sends the head at the sender's
        // snd_una, never bytes an ACK it had taken covered (the sender's queue lagged the wire)
        let marked = self.acked_retx_ts > prior.last_ts
            || self.last_dupack_ts.is_some_and(|d| d > prior.last_ts)
            || e <= self.una;
        if idle < thr && !timer_resend && (timer_early || marked) {
            // no loss signal since the last advance, yet too soon after an ACK for any timer:
            // the tail of a recovery that just ended (the sender's recovery point lies beyond
            // ours, or the bytes were marked lost). No RTO episode is open here (that case
            // returned above), so it is not a timeout's. Unmarked, only the timer re-sends
            // it, measured from the head's send while a probe timer is pending, not from the
            // ACK (issue 35, v5 run 001 frame 9967: 0.30 s after an ACK, 0.84 s after the
            // original, after a TLP; the kernel's RTO). Marked by DupACKs: a live reno run
            // re-sent new data sent 5 µs after the RTO burst's last re-send, 17 µs after an
            // advancing ACK, following 8 DupACKs; the kernel counted no RTO.
            return RetransClass::Fast;
        }
        self.open_timeout(d, prior);
        RetransClass::Rto
    }

    /// The silence a re-send must follow to be timer-driven. The sender's own timer cannot
    /// have fired before its RTO ran out. It was armed no earlier than the last advancing
    /// ACK in a recovery (Linux re-arms it there; no probe timer), and in the open state no
    /// earlier than that or the head's last transmission (Linux measures from the head after
    /// a probe timer): before 3/4 of that RTO, nothing is timer-driven (issue 30: paced
    /// ACK-clocked re-sends after a stall were taken for timeouts the kernel never had).
    #[inline]
    fn timer_threshold(&self, x: &Ctx, ts: Nanos, prior: &Prior) -> Nanos {
        let since_armed = if !self.ack_seen {
            Nanos::MAX
        } else if !self.tx.open_state() {
            ts - self.last_advance_ts
        } else {
            ts - prior.last_ts.min(self.last_advance_ts)
        };
        let timer_early = self
            .tx
            .timer
            .rto()
            .is_some_and(|r| since_armed < r * RTO_FRACTION_NUM / RTO_FRACTION_DEN);
        if timer_early {
            Nanos::MAX / 4
        } else {
            rto_threshold(x.rtt)
        }
    }

    /// Inside an open RTO episode: the timed-out segment again is one more (backed-off)
    /// timeout of the M10 sequence; other re-sends are part of the recovery, except the
    /// oldest outstanding data re-sent after a silence once the sequence ended (a new
    /// timeout: `None`, judged by the rules after).
    #[inline]
    fn within_rto_episode(
        &mut self,
        s: i64,
        e: i64,
        ts: Nanos,
        idle: Nanos,
        thr: Nanos,
        prior: &Prior,
    ) -> Option<RetransClass> {
        let ep = self.tx.rto_ep?;
        match self.tx.tseq.as_mut() {
            Some(t) if ep.id == t.id => {
                t.retransmissions += 1;
                t.last_retx = ts;
                if !t.ack_seen_after {
                    t.retx_before_ack += 1;
                }
                if s <= t.seg_start && e > t.seg_start {
                    t.timeouts += 1;
                    t.repeated += 1;
                    self.tx.timer.expired(ts - prior.last_ts);
                    let id = t.id;
                    self.tx.mark(id).head_resends += 1;
                }
                Some(RetransClass::Rto)
            }
            _ if !(s <= self.una && idle >= thr + TIMER_TICK) => Some(RetransClass::Rto),
            _ => None,
        }
    }

    /// Loss evidence answered in time: the first re-send opens a fast recovery episode, the
    /// later ones above the ACK with SACK refill its holes.
    #[inline]
    fn fast_recovery_class(&mut self, x: &Ctx, s: i64) -> RetransClass {
        match self.tx.fr {
            None => {
                self.tx.episodes += 1;
                self.tx.fr = Some(Recovery { kind: RecoveryKind::Fast, point: self.nxt, id: self.tx.episodes });
                RetransClass::Fast
            }
            Some(_) if x.sack && s > self.una => RetransClass::SackRefill,
            Some(_) => RetransClass::Fast,
        }
    }

    /// A copy of the newest data with no loss signal and no recovery under way: the tail
    /// loss probe (RFC 8985), at most one per advance. With SACK this holds also when the
    /// newest segment is the only one outstanding: Linux then delays the probe to about the
    /// RTO (PTO = 2·SRTT + 200 ms, capped at the RTO timer) but sends it as a probe, not a
    /// timeout (issue 30: total_rto 0 against one "timeout"). Later than that PTO the probe
    /// would have gone already: the timer's. Without SACK Linux sends no probe, nor in a
    /// recovery (the probe is armed only in the open state): there the lone newest segment
    /// re-sent after a silence is the timer's (issue 30: a RACK re-send, then 212 ms later
    /// the same segment again, total_rto 4 against 3 timeouts).
    #[inline]
    fn is_tail_probe(&self, x: &Ctx, s: i64, e: i64, ts: Nanos, prior: &Prior) -> bool {
        if !self.tx.open_state() {
            return false;
        }
        let lone_probe = || {
            x.sack
                && x.rtt
                    .est
                    .srtt
                    .is_some_and(|r| ts - prior.last_ts <= 2 * r + LONE_PROBE_EXTRA + TIMER_TICK)
        };
        e >= self.nxt && (s > self.una || lone_probe()) && !self.tx.tlp_since_advance
    }

    /// An RTO: opens the recovery episode and its timeout sequence (M10), armed at the later
    /// of the segment's last transmission and the last advancing ACK.
    fn open_timeout(&mut self, d: DataSeg, prior: &Prior) {
        let (s, e, ts, tsval, _) = d.parts();
        let tx = &mut self.tx;
        tx.fr = None;
        tx.episodes += 1;
        let id = tx.episodes;
        tx.rto_ep = Some(Recovery { kind: RecoveryKind::Rto, point: self.nxt, id });
        let armed = prior.last_ts.max(if self.ack_seen { self.last_advance_ts } else { prior.last_ts });
        tx.timer.expired(ts - armed);
        tx.tseq = Some(TimeoutSeq {
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
        *tx.mark(id) = EpisodeMark {
            id,
            first_retx: ts,
            first_tsval: tsval,
            head_start: s,
            head_resends: 1,
            retx_before_ack: 1,
            ..Default::default()
        };
    }

    /// The cumulative ACK advanced to `a` (vantage not the receiver): a sample of the
    /// sender's timer, and the RTT by Karn's rule (M7): only never-repeated bytes, and
    /// nothing re-sent after them.
    #[inline]
    pub(super) fn karn_sample(&mut self, x: &mut Ctx, a: i64, ts: Nanos) {
        if let Some(t0) = self.store.karn_first_ts(a) {
            if ts >= t0 {
                self.tx.timer.sample(ts - t0);
            }
        }
        let Some(rec) = self.store.last_covered(a) else { return };
        if rec.tx == 1 && !rec.filled && rec.first_ts > self.last_retx_ts && ts >= rec.first_ts {
            let rtt = ts - rec.first_ts;
            if x.vantage == DataVantage::Sender {
                x.rtt.sample(RttMethod::Ack, x.dir, ts, rtt, Some((&mut self.bins, x.first_ts)));
            } else {
                // vantage not known yet: kept until it is (at the sender these are RTTs, at
                // the receiver only ACK delays)
                x.rtt.hold(x.dir, ts, rtt);
            }
        }
    }

    /// The ACK `a` passed the start of the timed-out segment: the M10 phase ends.
    #[inline]
    pub(super) fn end_timeout_at(&mut self, x: &mut Ctx, a: i64, ts: Nanos, tsecr: Option<u32>) {
        if let Some(t) = self.tx.tseq {
            if a > t.seg_start {
                self.close_timeout(x, t, ts, tsecr);
            }
        }
    }

    pub(super) fn on_dsack(&mut self, x: &mut Ctx, l: i64, r: i64, ts: Nanos, tsecr: Option<u32>) {
        if x.vantage != DataVantage::Sender {
            return;
        }
        let Some(rx) = self.recent.attribute(l, r) else {
            return;
        };
        self.c.unnecessary += 1;
        let Some(id) = rx.episode else {
            return self.spurious_copy(x, rx, ts);
        };
        let m = *self.tx.mark(id);
        if m.id != id {
            return;
        }
        // Only a duplicate of the timed-out segment judges the timeout; a later segment's
        // re-send in the same recovery may be needless while the head's was needed (issue
        // 35): that one is a spurious retransmission, not evidence about the timer.
        let covers = |a: i64, b: i64| a <= m.head_start && m.head_start < b;
        if !(covers(l, r) && covers(rx.start, rx.end)) {
            return self.spurious_copy(x, rx, ts);
        }
        if !m.spurious_dsack && self.tx.dsack_proves_original(id, tsecr, rx.tsval) {
            let newly = !m.any_spurious();
            self.tx.mark(id).spurious_dsack = true;
            self.spurious_timeout(x, SpuriousMethod::Dsack, m, newly, ts, None);
        }
        if self.tx.settled(id) {
            self.c.spurious_undecided -= 1;
        }
    }

    /// A D-SACKed re-send that says nothing about a timeout: one needless copy.
    fn spurious_copy(&mut self, x: &mut Ctx, rx: RecentRetx, ts: Nanos) {
        let mut ev = Event::on_bytes(EventKind::SpuriousRetransmission, ts, x.dir, rx.start, rx.end);
        ev.class = Some(SpuriousMethod::Dsack.as_str());
        ev.cause = Some(rx.class.as_str());
        x.ev.push(ev);
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
        self.tx.tseq = None;
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
                let m = *self.tx.mark(t.id);
                if m.id == t.id && !m.spurious_eifel {
                    let newly = !m.any_spurious();
                    self.tx.mark(t.id).spurious_eifel = true;
                    // M16: bias = arrival of the original's ACK − the RTO retransmission
                    let bias = (ts - t.first_retx) as f64 * 1e-9;
                    self.c.rto_bias_sum += bias;
                    self.c.rto_bias_n += 1;
                    self.spurious_timeout(x, SpuriousMethod::Eifel, m, newly, ts, Some(bias));
                }
            }
        }
        if self.tx.undecided_at_close(t.id) {
            self.c.spurious_undecided += 1;
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

    /// End of the connection: a timeout sequence still backing off is counted, no duration.
    pub(super) fn finish_timeout(&mut self, x: &mut Ctx, end: Nanos) {
        let Some(t) = self.tx.tseq.take() else { return };
        let first = (t.first_retx - t.armed) as f64 * 1e-9;
        self.c.timeout_sequences += 1;
        self.c.timeouts += t.timeouts as u64;
        self.c.timeout_retransmissions += t.retransmissions as u64;
        self.c.timeout_repeated += t.repeated as u64;
        self.c.rto_first_sum += first;
        self.bins.backoff(x.first_ts, t.armed, t.last_retx.max(end.min(t.last_retx)));
        let mut ev = Event::new(EventKind::TimeoutSequence, t.armed);
        ev.class = Some("unfinished");
        ev.dir = Some(x.dir);
        ev.seq_start = Some(t.seg_start);
        ev.seq_end = Some(t.seg_end);
        ev.count = Some(t.timeouts as u64);
        ev.value = Some(first);
        x.ev.push(ev);
    }
}
