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

pub mod columns;
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
use crate::table::Row;
use crate::wire::{Nanos, Segment};

use kinds::{DataVantage, RetransClass};
use lifecycle::{Lifecycle, GIVE_UP};
use retrans::{Ctx, DataSeg};
use rtt::TsRing;

/// Echo samples per side needed before the timestamp test decides the vantage.
const ECHO_SAMPLES_FOR_VANTAGE: u32 = 3;
/// Echo delays must reach this (4 ticks of a 1-ms TSval clock) to tell the vantage.
const TS_TICKS_FOR_VANTAGE: Nanos = 4_000_000;
/// Handshake gaps must differ by this factor to tell the vantage.
const CLEAR_RATIO: i64 = 4;
/// Segment size assumed when neither an MSS option nor any payload was seen.
const DEFAULT_MSS: i64 = 1460;

pub use columns::FLOW_COLUMNS;
/// Engine columns of `series` (per 1-s bin, data direction), declared in the table registry.
pub use crate::table::registry::ENGINE_SERIES_COLUMNS as SERIES_COLUMNS;

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
    /// `DataVantage::of(near, d)` per direction, kept with `near` ([`Engine::fix_near`]):
    /// every segment asks for it once or twice.
    vantages: [DataVantage; 2],
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
                self.fix_near(near_of(v), "given");
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
            let stalled = st.stalled();
            self.life.delivery(ts, st.una, stalled);
            let streams = &self.streams;
            self.after_silence = self.life.gap(ts, || streams.rtt().est.srtt, stalled, ev);
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
        let vantage = self.vantages[other.idx()];
        let (st, rtt) = self.streams.with_rtt(other.idx());
        st.on_window(c.first_ts, other, ts, seg.window, shift, ev);
        // (the ACK field of a data segment, unchanged since the last ACK: 95 % of the
        // segments of a bulk transfer)
        if n == 0 && !pure && st.repeats_last_ack(a, seg.window) {
            st.on_repeated_ack(c.first_ts, vantage, ts, seg.window);
            return;
        }
        let mut x = Ctx::new(c.first_ts, vantage, sack, other, shift.unwrap_or(0), rtt, ev, false);
        st.on_ack(&mut x, a, ts, seg.window, pure, &blocks[..n], seg.options.timestamp);
    }

    /// A segment without payload: only pure segments of a direction that sent data, below
    /// its left edge, can be window probes.
    #[inline]
    fn empty_segment(&mut self, c: &ConnBase, seg: &Segment, dir: Dir, rel_seq: i64, sack: bool, ev: &mut Vec<Event>) {
        let st = &self.streams[dir.idx()];
        if !st.started || rel_seq >= st.una || seg.flags.syn() || seg.flags.fin() || seg.flags.rst() {
            return;
        }
        let vantage = self.vantages[dir.idx()];
        let (st, rtt) = self.streams.with_rtt(dir.idx());
        let mut x = Ctx::new(c.first_ts, vantage, sack, dir, 0, rtt, ev, false);
        st.on_empty(&mut x, rel_seq, seg.ts);
    }

    /// The data half: the segment's payload in its direction's stream; a loss pattern
    /// found there may decide the vantage.
    #[inline]
    fn data_half(&mut self, c: &ConnBase, seg: &Segment, dir: Dir, rel_seq: i64, sack: bool, ev: &mut Vec<Event>) {
        let s = rel_seq + seg.flags.syn() as i64;
        let mss = self.mss_for(c, dir);
        let vantage = self.vantages[dir.idx()];
        let shift = c.wscale(dir.rev()).unwrap_or(0);
        // one lookup of the stream for both uses (a fresh stream reads as an absent one)
        let (st, rtt) = self.streams.with_rtt(dir.idx());
        let peer_zero = st.win.zero_now();
        let mut x = Ctx::new(c.first_ts, vantage, sack, dir, shift, rtt, ev, self.after_silence);
        st.on_data(&mut x, DataSeg { s, seg }, peer_zero, mss);
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
        self.fix_near(near, source);
        self.handshake_sample();
        let first = self.first_ts;
        let (st, book) = self.streams.with_rtt(near.idx());
        for (ts, rtt) in book.take_held(near) {
            book.sample(RttMethod::Ack, near, ts, rtt, Some((&mut st.bins, first)));
        }
    }

    /// Set the vantage and what follows from it per direction (given, or [`Engine::decide`]).
    fn fix_near(&mut self, near: Dir, source: &'static str) {
        self.near = Some(near);
        self.near_source = Some(source);
        for d in [Dir::C2S, Dir::S2C] {
            self.vantages[d.idx()] = DataVantage::of(self.near, d);
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
        self.life.delivery_end(capture_end, st.stalled());
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

    /// This connection's engine columns of `flows`, group by group (columns.rs).
    pub fn write_flow(&self, c: &ConnBase, row: &mut Row<'_>) {
        let d = Self::data_dir(c);
        let st = &self.streams[d.idx()];
        let vs = DataVantage::of(self.near, d);
        let v = columns::View {
            e: self,
            c,
            d,
            st,
            k: &st.c,
            book: self.streams.rtt(),
            vs,
            sender: vs == DataVantage::Sender,
            known: vs.known(),
            mss: self.mss_for(c, d),
        };
        for g in columns::GROUPS {
            (g.write)(&v, row);
        }
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
                (b.awnd_n > 0).then(|| b.awnd_sum as f64 / b.awnd_n as f64),
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
