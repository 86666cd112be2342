//! The receiver's view of one direction (capture at the phone): what only a receiver-side
//! capture can infer — unseen originals by IP ID, receiver-side spurious timeout episodes,
//! the phone's own DupACKs and re-send triggers. These rules see the shared stream state
//! only through [`Edge`] and the counters, never the sender's recovery state.

use crate::flow::event::{Event, EventKind};
use crate::wire::Nanos;

use super::super::kinds::{RetransClass, SpuriousMethod};
use super::{rto_threshold, Counts, Ctx, DataSeg, TIMER_TICK};

/// Receiver-side spurious-timeout episode: duplicates of RTO type arriving back to back.
struct RxSpurious {
    start: Nanos,
    last: Nanos,
    seq_start: i64,
    seq_end: i64,
    segments: u32,
    /// End of the first re-sent bytes (the episode's segment) and the latest copy's TSval.
    head_end: i64,
    last_tsval: Option<u32>,
}

/// What the receiver-side rules read of the shared stream state (copied, read-only).
#[derive(Clone, Copy)]
pub(super) struct Edge {
    /// Highest payload byte seen + 1.
    pub nxt: i64,
    pub una: i64,
    pub ack_seen: bool,
    /// Every byte below it has arrived (the phone's own rcv_nxt, as the capture shows it).
    pub seen_to: i64,
    /// Largest payload seen.
    pub max_payload: i64,
    /// The sender's IP IDs count up.
    pub ipid_monotone: bool,
}

impl Edge {
    /// No hole open at the phone: every byte up to the highest seen has arrived. Judged by
    /// the data, not by the phone's ACKs: a receiver answers a burst of arrivals after the
    /// burst (a live run, 3 % data drops: the fill and the go-back-N copies behind it came
    /// within 7 us and the ACK 20 us after them, so the re-send at the edge was read as new).
    #[inline]
    fn no_hole(&self) -> bool {
        self.ack_seen && self.seen_to >= self.nxt
    }
}

/// The newest original P of a sender whose IP IDs count up: its IP ID, its end, its arrival.
#[derive(Clone, Copy)]
struct Original {
    id: u16,
    end: i64,
    ts: Nanos,
}

/// Where an arrival in sequence stands against the IP IDs missing after the newest original.
enum Judged {
    /// Undecided: neither a re-send nor new data for sure (counted so by the caller).
    Undecided,
    /// (IDs missing, segments already counted against them, no rule applied)
    Missing(i64, i64, bool),
}

#[derive(Default)]
pub(super) struct ReceiverState {
    spur: Option<RxSpurious>,
    /// A timeout recovery is under way until data beyond this arrives.
    pub rto_point: Option<i64>,
    /// New data arrived after a suspension; the next hole is the data lost during it, and
    /// its fills belong to the timeout recovery.
    after_silence: bool,
    silence_hole: Option<(i64, i64)>,
    /// Senders whose IP IDs count up: the newest original, the IP ID of the first re-sent
    /// segment seen after it and how many segments with later IDs arrived since (see
    /// `unseen_original`).
    orig: Option<Original>,
    first_retx: Option<u16>,
    seen_after: u16,
    /// Segments counted as re-sends of unseen originals since that original (each missing
    /// ID pays for one, whatever the segments' sizes).
    unseen_counted: u16,
    /// The highest IP ID of any data seen (a reordered packet may arrive before the
    /// originals with lower IDs: its ID is then not missing after them).
    id_high: Option<u16>,
    /// Arrival of the latest data segment.
    last_data: Nanos,
    /// Arrival of the first data after a silence of the RTO scale since the newest original
    /// (a timeout's go-back-N burst begins).
    burst: Option<Nanos>,
    /// The window was closed since the newest original (the sender's empty probes take IP
    /// IDs too: missing IDs then say nothing about data).
    pub closed_since: bool,
    /// The newest original P (IP ID, end) as it was when new data beyond a hole replaced it
    /// while the sender was re-sending, the first re-send's IP ID after P and the re-sends
    /// seen after P: the bytes at P's end may still arrive, overtaken (`overtaken_resend`).
    overtaken: Option<(u16, i64, u16, u16)>,
    /// When the phone last sent an ACK that makes a Reno sender re-send (the third DupACK
    /// since an advance, or an advance with data beyond it: a partial ACK).
    trigger_ts: Nanos,
    /// The ACK number of that ACK, and when the phone last sent such an ACK for another ACK
    /// number (the sender may have re-sent those older bytes too).
    trigger_ack: i64,
    other_trigger_ts: Nanos,
    /// Pure ACKs repeating the ACK number and window with nothing seen beyond it (count,
    /// first send time), waiting for the next data to tell whether the sender had data
    /// outstanding (RFC 5681 DupACK condition (a)).
    pending_dup: (u32, Nanos),
}

impl ReceiverState {
    /// DupACK candidates waiting for the next data to be decided.
    #[inline]
    pub fn pending_dupacks(&self) -> u32 {
        self.pending_dup.0
    }

    /// Takes the pending DupACK candidates (count, first send time) to be decided.
    #[inline]
    pub fn take_pending_dupacks(&mut self) -> (u32, Nanos) {
        std::mem::take(&mut self.pending_dup)
    }

    /// A pure ACK repeating the last with nothing seen beyond it: a DupACK candidate.
    #[inline]
    pub fn hold_dupack(&mut self, ts: Nanos) {
        let (n, t0) = self.pending_dup;
        self.pending_dup = if n == 0 { (1, ts) } else { (n + 1, t0) };
    }

    /// A data segment arrived; after a silence of the RTO scale a timeout's burst begins.
    #[inline]
    pub fn note_arrival(&mut self, ts: Nanos, thr: Nanos) {
        if ts - self.last_data >= thr {
            self.burst = Some(ts);
        }
        self.last_data = ts;
    }

    /// Data beyond everything seen that is not a re-send: ends a timeout recovery past its
    /// point, and after a suspension marks the hole its recovery will fill.
    #[inline]
    pub fn note_new_data(&mut self, after_silence: bool, s: i64, nxt: i64) {
        if self.rto_point.is_some_and(|p| s >= p) {
            self.rto_point = None;
        }
        if after_silence {
            self.after_silence = true;
        } else if self.after_silence && s > nxt {
            // data lost during a silence, re-sent by the timeout recovery that ended it
            self.silence_hole = Some((nxt, s));
            self.after_silence = false;
        }
    }

    /// Data at or below the highest byte seen: its IP ID is not missing, and after the
    /// newest original it is a re-send seen (the sender is recovering).
    #[inline]
    pub fn note_old_data(&mut self, ip_id: Option<u16>) {
        let Some(id) = ip_id else { return };
        if self.id_high.is_none_or(|h| (id.wrapping_sub(h) as i16) > 0) {
            self.id_high = Some(id);
        }
        if let Some(p) = self.orig {
            if (id.wrapping_sub(p.id) as i16) > 0 {
                self.seen_after = self.seen_after.saturating_add(1);
                if self.first_retx.is_none() {
                    self.first_retx = Some(id);
                }
            }
        }
    }

    /// The phone sent an ACK (number `a`) that can make a Reno sender re-send.
    #[inline]
    pub fn trigger(&mut self, a: i64, ts: Nanos) {
        if a != self.trigger_ack {
            self.other_trigger_ts = self.trigger_ts;
            self.trigger_ack = a;
        }
        self.trigger_ts = ts;
    }

    /// A receiver-side spurious episode is open (duplicates of a timeout arriving).
    #[inline]
    pub fn in_spurious(&self) -> bool {
        self.spur.is_some()
    }

    /// The open spurious episode: the end of its first re-sent bytes and its latest copy's
    /// TSval.
    #[inline]
    pub fn open_episode(&self) -> Option<(i64, Option<u32>)> {
        self.spur.as_ref().map(|r| (r.head_end, r.last_tsval))
    }

    /// Duplicates of one timeout come back within about one RTO scale (go-back-N, paced
    /// re-sends of what the timeout marked lost); after a longer pause the episode is over.
    #[inline]
    pub fn close_spurious_after_pause(&mut self, x: &mut Ctx, c: &mut Counts, ts: Nanos) {
        // (the pause's scale only while an episode is open: every data segment asks)
        let Some(last) = self.spur.as_ref().map(|r| r.last) else { return };
        let gap = x.rtt.est.rto().map_or(TIMER_TICK, |r| {
            (2 * x.rtt.est.srtt.unwrap_or(0)).max(r) + TIMER_TICK
        });
        if ts - last > gap {
            self.close_spurious(x, c);
        }
    }

    /// Ends the receiver-side spurious episode (M12/M13, method `receiver`).
    pub fn close_spurious(&mut self, x: &mut Ctx, c: &mut Counts) {
        if let Some(r) = self.spur.take() {
            c.spurious_timeouts += 1;
            c.spurious_receiver += 1;
            c.spurious_rto_segments += r.segments as u64;
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

    /// A repeat of bytes the phone already had (M12 receiver method): an RTO-class repeat
    /// joins the spurious timeout episode (unless the recovery was seen needed), any other
    /// is one spurious retransmission.
    pub fn unnecessary_repeat(&mut self, x: &mut Ctx, class: RetransClass, genuine_recovery: bool, d: DataSeg) {
        let (s, e, ts, tsval, _) = d.parts();
        if class != RetransClass::Rto || genuine_recovery {
            let mut ev = Event::on_bytes(EventKind::SpuriousRetransmission, ts, x.dir, s, e);
            ev.class = Some(SpuriousMethod::Receiver.as_str());
            ev.cause = Some(class.as_str());
            x.ev.push(ev);
            return;
        }
        match self.spur.as_mut() {
            Some(r) => {
                r.segments += 1;
                r.last = ts;
                r.seq_start = r.seq_start.min(s);
                r.seq_end = r.seq_end.max(e);
                r.last_tsval = tsval;
            }
            None => {
                self.spur = Some(RxSpurious {
                    start: ts,
                    last: ts,
                    seq_start: s,
                    seq_end: e,
                    segments: 1,
                    head_end: e,
                    last_tsval: tsval,
                })
            }
        }
    }

    /// Receiver vantage: the receiver's own DupACKs (or SACKs above the bytes) shortly
    /// before (`recent_dupack`) mean the sender recovered fast; without them the sender's
    /// timer fired.
    #[allow(clippy::too_many_arguments)]
    pub fn class(
        &mut self,
        x: &Ctx,
        v: Edge,
        recent_dupack: bool,
        s: i64,
        e: i64,
        since_prev: Nanos,
        repeat: bool,
    ) -> RetransClass {
        let in_silence_hole = self.silence_hole.is_some_and(|(a, b)| s >= a && s < b);
        // A repeat of bytes that arrived more than ~2 RTTs (plus a timer tick) earlier: a
        // DupACK-driven re-send would have come one RTT after the receiver asked, and it
        // asked before the original arrived; only a timer waits that long.
        let late_repeat =
            repeat && x.rtt.est.srtt.is_some_and(|r| since_prev >= 2 * r + TIMER_TICK);
        if self.spur.is_some() || self.rto_point.is_some() || in_silence_hole {
            // the rest of a timeout recovery (go-back-N / slow start after the RTO)
            RetransClass::Rto
        } else if recent_dupack && !late_repeat {
            if x.sack && s > v.una {
                RetransClass::SackRefill
            } else {
                RetransClass::Fast
            }
        } else if e >= v.nxt && x.rtt.est.srtt.is_none_or(|r| since_prev < 2 * r + TIMER_TICK) {
            // a copy of the newest data without loss signals, about two RTTs after the
            // original: the sender's tail-loss probe (RFC 8985 PTO = 2·SRTT). Later than that
            // it is the retransmission timer (with one segment in flight Linux delays the
            // probe to about the RTO, and the two cannot be told apart: counted as RTO)
            RetransClass::Tlp
        } else {
            self.rto_point = Some(v.nxt);
            RetransClass::Rto
        }
    }

    /// Whether data arriving beyond everything seen is in fact a re-send whose original
    /// never arrived. The sender numbers its packets (IP IDs counting up) and sends new data
    /// in sequence order, so the packet after the newest original P is the next original
    /// unless it is a re-send. When the IDs right after P are missing and the first packet
    /// seen after them is a re-send (the sender is recovering), and then data arrives
    /// exactly at the highest byte with every hole filled, within the RTO scale of P (fast
    /// recovery: a NewReno partial ACK answered, or the go-back-N copies of it), the missing
    /// IDs were the originals of that data and it is their re-send. At most as many segments
    /// as IDs are missing. After a silence the missing IDs may as well be a lost timeout
    /// re-send (spurious, after ACK loss): not judged (docs/engine.md, known limits).
    pub fn unseen_original(&mut self, x: &Ctx, v: Edge, c: &mut Counts, d: DataSeg) -> bool {
        let (s, e, ts, _, ip_id) = d.parts();
        let Some(id) = ip_id else { return false };
        if !v.ipid_monotone {
            self.orig = Some(Original { id, end: e, ts });
            self.first_retx = None;
            return false;
        }
        if let Some(p) = self.orig {
            let (missing, paid, unjudged) = match self.missing_ids(x, v, p, d, id) {
                Judged::Undecided => {
                    c.undecided += 1;
                    return false;
                }
                Judged::Missing(m, paid, u) => (m, paid, u),
            };
            if missing - paid >= 1 && s == v.nxt && v.no_hole() && s < p.end + missing * v.max_payload {
                self.seen_after = self.seen_after.saturating_add(1);
                self.unseen_counted = self.unseen_counted.saturating_add(1);
                return true;
            }
            if unjudged && self.unjudged_undecided(v, p, s, id) {
                c.undecided += 1;
                return false;
            }
            if let (true, Some(f)) = (s > v.nxt, self.first_retx) {
                self.overtaken = Some((p.id, p.end, f, self.seen_after));
            }
        }
        self.new_original(id, e, ts);
        false
    }

    /// The IDs missing after the newest original `p` that this arrival (IP ID `id`) may be
    /// paying for, by the rule of the recovery under way (or undecided: the caller counts it).
    fn missing_ids(&mut self, x: &Ctx, v: Edge, p: Original, d: DataSeg, id: u16) -> Judged {
        let Original { id: o, end, ts: t_o } = p;
        let (s, _, ts, _, _) = d.parts();
        let thr = rto_threshold(x.rtt);
        let after_o = (id.wrapping_sub(o) as i16) as i64 - 1;
        match (self.first_retx, self.burst) {
            (Some(f), _) if ts - t_o < thr && (id.wrapping_sub(f) as i16) > 0 => {
                self.fast_recovery_ids(x, v, p, s, f)
            }
            // the go-back-N burst of a timeout: every ID after P never seen is an original
            // of the data after P unless it was a lost re-send; a Reno sender re-sends only
            // at the third DupACK, at a partial ACK or at the timeout (the burst), and the
            // phone sent no such ACK from one RTT before P's arrival on; a hole left means a
            // copy of the burst was lost, maybe one of those IDs: the next rule's
            (_, Some(t_b))
                if v.no_hole()
                    && self.in_burst(ts, t_b, t_o, thr)
                    && x.rtt.est.rto().is_some_and(|r| t_b - t_o < 2 * r)
                    && x.rtt.est.srtt.is_some_and(|r| self.trigger_ts < t_o - 2 * r) =>
            {
                Judged::Missing(after_o - self.seen_after as i64, 0, false)
            }
            // the same burst after an ACK that may have made the sender re-send: each
            // missing ID may have been that lost re-send or an original of the data after
            // P, and no capture at the phone says which (docs/engine.md, "What a
            // receiver-side capture cannot tell"): counted as undecided, not as a
            // retransmission, at most as many segments as IDs are missing. A hole left by a
            // lost copy of the burst changes nothing: go-back-N re-sends in order whatever
            // arrived (a live run: re-send 159137 lost, then 169357 and 170817, whose
            // originals were the missing IDs, were read as new data; 129 + 3 against 133)
            (_, Some(t_b)) if self.in_burst(ts, t_b, t_o, thr) && s == v.nxt => {
                let m = after_o - self.seen_after as i64;
                if m >= 1 && v.ack_seen && s < end + m * v.max_payload {
                    self.seen_after = self.seen_after.saturating_add(1);
                    return Judged::Undecided;
                }
                Judged::Missing(0, 0, false)
            }
            _ => Judged::Missing(0, 0, true),
        }
    }

    /// Within the RTO scale of a burst that began an RTO scale after P, no window closed.
    #[inline]
    fn in_burst(&self, ts: Nanos, t_b: Nanos, t_o: Nanos, thr: Nanos) -> bool {
        !self.closed_since && ts - t_b < thr && t_b - t_o >= thr
    }

    /// Fast recovery right after P: the IDs missing before the first re-send `f`, each
    /// paying for one segment (a short re-send left room for new data within `missing`
    /// segments of P: a live run counted 174 against 173). Only when the phone's ACKs since
    /// two SRTTs before P asked for one hole only: DupACKs for older bytes may have made the
    /// sender re-send those too, and that lost re-send is then the missing ID (a live run:
    /// DupACKs for 2979781, then the hole 2981241; ID 6122, lost, re-sent 2979781; 65
    /// counted against 64): undecided.
    fn fast_recovery_ids(&mut self, x: &Ctx, v: Edge, p: Original, s: i64, f: u16) -> Judged {
        let Original { id: o, end, ts: t_o } = p;
        let before_f = (f.wrapping_sub(o) as i16) as i64 - 1;
        let one_hole = x.rtt.est.srtt.is_some_and(|r| self.other_trigger_ts < t_o - 2 * r);
        if one_hole {
            return Judged::Missing(before_f, self.unseen_counted as i64, false);
        }
        let m = before_f - self.unseen_counted as i64;
        if m >= 1
            && s == v.nxt
            && v.no_hole()
            && s < end + (m + self.unseen_counted as i64) * v.max_payload
        {
            self.unseen_counted = self.unseen_counted.saturating_add(1);
            self.seen_after = self.seen_after.saturating_add(1);
            return Judged::Undecided;
        }
        Judged::Missing(0, 0, false)
    }

    /// No rule judged this arrival (outside their time windows: a lab run, SACK and
    /// timestamps on, where a timeout's TSval echo inflated the RTO scale). The sender was
    /// re-sending since P (the first packet after it was a re-send), so an ID after P never
    /// seen may have been the original of this data or a lost re-send of older bytes:
    /// undecided, at most as many segments as IDs are missing (docs/engine.md, "What a
    /// receiver-side capture cannot tell"). Returns whether it is undecided (the caller
    /// counts it).
    fn unjudged_undecided(&mut self, v: Edge, p: Original, s: i64, id: u16) -> bool {
        let m = (id.wrapping_sub(p.id) as i16) as i64 - 1 - self.seen_after as i64;
        if self.first_retx.is_some()
            && !self.closed_since
            && m >= 1
            && s == v.nxt
            && v.ack_seen
            && s < p.end + m * v.max_payload
        {
            self.seen_after = self.seen_after.saturating_add(1);
            return true;
        }
        false
    }

    /// A hole fill read as reordering (sent before the data beyond it) that starts at the end
    /// of the newest original P before that data, sent after the sender began re-sending
    /// since P, with an IP ID after P missing: had it come in sequence, `unseen_original`
    /// would have judged it; overtaken on the path by new data, it is the same case (the
    /// missing ID its lost original, or a lost re-send and this the original). Counted as
    /// undecided (a live run: re-send 229057 with IP ID 46107 arrived after new data with
    /// 46118; 82 + 1 counted against the 84 that arrived). Returns whether it was counted so.
    pub fn overtaken_resend(&mut self, c: &mut Counts, s: i64, ip_id: Option<u16>) -> bool {
        let (Some((o, end, f, seen)), Some(id)) = (self.overtaken, ip_id) else { return false };
        if s != end {
            return false;
        }
        self.overtaken = None;
        let missing = (id.wrapping_sub(o) as i16) as i64 - 1 - seen as i64;
        if (id.wrapping_sub(f) as i16) > 0 && missing >= 1 {
            c.undecided += 1;
            return true;
        }
        false
    }

    /// This arrival is the newest original P (IDs up to the highest seen are not missing
    /// after it): the counts against the previous P start over.
    #[inline]
    fn new_original(&mut self, id: u16, e: i64, ts: Nanos) {
        let floor = match self.id_high {
            Some(h) if (h.wrapping_sub(id) as i16) > 0 => h,
            _ => id,
        };
        self.id_high = Some(floor);
        self.orig = Some(Original { id: floor, end: e, ts });
        self.first_retx = None;
        self.seen_after = 0;
        self.unseen_counted = 0;
        self.burst = None;
        self.closed_since = false;
    }
}
