//! The TCP behaviour engine: per-connection analysis of RTT, retransmissions, timeouts,
//! spurious timeouts, DupACKs, windows, handshake/closure and suspensions (issue 3), from ONE
//! capture. How each metric is computed, and from which vantage it is valid: docs/engine.md.
//!
//! Contract with the rest of the flow layer:
//! - [`Engine::on_segment`] is called for every segment after the foundation accounting
//!   in [`ConnBase`] (volumes, SYN options, FIN/RST) was updated for it.
//! - [`Engine::finish`] is called once when the connection is retired or the capture ends.
//! - [`FLOW_COLUMNS`] / [`Engine::write_flow`] add columns to the `flows` table,
//!   [`SERIES_COLUMNS`] / [`Engine::write_series_bin`] to the `series` table.
//!
//! Per segment the work is O(1) amortized (O(log w) for a retransmission, w = records in
//! flight); per-connection memory follows the window (records above the cumulative ACK,
//! timestamps of about one RTT) plus one small struct per second of connection life.

pub mod kinds;
pub mod lifecycle;
pub mod retrans;
pub mod rtt;
pub mod sack;
pub mod series;
pub mod spurious;
pub mod store;
pub mod streams;
pub mod timeout;
pub mod window;

use crate::flow::connection::{ConnBase, Vantage};
use crate::flow::event::{Dir, Event, EventKind};
use crate::flow::rtt_sample::{RttMethod, RttSample};
use crate::table::{col, ColType, ColumnDef, Row};
use crate::wire::{Nanos, Segment};

use kinds::{DataVantage, RetransClass};
use lifecycle::{Lifecycle, GIVE_UP};
use retrans::Ctx;
use rtt::TsRing;

/// Echo samples per side needed before the timestamp test decides the vantage.
const ECHO_SAMPLES_FOR_VANTAGE: u32 = 3;
/// Echo delays must reach this (4 ticks of a 1-ms TSval clock) to tell the vantage.
const TS_TICKS_FOR_VANTAGE: Nanos = 4_000_000;
/// Handshake gaps must differ by this factor to tell the vantage.
const CLEAR_RATIO: i64 = 4;
/// Segment size assumed when neither an MSS option nor any payload was seen.
const DEFAULT_MSS: i64 = 1460;

const fn c(name: &'static str, ty: ColType, doc: &'static str) -> ColumnDef {
    col(name, ty, doc)
}
use ColType::{Bool, Str, F64, U64};

/// Engine columns of `flows` (docs/formats/flows.md). Unless said otherwise a column
/// describes the data direction (flows.data_dir).
pub const FLOW_COLUMNS: &[ColumnDef] = &[
    c("capture_near", Str, "host the capture sits next to: client or server (given by the caller or inferred)"),
    c("capture_near_source", Str, "how capture_near was decided: given, handshake (SYN/SYN-ACK/ACK gaps differ 4x), timestamps (TSval echo delays differ 2x), loss_pattern (first repeat = sender, first hole fill = receiver); null = unknown"),
    c("data_vantage", Str, "capture point relative to the data direction: sender or receiver; null = unknown (vantage-dependent columns are then null)"),
    c("rtt_count", U64, "RTT samples behind rtt_min..rtt_std: ACK matching (Karn, M7) at the sender, TSval echo at the receiver"),
    c("rtt_min", F64, "smallest RTT sample, s"),
    c("rtt_mean", F64, "mean RTT, s (M7; model input RTT, models.md §3.5)"),
    c("rtt_median", F64, "median RTT, s (log-histogram, within 1 %)"),
    c("rtt_max", F64, "largest RTT sample, s"),
    c("rtt_std", F64, "standard deviation of the RTT samples, s"),
    c("rtt_ack_samples", U64, "RTT samples from data→ACK matching with Karn's rule (sender vantage only)"),
    c("rtt_ts_samples", U64, "RTT samples from the TSval→TSecr echo of the capture side"),
    c("rtt_ts_mean", F64, "mean of the TSval-echo RTT samples, s"),
    c("rtt_handshake", F64, "RTT of the handshake at the capture point (client: SYN→SYN-ACK; server: SYN-ACK→ACK), s"),
    c("data_segments", U64, "data segments of the data direction seen (retransmissions included)"),
    c("retransmissions", U64, "retransmitted data segments: at the sender every re-sent segment; at the receiver the repeats and late hole fills that arrived (zero-window probes, reordering and network duplicates excluded)"),
    c("retransmitted_bytes", U64, "payload bytes of those retransmissions"),
    c("retrans_fast", U64, "retransmissions of class fast (fast retransmit after DupACKs/SACK)"),
    c("retrans_sack_refill", U64, "retransmissions of class sack_refill (later SACK holes in one recovery)"),
    c("retrans_rto", U64, "retransmissions of class rto (timeout and the timeout recovery after it)"),
    c("retrans_tlp", U64, "retransmissions of class tlp (tail-loss probe: a copy of the newest data without loss signals)"),
    c("retransmissions_undecided", U64, "receiver only: in-sequence data segments that may be re-sends or new data, undecidable at the receiver (docs/engine.md); the re-sends that arrived lie in [retransmissions, retransmissions + retransmissions_undecided]"),
    c("retrans_unclassified", U64, "retransmissions not classified because the vantage is unknown"),
    c("reordering_segments", U64, "hole fills that were sent before the data that overtook them, and (receiver) originals arriving after their own re-send (not retransmissions)"),
    c("network_duplicates", U64, "repeated copies with the same IP ID and TSval as the earlier copy (network or capture duplicates)"),
    c("zero_window_probes", U64, "zero-window probes (events kind window_probe): segments of <= 1 byte sent against a zero window, and segments without payload one byte below the cumulative ACK (Linux) while the window is zero or has not been used since it reopened"),
    c("unnecessary_retransmissions", U64, "retransmissions shown unnecessary: repeats at the receiver, D-SACKed at the sender"),
    c("dsack_blocks", U64, "ACKs carrying a D-SACK block (RFC 2883) for the data direction"),
    c("timeout_sequences", U64, "timeout sequences (M10), sender vantage"),
    c("timeouts", U64, "RTO expirations in them (1 + back-offs each)"),
    c("timeout_retransmissions", U64, "retransmissions sent during timeout sequences"),
    c("timeout_duration_mean", F64, "mean duration of finished timeout sequences, s (M10; S1: 0.65 s static, 5.05 s HSR)"),
    c("timeout_duration_max", F64, "longest finished timeout sequence, s"),
    c("rto_first_mean", F64, "T (A19): mean over timeout sequences of (first RTO retransmission - time the timer was armed), s"),
    c("q_estimate", F64, "single-capture estimate of q (M11): re-sent timed-out segments / retransmissions in timeout sequences (sender vantage; the two-capture q is in the matched flows)"),
    c("spurious_timeouts", U64, "RTO episodes found spurious by any method the vantage allows (M12)"),
    c("spurious_timeouts_receiver", U64, "found at the receiver: the retransmitted bytes had all arrived (M12)"),
    c("spurious_timeouts_dsack", U64, "found at the sender by D-SACK (RFC 2883/3708)"),
    c("spurious_timeouts_eifel", U64, "found at the sender by the timestamp test (Eifel, RFC 3522)"),
    c("spurious_rto_rate", F64, "M13: retransmitted segments of spurious RTO episodes / all retransmissions"),
    c("spurious_timeout_share", F64, "A5 event-based variant: spurious RTO episodes / RTO episodes (S1's 49.24 %)"),
    c("rto_bias_mean", F64, "M16: mean (ACK of the original arrives - RTO retransmission) over Eifel-detected spurious RTOs, s"),
    c("pure_acks", U64, "pure ACKs (no payload, SYN, FIN, RST) acknowledging the data direction"),
    c("dupacks", U64, "DupACKs: pure ACK, same ACK number and window as the previous ACK, data outstanding (M15, RFC 5681)"),
    c("dupacks_undecided", U64, "receiver only: pure ACKs answering a repeat, with nothing seen beyond their ACK number, that the receiver cannot tell to be DupACKs or not (docs/engine.md); the DupACKs sent lie in [dupacks, dupacks + dupacks_undecided]"),
    c("dupack_rate", F64, "M15: dupacks / pure_acks"),
    c("bif_max", U64, "largest bytes in flight sampled at ACK arrivals (M17, A13), sender vantage"),
    c("bif_mean", F64, "mean bytes in flight at ACK arrivals, sender vantage"),
    c("awnd_min", U64, "smallest advertised window of the data receiver, bytes (scaled; null when the scale is unknown)"),
    c("awnd_max", U64, "largest advertised window, bytes"),
    c("awnd_mean", F64, "mean advertised window over the receiver's ACKs, bytes"),
    c("zero_window_segments", U64, "segments of the data receiver advertising a zero window"),
    c("zero_window_events", U64, "zero-window episodes (events kind zero_window)"),
    c("zero_window_duration", F64, "total time the window stayed at zero, s"),
    c("full_window_segments", U64, "new data segments reaching the right edge of the advertised window"),
    c("full_window_events", U64, "full-window episodes (events kind full_window)"),
    c("rwnd_limited_fraction", F64, "share of new data segments sent with bytes in flight within one MSS of the advertised window (sender vantage)"),
    c("limited_by", Str, "rwnd when rwnd_limited_fraction >= 0.5, else cwnd (congestion window or application; seed 000 §VI-B)"),
    c("mss_data", U64, "segment size used for packet counts: the receiver's MSS option, else the largest payload seen"),
    c("w_m_packets", U64, "W_m (A18): floor(max advertised window / mss_data)"),
    c("b_packets_per_ack", F64, "b (models.md §3.3): segments acknowledged / ACKs that advanced snd_una, outside recovery"),
    c("throughput_pkts", F64, "M4: acknowledged bytes / mss_data / flow duration, packets/s"),
    c("goodput_bytes", U64, "bytes cumulatively acknowledged (advance of the ACK number)"),
    c("establishment_s", F64, "M18 at this capture: first SYN -> ACK completing the handshake, s"),
    c("syn_retransmissions", U64, "SYNs after the first (client)"),
    c("synack_retransmissions", U64, "SYN-ACKs repeated with the same sequence number (server)"),
    c("handshake_refused", Bool, "a RST ended the handshake"),
    c("fin_retransmissions_client", U64, "FINs the client repeated at the same sequence position"),
    c("fin_retransmissions_server", U64, "FINs the server repeated at the same sequence position"),
    c("closer", Str, "side whose FIN (or RST when no FIN) came first: client or server"),
    c("closure_s", F64, "M19/A10: first FIN sent by the server -> last packet of the connection (either direction), s; null when the server sent no FIN"),
    c("acked_bytes", U64, "highest byte of the data direction acknowledged by the receiver: bytes from the first data byte (ISN + 1 when the SYN was captured) to the cumulative ACK, FIN excluded (compare with the object size for M20)"),
    c("interrupted", Bool, "M20/A11: ended by rst or fin before all data sent was acknowledged, or no byte delivered for 60 s while data was outstanding (application give-up); null while open with data unacknowledged at the capture end"),
    c("interruption_reason", Str, "rst, fin or no_delivery when interrupted"),
    c("suspensions", U64, "silences in both directions longer than max(200 ms, 2 SRTT) (events kind suspension)"),
    c("suspensions_stalled", U64, "of those, silences with data outstanding"),
    c("suspension_total", F64, "summed suspension time, s"),
    c("suspension_max", F64, "longest suspension, s"),
    c("segment_store_overflow", U64, "segment records dropped by the per-direction bound (one-sided captures); nonzero means retransmission tests were partly blind"),
];

/// Engine columns of `series` (per 1-s bin, data direction).
pub const SERIES_COLUMNS: &[ColumnDef] = &[
    c(
        "goodput_bytes",
        U64,
        "bytes newly acknowledged in the bin (cumulative ACK advance)",
    ),
    c("retransmissions", U64, "retransmissions seen in the bin"),
    c("dupacks", U64, "DupACKs seen in the bin"),
    c(
        "bif_max",
        U64,
        "largest bytes in flight at an ACK in the bin (sender vantage)",
    ),
    c(
        "bif_mean",
        F64,
        "mean bytes in flight at the ACKs of the bin (sender vantage)",
    ),
    c(
        "awnd_min",
        U64,
        "smallest advertised window in the bin, bytes",
    ),
    c("awnd_mean", F64, "mean advertised window in the bin, bytes"),
    c("rtt_count", U64, "RTT samples in the bin"),
    c("rtt_min", F64, "smallest RTT sample in the bin, s"),
    c("rtt_mean", F64, "mean RTT sample in the bin, s"),
    c("rtt_max", F64, "largest RTT sample in the bin, s"),
    c(
        "backoff",
        Bool,
        "the bin overlaps a timeout sequence (M3: its zero throughput is back-off, not absence)",
    ),
];

/// Heap bytes of a connection's streams and RTT book once allocated (streams.rs).
pub const STREAMS_BYTES: usize = std::mem::size_of::<streams::Body>();

/// Counts of one direction's per-segment verdicts ([`Engine::tally`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Retransmissions per class, in the order of [`RETRANS_CLASSES`].
    pub retrans: [u64; 5],
    pub undecided: u64,
    pub reordering: u64,
    pub duplicates: u64,
    pub probes: u64,
    pub dupacks: u64,
    pub pending_dupacks: u32,
}

/// Retransmission classes in the order of [`Tally::retrans`].
pub const RETRANS_CLASSES: [RetransClass; 5] = RetransClass::ALL;

#[derive(Default)]
pub struct Engine {
    /// The streams and the RTT book, allocated at the first segment that needs them
    /// (streams.rs: scans stay small).
    streams: streams::Streams,
    life: Lifecycle,
    ts_sent: [TsRing; 2],
    echo_min: [Option<Nanos>; 2],
    echo_n: [u32; 2],
    /// The capture sits next to the sender of this direction (C2S = client).
    near: Option<Dir>,
    near_source: Option<&'static str>,
    sack_seen: bool,
    end: Option<(Nanos, bool)>,
    /// Handshake gaps (SYN→SYN-ACK, SYN-ACK→ACK) and time, until the vantage is known.
    pending_hs: Option<(Nanos, Nanos, Nanos)>,
    after_silence: bool,
    first_ts: Nanos,
}

fn near_of(v: Vantage) -> Dir {
    match v {
        Vantage::Client => Dir::C2S,
        Vantage::Server => Dir::S2C,
    }
}

impl Engine {
    /// Direction of bulk data so far (more payload); ties go to s2c (downloads).
    fn data_dir(c: &ConnBase) -> Dir {
        c.data_dir().unwrap_or(Dir::S2C)
    }

    fn mss_for(&self, c: &ConnBase, d: Dir) -> i64 {
        c.mss(d.rev())
            .map(|m| m as i64)
            .or_else(|| {
                (self.streams[d.idx()].max_payload > 0)
                    .then_some(self.streams[d.idx()].max_payload as i64)
            })
            .unwrap_or(DEFAULT_MSS)
    }

    /// One segment of the connection, in four steps: its place in the connection's life
    /// (stalls, gaps, handshake, FIN), the vantage evidence it carries (timestamp echoes),
    /// its ACK half (the other direction's data) and its data half.
    #[inline]
    pub fn on_segment(&mut self, c: &mut ConnBase, seg: &Segment, dir: Dir, ev: &mut Vec<Event>) {
        self.first_ts = c.first_ts;
        if self.near.is_none() {
            if let Some(v) = c.vantage {
                self.near = Some(near_of(v));
                self.near_source = Some("given");
            }
        }
        let rel_seq = c.rel_seq(dir, seg.seq);
        self.lifecycle(c, seg, dir, rel_seq, ev);
        self.timestamps(c, seg, dir);
        if !self.sack_seen && seg.options.sack_count > 0 {
            self.sack_seen = true;
        }
        let sack = self.sack_seen || c.sack_permitted() == Some(true);
        if seg.flags.ack() {
            self.ack_half(c, seg, dir, sack, ev);
        }
        if seg.payload_len == 0 {
            self.empty_segment(c, seg, dir, rel_seq, sack, ev);
        } else {
            self.data_half(c, seg, dir, rel_seq, sack, ev);
        }
    }

    /// The segment's place in the connection's life: delivery stalls and gaps end at it
    /// (tested first), the handshake's two gaps (a time scale and a vantage hint), its FIN.
    #[inline]
    fn lifecycle(&mut self, c: &ConnBase, seg: &Segment, dir: Dir, rel_seq: i64, ev: &mut Vec<Event>) {
        let ts = seg.ts;
        {
            let d = Self::data_dir(c);
            let st = &self.streams[d.idx()];
            let stalled = st.in_flight().is_some_and(|b| b > 0);
            self.life.delivery(ts, st.una, stalled);
            self.after_silence = self.life.gap(ts, self.streams.rtt().est.srtt, stalled, ev);
        }
        if let Some(h) = self.life.on_segment(seg, dir) {
            let (a, b) = (h.syn_to_synack, h.synack_to_ack);
            self.pending_hs = Some((a, b, ts));
            // one gap is the path RTT, the other the near host's processing: the larger one
            // gives the thresholds a time scale even before the vantage is known
            self.streams.rtt_mut().est.sample(a.max(b));
            if self.near.is_none() && (a >= CLEAR_RATIO * b.max(1) || b >= CLEAR_RATIO * a.max(1)) {
                // the capture host answers at once, the remote one an RTT later; on paths
                // whose RTT is close to the hosts' processing time (a LAN) this says nothing
                self.decide(if a > b { Dir::C2S } else { Dir::S2C }, "handshake");
            } else if self.near.is_some() {
                self.handshake_sample();
            }
        }
        if seg.flags.fin() {
            let fin = rel_seq + seg.flags.syn() as i64 + seg.payload_len as i64;
            self.life.fin_rel[dir.idx()].get_or_insert(fin);
        }
    }

    /// The TSval echo loop: the echo delays decide an unknown vantage (the capture side's
    /// TSvals come back after a full RTT, the far side's after its own processing time)
    /// and, at the sender, are RTT samples.
    #[inline]
    fn timestamps(&mut self, c: &ConnBase, seg: &Segment, dir: Dir) {
        let Some((tsval, tsecr)) = seg.options.timestamp else { return };
        let ts = seg.ts;
        self.ts_sent[dir.idx()].sent(tsval, ts);
        if !seg.flags.ack() || tsecr == 0 {
            return;
        }
        let other = dir.rev();
        let Some(t0) = self.ts_sent[other.idx()].echoed(tsecr) else { return };
        let delay = ts - t0;
        let i = other.idx();
        self.echo_min[i] = Some(self.echo_min[i].map_or(delay, |m| m.min(delay)));
        self.echo_n[i] += 1;
        if self.near.is_none()
            && self.echo_n.iter().all(|&n| n >= ECHO_SAMPLES_FOR_VANTAGE)
            && !seg.flags.syn()
        {
            let (a, b) = (self.echo_min[0].unwrap_or(0), self.echo_min[1].unwrap_or(0));
            // TSvals tick in milliseconds (Linux: 1 ms): below a few ticks the delays
            // measure the clock, not the path
            if a.max(b) >= TS_TICKS_FOR_VANTAGE && (a >= 2 * b.max(1) || b >= 2 * a.max(1)) {
                self.decide(if a > b { Dir::C2S } else { Dir::S2C }, "timestamps");
            }
        }
        if self.near == Some(other) && !seg.flags.syn() {
            let d = Self::data_dir(c);
            let first = c.first_ts;
            let (st, rtt) = self.streams.with_rtt(d.idx());
            rtt.sample(RttMethod::Timestamp, d, ts, delay, Some((&mut st.bins, first)));
        }
    }

    /// The ACK half: acknowledges the other direction's data (its SACK blocks become
    /// events; SYN windows are never scaled, RFC 7323 §2.2, and a RST's means nothing).
    #[inline]
    fn ack_half(&mut self, c: &mut ConnBase, seg: &Segment, dir: Dir, sack: bool, ev: &mut Vec<Event>) {
        let ts = seg.ts;
        let other = dir.rev();
        let a = c.rel_ack(dir, seg.ack);
        let mut blocks = [(0i64, 0i64); 4];
        let n = seg.options.sack_count as usize;
        if let Some(space) = c.half[other.idx()].seq.as_ref() {
            for (k, b) in seg.options.sack_blocks().iter().enumerate() {
                blocks[k] = (space.peek(b.left), space.peek(b.right));
            }
            if n > 0 {
                sack::push_blocks(ev, ts, other, a, &blocks[..n]);
            }
        }
        if seg.flags.syn() || seg.flags.rst() {
            return;
        }
        let pure = seg.payload_len == 0 && !seg.flags.fin();
        let shift = c.wscale(dir);
        let vantage = DataVantage::of(self.near, other);
        let (st, rtt) = self.streams.with_rtt(other.idx());
        let mut x = Ctx::new(c.first_ts, vantage, sack, other, shift.unwrap_or(0), rtt, ev, false);
        let tsecr = seg.options.timestamp.map(|t| t.1);
        st.on_ack(&mut x, a, ts, seg.window, shift, pure, &blocks[..n], tsecr);
    }

    /// A segment without payload: only pure segments of a direction that sent data, below
    /// its left edge, can be window probes.
    #[inline]
    fn empty_segment(&mut self, c: &ConnBase, seg: &Segment, dir: Dir, rel_seq: i64, sack: bool, ev: &mut Vec<Event>) {
        let st = &self.streams[dir.idx()];
        if !st.started || rel_seq >= st.una || seg.flags.syn() || seg.flags.fin() || seg.flags.rst() {
            return;
        }
        let vantage = DataVantage::of(self.near, dir);
        let (st, rtt) = self.streams.with_rtt(dir.idx());
        let mut x = Ctx::new(c.first_ts, vantage, sack, dir, 0, rtt, ev, false);
        st.on_empty(&mut x, rel_seq, seg.ts);
    }

    /// The data half: the segment's payload in its direction's stream; a loss pattern
    /// found there may decide the vantage.
    #[inline]
    fn data_half(&mut self, c: &ConnBase, seg: &Segment, dir: Dir, rel_seq: i64, sack: bool, ev: &mut Vec<Event>) {
        let s = rel_seq + seg.flags.syn() as i64;
        let e = s + seg.payload_len as i64;
        let mss = self.mss_for(c, dir);
        let vantage = DataVantage::of(self.near, dir);
        let shift = c.wscale(dir.rev()).unwrap_or(0);
        // one lookup of the stream for both uses (a fresh stream reads as an absent one)
        let (st, rtt) = self.streams.with_rtt(dir.idx());
        let peer_zero = st.win.zero_now();
        let mut x = Ctx::new(c.first_ts, vantage, sack, dir, shift, rtt, ev, self.after_silence);
        let tsval = seg.options.timestamp.map(|t| t.0);
        st.on_data(&mut x, s, e, seg.ts, tsval, seg.ip_id, peer_zero, mss);
        match x.decided {
            DataVantage::Sender => self.decide(dir, "loss_pattern"),
            DataVantage::Receiver => self.decide(dir.rev(), "loss_pattern"),
            DataVantage::Unknown => {}
        }
    }

    /// Fix the vantage (the capture sits next to the sender of `near`).
    fn decide(&mut self, near: Dir, source: &'static str) {
        if self.near.is_some() {
            return;
        }
        self.near = Some(near);
        self.near_source = Some(source);
        self.handshake_sample();
        let first = self.first_ts;
        let (st, book) = self.streams.with_rtt(near.idx());
        for (ts, rtt) in book.take_held(near) {
            book.sample(RttMethod::Ack, near, ts, rtt, Some((&mut st.bins, first)));
        }
    }

    /// The handshake RTT once the vantage is known: SYN→SYN-ACK at the client,
    /// SYN-ACK→ACK at the server.
    fn handshake_sample(&mut self) {
        if let (Some((a, b, ts)), Some(n)) = (self.pending_hs.take(), self.near) {
            let rtt = if n == Dir::C2S { a } else { b };
            self.streams.rtt_mut().sample(RttMethod::Handshake, Dir::C2S, ts, rtt, None);
        }
    }

    /// The per-segment verdicts counted so far for the data of `d` and the ACKs answering
    /// it: the packets table compares them before and after a segment (flow/packets.rs).
    pub fn tally(&self, d: Dir) -> Tally {
        let st = &self.streams[d.idx()];
        let k = &st.c;
        Tally {
            retrans: [k.fast, k.sack_refill, k.rto, k.tlp, k.unclassified],
            undecided: k.undecided,
            reordering: k.reordering,
            duplicates: k.network_duplicates,
            probes: k.zero_window_probes,
            dupacks: k.dupacks,
            pending_dupacks: st.pending_dupacks(),
        }
    }

    /// Whether the per-direction stream state was allocated (streams.rs; the flow table's
    /// memory accounting).
    #[inline]
    pub fn streams_allocated(&self) -> bool {
        self.streams.allocated()
    }

    /// RTT samples found and not yet handed on to the `rtt` table.
    pub fn rtt_samples(&self) -> &[RttSample] {
        &self.streams.rtt().samples
    }

    /// Hand the pending RTT samples on (the flow table's chunks while the flow is open).
    pub fn drain_rtt_samples(&mut self) -> impl Iterator<Item = RttSample> + '_ {
        // (an unallocated book holds none; asking must not allocate it)
        self.streams.rtt_if_allocated().into_iter().flat_map(|book| book.samples.drain(..))
    }

    pub fn finish(&mut self, c: &mut ConnBase, capture_end: Nanos, ev: &mut Vec<Event>) {
        for d in [Dir::C2S, Dir::S2C] {
            if !self.streams.allocated() {
                break; // untouched streams have nothing to close
            }
            let vantage = DataVantage::of(self.near, d);
            let shift = c.wscale(d.rev()).unwrap_or(0);
            let (st, rtt) = self.streams.with_rtt(d.idx());
            let mut x = Ctx::new(c.first_ts, vantage, self.sack_seen, d, shift, rtt, ev, self.after_silence);
            st.finish(&mut x, capture_end);
        }
        // Handshake and close events.
        if let Some(t0) = self.life.first_syn {
            let mut e = Event::new(EventKind::Handshake, t0);
            e.ts_end = self.life.handshake_ack;
            e.count = Some(c.half[0].syn_count as u64);
            e.class = Some(if self.life.handshake_ack.is_some() {
                "complete"
            } else if self.life.refused {
                "refused"
            } else {
                "incomplete"
            });
            e.dir = Some(Dir::C2S);
            ev.push(e);
        }
        let close = self.life.first_fin.or(self.life.first_rst);
        if let Some((t0, who)) = close {
            let mut e = Event::new(EventKind::Close, t0);
            e.ts_end = Some(c.last_ts);
            e.class = Some(c.end_reason());
            e.cause = Some(if who == Dir::C2S { "client" } else { "server" });
            e.dir = Some(who);
            ev.push(e);
        }
        let d = Self::data_dir(c);
        let st = &self.streams[d.idx()];
        let unacked = st.started && (!st.ack_seen || st.una < st.nxt);
        self.life.delivery_end(capture_end, st.in_flight().is_some_and(|b| b > 0));
        let reason = self.life.interruption(unacked);
        let open = self.life.first_rst.is_none() && self.life.first_fin.is_none();
        self.end = Some((capture_end, open && unacked));
        if let Some(r) = reason {
            // no_delivery: the stall, from its start to the give-up 60 s later
            let at = match r {
                "no_delivery" => self.life.stall_max_start.unwrap_or(c.last_ts),
                _ => c.last_ts,
            };
            let mut e = Event::new(EventKind::Interruption, at);
            if r == "no_delivery" {
                e.ts_end = Some(at + GIVE_UP);
            }
            e.class = Some(r);
            e.dir = Some(d);
            e.seq_start = st.ack_seen.then_some(st.una);
            e.seq_end = Some(st.nxt);
            ev.push(e);
        }
    }

    pub fn write_flow(&self, c: &ConnBase, row: &mut Row<'_>) {
        let d = Self::data_dir(c);
        let st = &self.streams[d.idx()];
        let k = &st.c;
        let vs = DataVantage::of(self.near, d);
        let sender = vs == DataVantage::Sender;
        let known = vs.known();
        let only = |ok: bool, v: u64| ok.then_some(v);
        let ratio = |a: f64, b: f64| (b > 0.0).then(|| a / b);
        let book = self.streams.rtt();
        let prim = if sender { &book.ack } else { &book.ts };
        let mss = self.mss_for(c, d);
        let dur = (c.last_ts - c.first_ts) as f64 * 1e-9;
        let rf = self.life.first_fin.or(self.life.first_rst);
        row.str(
            "capture_near",
            self.near
                .map(|n| if n == Dir::C2S { "client" } else { "server" }),
        )
        .str("capture_near_source", self.near_source)
        .str("data_vantage", vs.as_str())
        .u64("rtt_count", known.then_some(prim.count))
        .f64("rtt_min", prim.min())
        .f64("rtt_mean", prim.mean())
        .f64("rtt_median", prim.median())
        .f64("rtt_max", prim.max())
        .f64("rtt_std", prim.std())
        .u64("rtt_ack_samples", only(sender, book.ack.count))
        .u64("rtt_ts_samples", only(known, book.ts.count))
        .f64("rtt_ts_mean", book.ts.mean())
        .f64("rtt_handshake", book.handshake)
        .u64("data_segments", k.data_segments)
        .u64("retransmissions", k.retransmissions)
        .u64("retransmitted_bytes", k.retransmitted_bytes)
        .u64("retrans_fast", only(known, k.fast))
        .u64("retrans_sack_refill", only(known, k.sack_refill))
        .u64("retrans_rto", only(known, k.rto))
        .u64("retrans_tlp", only(known, k.tlp))
        .u64("retransmissions_undecided", only(known && !sender, k.undecided))
        .u64("retrans_unclassified", k.unclassified)
        .u64("reordering_segments", k.reordering)
        .u64("network_duplicates", k.network_duplicates)
        .u64("zero_window_probes", k.zero_window_probes)
        .u64("unnecessary_retransmissions", only(known, k.unnecessary))
        .u64("dsack_blocks", k.dsack_blocks)
        .u64("timeout_sequences", only(sender, k.timeout_sequences))
        .u64("timeouts", only(sender, k.timeouts))
        .u64(
            "timeout_retransmissions",
            only(sender, k.timeout_retransmissions),
        )
        .f64(
            "timeout_duration_mean",
            if sender {
                ratio(k.timeout_duration_sum, k.timeout_finished as f64)
            } else {
                None
            },
        )
        .f64(
            "timeout_duration_max",
            (sender && k.timeout_finished > 0).then_some(k.timeout_duration_max),
        )
        .f64(
            "rto_first_mean",
            if sender {
                ratio(k.rto_first_sum, k.timeout_sequences as f64)
            } else {
                None
            },
        )
        .f64(
            "q_estimate",
            if sender {
                ratio(k.timeout_repeated as f64, k.timeout_retransmissions as f64)
            } else {
                None
            },
        )
        .u64("spurious_timeouts", only(known, k.spurious_timeouts))
        .u64(
            "spurious_timeouts_receiver",
            only(vs == DataVantage::Receiver, k.spurious_receiver),
        )
        .u64("spurious_timeouts_dsack", only(sender, k.spurious_dsack))
        .u64(
            "spurious_timeouts_eifel",
            only(sender && c.timestamps() == Some(true), k.spurious_eifel),
        )
        .f64(
            "spurious_rto_rate",
            if known {
                ratio(k.spurious_rto_segments as f64, k.retransmissions as f64)
            } else {
                None
            },
        )
        .f64(
            "spurious_timeout_share",
            if sender {
                ratio(k.spurious_timeouts as f64, k.timeout_sequences as f64)
            } else {
                None
            },
        )
        .f64("rto_bias_mean", ratio(k.rto_bias_sum, k.rto_bias_n as f64))
        .u64("pure_acks", k.pure_acks)
        .u64("dupacks", k.dupacks)
        .u64("dupacks_undecided", only(known && !sender, k.dupacks_undecided))
        .f64("dupack_rate", ratio(k.dupacks as f64, k.pure_acks as f64))
        .u64("bif_max", (sender && k.bif_n > 0).then_some(k.bif_max))
        .f64(
            "bif_mean",
            if sender {
                ratio(k.bif_sum, k.bif_n as f64)
            } else {
                None
            },
        )
        .u64("awnd_min", st.win.awnd_min)
        .u64("awnd_max", st.win.awnd_max)
        .f64("awnd_mean", st.win.awnd_mean())
        .u64("zero_window_segments", st.win.zero_segments)
        .u64("zero_window_events", st.win.zero_events)
        .f64(
            "zero_window_duration",
            Some(st.win.zero_total as f64 * 1e-9),
        )
        .u64("full_window_segments", st.win.full_segments)
        .u64("full_window_events", st.win.full_events)
        .f64(
            "rwnd_limited_fraction",
            if sender {
                ratio(
                    st.win.rwnd_limited_sends as f64,
                    st.win.new_data_sends as f64,
                )
            } else {
                None
            },
        )
        .str(
            "limited_by",
            if sender && st.win.new_data_sends > 0 {
                Some(if st.win.rwnd_limited_sends * 2 >= st.win.new_data_sends {
                    "rwnd"
                } else {
                    "cwnd"
                })
            } else {
                None
            },
        )
        .u64("mss_data", Some(mss as u64))
        .u64(
            "w_m_packets",
            st.win.awnd_max.map(|w| w / mss.max(1) as u64),
        )
        .f64(
            "b_packets_per_ack",
            ratio(
                k.acked_bytes_ca as f64 / mss as f64,
                k.advancing_acks_ca as f64,
            ),
        )
        .f64(
            "throughput_pkts",
            if st.ack_seen {
                ratio(k.acked_bytes as f64 / mss as f64, dur)
            } else {
                None
            },
        )
        .u64("goodput_bytes", st.ack_seen.then_some(k.acked_bytes))
        .f64(
            "establishment_s",
            self.life.establishment().map(|n| n as f64 * 1e-9),
        )
        .u64(
            "syn_retransmissions",
            (c.half[0].syn_count > 0).then(|| c.half[0].syn_count as u64 - 1),
        )
        .u64(
            "synack_retransmissions",
            self.life
                .first_synack
                .map(|_| self.life.synacks_same_seq as u64),
        )
        .bool(
            "handshake_refused",
            self.life.first_syn.map(|_| self.life.refused),
        )
        .u64("fin_retransmissions_client", self.life.fin_retx[0] as u64)
        .u64("fin_retransmissions_server", self.life.fin_retx[1] as u64)
        .str(
            "closer",
            rf.map(|(_, w)| if w == Dir::C2S { "client" } else { "server" }),
        )
        .f64(
            "closure_s",
            self.life.closure(c.last_ts).map(|n| n as f64 * 1e-9),
        )
        .u64(
            "acked_bytes",
            st.ack_seen.then(|| {
                // the FIN's sequence number is no byte of the object
                let start = (c.half[d.idx()].syn_count > 0) as i64;
                let end = self.life.fin_rel[d.idx()].unwrap_or(i64::MAX);
                (st.una.min(end) - start).max(0) as u64
            }),
        )
        .bool("interrupted", self.interrupted(c))
        .str("interruption_reason", self.interruption_reason(c))
        .u64("suspensions", self.life.suspensions)
        .u64("suspensions_stalled", self.life.suspensions_stalled)
        .f64(
            "suspension_total",
            Some(self.life.suspension_total as f64 * 1e-9),
        )
        .f64(
            "suspension_max",
            (self.life.suspensions > 0).then_some(self.life.suspension_max as f64 * 1e-9),
        )
        .u64(
            "segment_store_overflow",
            self.streams.iter().map(|s| s.store.overflowed).sum::<u64>(),
        );
    }

    fn interruption_reason(&self, c: &ConnBase) -> Option<&'static str> {
        let d = Self::data_dir(c);
        let st = &self.streams[d.idx()];
        self.end?;
        self.life
            .interruption(st.started && (!st.ack_seen || st.una < st.nxt))
    }

    fn interrupted(&self, c: &ConnBase) -> Option<bool> {
        let (_, open_unacked) = self.end?;
        if self.interruption_reason(c).is_some() {
            Some(true)
        } else if open_unacked {
            None // still open with data in flight when the capture ended: unknown
        } else {
            Some(false)
        }
    }

    /// Values for 1-second bin `bin` (counted from the connection's first packet).
    pub fn write_series_bin(&self, c: &ConnBase, bin: usize, row: &mut Row<'_>) {
        let d = Self::data_dir(c);
        let st = &self.streams[d.idx()];
        let sender = DataVantage::of(self.near, d) == DataVantage::Sender;
        let b = st.bins.get(bin).copied().unwrap_or_default();
        row.u64("goodput_bytes", b.goodput)
            .u64("retransmissions", b.retransmissions as u64)
            .u64("dupacks", b.dupacks as u64)
            .u64("bif_max", (sender && b.bif_n > 0).then_some(b.bif_max))
            .f64(
                "bif_mean",
                (sender && b.bif_n > 0).then(|| b.bif_sum / b.bif_n as f64),
            )
            .u64("awnd_min", (b.awnd_n > 0).then_some(b.awnd_min))
            .f64(
                "awnd_mean",
                (b.awnd_n > 0).then(|| b.awnd_sum / b.awnd_n as f64),
            )
            .u64("rtt_count", b.rtt_n as u64)
            .f64("rtt_min", (b.rtt_n > 0).then_some(b.rtt_min))
            .f64(
                "rtt_mean",
                (b.rtt_n > 0).then(|| b.rtt_sum / b.rtt_n as f64),
            )
            .f64("rtt_max", (b.rtt_n > 0).then_some(b.rtt_max))
            .bool("backoff", b.backoff);
    }
}
