//! The streaming driver: both captures read once, merged by time, matched on the fly.
//!
//! 1. A short prescan finds a *coarse* clock offset (the first packet seen in both captures:
//!    the client's SYN, or a data segment), so the merge can interleave the two files roughly
//!    in real order even when the phone clock is off by hours.
//! 2. The merge always takes the segment with the smaller (coarsely aligned) time. Each
//!    segment goes to its capture's connection tracker, then to its pair's matcher. Matching
//!    does not need exact order: pending packets wait up to `window` seconds for their twin.
//! 3. Memory is bounded by the window for matching state, and by the open connections for
//!    packet logs: a pair whose connections are closed on both sides and idle for two windows
//!    is finalized (metrics computed with the clock fitted so far) and its log freed. A window
//!    is capture time, and a capture can pack any number of packets into it (a broken clock,
//!    a 10-Gbit/s link): above [`MATCH_STATE_BUDGET`] the matcher feeds its metrics early
//!    and, if that is not enough, closes windows early (`Matcher::relieve`, counted in
//!    [`PairResult::budget`]).
//! 4. At the end the clock relation is fitted from every matched packet and the remaining
//!    pairs are finalized with it.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::capture::CaptureReader;
use crate::flow::event::{nanos_to_s, write_event, EVENT_COLUMNS};
use crate::flow::Dir;
use crate::matcher::clock::{ClockEstimator, ClockFit};
use crate::matcher::fate::{record_fates, FrameFates, PairFate, Spans};
use crate::matcher::metrics::{
    spurious_events, tally, write_loss_series, write_metrics, Replay, MATCH_COLUMNS, MATCH_SERIES_COLUMNS,
};
use crate::matcher::pairing::{PairIndex, PairingMethod, SideConn, Tracker};
use crate::matcher::Side;
use crate::table::TableBuilder;
use crate::wire::{decode, Decoded, Nanos, Segment};

const S: Nanos = 1_000_000_000;
/// Segments read from each capture to find the coarse offset.
const PRESCAN: usize = 20_000;
/// A transmission this close to the end of the receiver's capture gets no verdict.
const END_MARGIN: Nanos = 2 * S;
const FIT_EVERY: u64 = 1 << 20;

/// Default bound on the matcher's held packets (bytes, by `Matcher::held_bytes`'s estimate):
/// about 2.4 million packets, twice what the bench pair (1.15 GB, 2.1 M packets in 8 s)
/// holds at its peak. The process's peak stays within about 2.5 times this whatever the
/// captures hold (docs/two-vantage.md, "Memory").
pub const MATCH_STATE_BUDGET: usize = 256 << 20;

/// How far behind the merge settled packets are handed to the metrics when the budget
/// presses, instead of two windows. `PairFate::take` orders by the same coarsely aligned
/// time as the merge and stops at the first packet still pending, so a packet not read yet
/// can only come later in that order than everything taken — if each capture is in time
/// order; this much slack covers the reordering of a capture's own records.
const RELIEF_LAG: Nanos = S / 10;

/// Estimated bytes per held packet: its log entry, and while pending its `fifo` entry and
/// its slot in a map of twins (32 bytes, load factor about one half).
const HELD_PACKET_BYTES: usize = std::mem::size_of::<crate::matcher::fate::Pkt>() + 24 + 64;

/// Settings of a two-vantage run.
#[derive(Clone, Debug)]
pub struct MatchOptions {
    /// How long an unmatched packet waits for its twin before it is settled (seconds). Must
    /// exceed the largest one-way delay plus the error of the coarse offset.
    pub window_s: f64,
    pub client_name: String,
    pub server_name: String,
    /// Matched row ids are `id_base + n`.
    pub id_base: u64,
    /// Key packets by IPv4 ID as well (turn off when a NAT rewrites IP IDs; default off when
    /// timestamps distinguish retransmissions anyway).
    pub use_ip_id: bool,
    /// Finalize closed, idle pairs during the run (bounded memory); off: all at the end.
    pub retire: bool,
    /// Feed a pair's settled packets to its metrics once it holds this many (bounded memory
    /// for long connections); `usize::MAX`: only at the end.
    pub consume_after: usize,
    /// Packets between two sweeps (settling, feeding, retiring).
    pub sweep_every: u64,
    /// Packets per direction handed to the metrics at a time.
    pub feed_chunk: usize,
    /// A pair still holding this many packets at its end gets its replay on a second thread
    /// (see `PIPELINE_MIN`); the metrics are the same either way.
    pub pipeline_min: usize,
    /// Set by the caller to abandon the run (Ctrl-C): the matcher stops reading and skips
    /// the metrics of the pairs it holds; the result is incomplete, for the bin.
    pub cancel: Option<Arc<AtomicBool>>,
    /// Bytes of held packets above which windows close early ([`MATCH_STATE_BUDGET`]).
    pub state_budget: usize,
    /// Keep every judged record's verdict ([`PairResult::fates`], for `packets.fate`).
    pub record_fates: bool,
}

impl Default for MatchOptions {
    fn default() -> Self {
        MatchOptions {
            window_s: 30.0,
            client_name: "client".into(),
            server_name: "server".into(),
            id_base: 0,
            use_ip_id: false,
            retire: true,
            consume_after: 1 << 16,
            sweep_every: 1 << 14,
            feed_chunk: 1 << 15,
            pipeline_min: PIPELINE_MIN,
            cancel: None,
            state_budget: MATCH_STATE_BUDGET,
            record_fates: false,
        }
    }
}

/// Per-side counters.
#[derive(Clone, Debug, Default)]
pub struct SideStats {
    pub packets: u64,
    pub tcp_packets: u64,
    pub first_ts: Option<Nanos>,
    pub last_ts: Option<Nanos>,
    pub error: Option<String>,
}

/// What the state budget cost a run: zero unless a window of capture time held more packets
/// than the budget. Verdicts are exact only when both are zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BudgetCuts {
    /// Times a pair's window was closed early: every packet it held was settled (a packet
    /// whose twin was still to come counts as lost, or of unknown fate near the end of what
    /// was read, and its twin as missed by the other capture) and handed to the metrics.
    pub flushes: u64,
    /// Segments of connections still looking for their partner that were dropped, oldest
    /// first (they are not in that pair's metrics).
    pub dropped: u64,
    /// The largest estimate of the held packets' bytes seen at a sweep.
    pub peak_bytes: u64,
}

/// Everything a two-vantage run produces.
pub struct PairResult {
    /// One row per paired connection and per connection seen in one capture only.
    pub matched: TableBuilder,
    /// `spurious_timeout` events with their cause (flow_id = matched row id).
    pub events: TableBuilder,
    /// M6 per-bin loss rows of the paired connections (flow_id = matched row id).
    pub series: TableBuilder,
    pub stats: [SideStats; 2],
    pub coarse_offset: Nanos,
    pub clock: ClockFit,
    pub pairs: u64,
    pub client_only: u64,
    pub server_only: u64,
    pub budget: BudgetCuts,
    /// Verdict per record of the client's and the server's capture (`MatchOptions::record_fates`;
    /// empty otherwise).
    pub fates: [FrameFates; 2],
}

struct Pair {
    conn: [u32; 2],
    method: PairingMethod,
    /// Reverse this side's direction (the two captures guessed opposite roles).
    flip: [bool; 2],
    fate: PairFate,
    /// The pair's metrics, fed incrementally (created at the first feeding).
    replay: Option<Replay>,
    done: bool,
}

struct Matcher {
    opts: MatchOptions,
    window: Nanos,
    offset: [Nanos; 2],
    trackers: [Tracker; 2],
    index: PairIndex,
    pairs: Vec<Pair>,
    clock: ClockEstimator,
    stats: [SideStats; 2],
    now: Nanos,
    seen: u64,
    /// Clock fit used while streaming, refreshed every `FIT_EVERY` packets (fitting sorts all
    /// delay minima: cheap, but not per sweep on hour-long captures).
    fit_cache: Option<(u64, ClockFit)>,
    matched: TableBuilder,
    events: TableBuilder,
    series: TableBuilder,
    next_id: u64,
    /// Segments buffered by connections that have no partner yet.
    buffered: usize,
    budget: BudgetCuts,
    fates: [FrameFates; 2],
}

impl Matcher {
    fn new(opts: MatchOptions, coarse: Nanos) -> Self {
        Matcher {
            window: (opts.window_s * 1e9) as Nanos,
            next_id: opts.id_base,
            opts,
            offset: [coarse, 0],
            trackers: [Tracker::default(), Tracker::default()],
            index: PairIndex::default(),
            pairs: Vec::new(),
            clock: ClockEstimator::default(),
            stats: [SideStats::default(), SideStats::default()],
            now: Nanos::MIN,
            seen: 0,
            fit_cache: None,
            matched: TableBuilder::new(&[MATCH_COLUMNS]),
            events: TableBuilder::new(&[EVENT_COLUMNS]),
            series: TableBuilder::new(&[MATCH_SERIES_COLUMNS]),
            buffered: 0,
            budget: BudgetCuts::default(),
            fates: Default::default(),
        }
    }

    fn push(&mut self, side: Side, seg: &Segment) {
        let st = &mut self.stats[side.idx()];
        st.tcp_packets += 1;
        st.first_ts = Some(st.first_ts.map_or(seg.ts, |t| t.min(seg.ts)));
        st.last_ts = Some(st.last_ts.map_or(seg.ts, |t| t.max(seg.ts)));
        let t = seg.ts + self.offset[side.idx()];
        self.now = self.now.max(t);
        let pushed = self.trackers[side.idx()].push(seg);
        if pushed.new {
            if let Some((j, method)) = self.index.find_partner(
                side,
                pushed.conn,
                &self.trackers,
                seg,
                self.now,
                self.window,
                self.offset,
            ) {
                self.make_pair(side, pushed.conn, j, method);
            }
        }
        if let Some(p) = self.trackers[side.idx()].conns[pushed.conn as usize].pair {
            self.feed(p as usize, side, pushed.dir, seg);
        }
        let c = &mut self.trackers[side.idx()].conns[pushed.conn as usize];
        match c.pair {
            Some(_) => {}
            None if !c.gave_up => {
                if t - (c.first_ts + self.offset[side.idx()]) > self.window {
                    c.gave_up = true;
                    self.buffered -= std::mem::take(&mut c.buffer).len();
                    self.index.forget(side, pushed.conn, &self.trackers);
                } else {
                    c.buffer.push(*seg);
                    self.buffered += 1;
                }
            }
            None => {}
        }
        self.seen += 1;
        if self.seen.is_multiple_of(self.opts.sweep_every.max(1)) {
            self.sweep();
        }
    }

    fn make_pair(&mut self, side: Side, me: u32, other: u32, method: PairingMethod) {
        let mut conn = [0u32; 2];
        conn[side.idx()] = me;
        conn[side.other().idx()] = other;
        let [a, b] = [&self.trackers[0].conns[conn[0] as usize], &self.trackers[1].conns[conn[1] as usize]];
        let mut flip = [false; 2];
        if a.server.port != b.server.port {
            // Opposite role guesses: trust the side that saw a SYN, else the server capture.
            if !a.roles_from_syn || b.roles_from_syn {
                flip[Side::Client.idx()] = true;
            } else {
                flip[Side::Server.idx()] = true;
            }
        }
        let p = self.pairs.len() as u32;
        self.pairs.push(Pair {
            conn,
            method,
            flip,
            fate: PairFate::new(self.opts.use_ip_id),
            replay: None,
            done: false,
        });
        for s in [Side::Client, Side::Server] {
            let c = &mut self.trackers[s.idx()].conns[conn[s.idx()] as usize];
            c.pair = Some(p);
            let buffered = std::mem::take(&mut c.buffer);
            self.buffered -= buffered.len();
            for seg in &buffered {
                let dir = self.trackers[s.idx()].conns[conn[s.idx()] as usize].dir_of(seg);
                self.feed(p as usize, s, dir, seg);
            }
        }
    }

    fn feed(&mut self, p: usize, side: Side, dir: Dir, seg: &Segment) {
        let pair = &mut self.pairs[p];
        if pair.done {
            return;
        }
        let dir = if pair.flip[side.idx()] { dir.rev() } else { dir };
        if let Some(m) = pair.fate.push(side, dir, seg) {
            match m.dir {
                Dir::S2C => self.clock.add_down(m.tx_ts, m.rx_ts),
                Dir::C2S => self.clock.add_up(m.tx_ts, m.rx_ts),
            }
        }
    }

    fn sweep(&mut self) {
        let cutoff = self.now - self.window;
        for pair in self.pairs.iter_mut().filter(|p| !p.done && p.fate.pending_len() > 0) {
            pair.fate.settle(cutoff, self.offset);
        }
        let big: Vec<usize> = (0..self.pairs.len())
            .filter(|&i| !self.pairs[i].done && self.pairs[i].fate.held() >= self.opts.consume_after)
            .collect();
        if !big.is_empty() {
            let sf = self.streaming_fit();
            let fit = self.usable_fit(&sf);
            let spans = self.spans(&fit);
            let upto = self.now - 2 * self.window;
            for i in big {
                self.feed_settled(i, upto, false, &fit, &spans);
            }
        }
        let held = self.held_bytes();
        self.budget.peak_bytes = self.budget.peak_bytes.max(held as u64);
        if held > self.opts.state_budget {
            self.relieve();
        }
        if !self.opts.retire {
            return;
        }
        let idle = self.now - 2 * self.window;
        let ready: Vec<usize> = (0..self.pairs.len())
            .filter(|&i| {
                let p = &self.pairs[i];
                !p.done
                    && [Side::Client, Side::Server].iter().all(|s| {
                        let c = &self.trackers[s.idx()].conns[p.conn[s.idx()] as usize];
                        c.closed() && c.last_ts + self.offset[s.idx()] < idle
                    })
            })
            .collect();
        if ready.is_empty() {
            return;
        }
        let fit = self.streaming_fit();
        for i in ready {
            self.finish_pair(i, &fit);
        }
    }

    /// Estimated bytes of the packets held: the pairs' logs and the unpaired connections'
    /// buffers.
    fn held_bytes(&self) -> usize {
        let held: usize = self.pairs.iter().filter(|p| !p.done).map(|p| p.fate.held()).sum();
        held * HELD_PACKET_BYTES + self.buffered * std::mem::size_of::<Segment>()
    }

    /// Bring the held packets down to half the budget, in three steps (docs/two-vantage.md,
    /// "Memory"): the buffers of connections still looking for their partner lose their
    /// oldest halves, biggest first (a partner that shows up later is matched from what is
    /// left); the pairs holding most hand their settled packets to the metrics a tenth of a
    /// second behind the merge instead of two windows (no verdict changes); and only then do
    /// they close their window now, every packet settled. The first and last steps change
    /// verdicts and are counted in `budget`.
    fn relieve(&mut self) {
        let target = self.opts.state_budget / 2;
        let mut held = self.held_bytes();
        let mut bufs: Vec<(usize, Side, usize)> = [Side::Client, Side::Server]
            .into_iter()
            .flat_map(|s| {
                self.trackers[s.idx()].conns.iter().enumerate().filter_map(move |(i, c)| {
                    (c.pair.is_none() && !c.buffer.is_empty()).then_some((c.buffer.len(), s, i))
                })
            })
            .collect();
        bufs.sort_unstable_by_key(|b| std::cmp::Reverse(b.0));
        for (len, side, i) in bufs {
            if held <= target {
                return;
            }
            let c = &mut self.trackers[side.idx()].conns[i];
            let drop = len.div_ceil(2);
            c.buffer.drain(..drop);
            c.buffer.shrink_to_fit();
            self.buffered -= drop;
            self.budget.dropped += drop as u64;
            held -= drop * std::mem::size_of::<Segment>();
        }
        let mut big: Vec<(usize, usize)> =
            self.pairs.iter().enumerate().filter(|(_, p)| !p.done).map(|(i, p)| (p.fate.held(), i)).collect();
        big.sort_unstable_by_key(|b| std::cmp::Reverse(b.0));
        if big.is_empty() {
            return;
        }
        let sf = self.streaming_fit();
        let fit = self.usable_fit(&sf);
        let spans = self.spans(&fit);
        // What costs no verdict first, then closing windows.
        for close in [false, true] {
            for &(_, i) in &big {
                if held <= target {
                    return;
                }
                held -= self.relieve_pair(i, close, &fit, &spans) * HELD_PACKET_BYTES;
            }
        }
    }

    /// One step of `relieve` on pair `i`: its settled packets to the metrics `RELIEF_LAG`
    /// behind the merge, or (`close`) its window closed now. Returns the packets it let go.
    fn relieve_pair(&mut self, i: usize, close: bool, fit: &ClockFit, spans: &Spans) -> usize {
        let before = self.pairs[i].fate.held();
        if !close {
            self.feed_settled(i, self.now - RELIEF_LAG, false, fit, spans);
        } else if before > 0 {
            self.pairs[i].fate.settle(Nanos::MAX, self.offset);
            self.feed_settled(i, Nanos::MAX, true, fit, spans);
            self.budget.flushes += 1;
        }
        before - self.pairs[i].fate.held()
    }

    /// Hand pair `i`'s settled packets up to `upto` (merged time; everything with `last`) to
    /// its metrics, in chunks.
    fn feed_settled(&mut self, i: usize, upto: Nanos, last: bool, fit: &ClockFit, spans: &Spans) {
        let (lag, chunk) = (self.window, self.opts.feed_chunk.max(1));
        let (record, fates) = (self.opts.record_fates, &mut self.fates);
        let p = &mut self.pairs[i];
        let payload = p.fate.payload;
        let trackers = &self.trackers;
        let replay = p.replay.get_or_insert_with(|| new_replay(trackers, p.conn, payload, lag));
        let snd = replay.sender();
        loop {
            let batch = p.fate.take(upto, self.offset, spans, last, chunk, snd);
            if batch[0].is_empty() && batch[1].is_empty() {
                break;
            }
            if record {
                record_fates(fates, &batch);
            }
            replay.feed(&batch, fit);
        }
    }

    /// Capture span of `side` on the clock of `to`.
    fn span_on(&self, side: Side, to: Side, fit: &ClockFit) -> (Nanos, Nanos) {
        let st = &self.stats[side.idx()];
        let (a, b) = (st.first_ts.unwrap_or(Nanos::MIN / 2), st.last_ts.unwrap_or(Nanos::MAX / 2));
        let map = |t: Nanos| match (side, to) {
            (Side::Client, Side::Server) => fit.to_server(t),
            (Side::Server, Side::Client) => fit.to_client(t),
            _ => t,
        };
        (map(a), map(b))
    }

    fn streaming_fit(&mut self) -> ClockFit {
        match self.fit_cache {
            Some((at, fit)) if self.seen - at < FIT_EVERY => fit,
            _ => {
                let fit = self.clock.fit();
                self.fit_cache = Some((self.seen, fit));
                fit
            }
        }
    }

    /// A fit without samples cannot map clocks better than the coarse offset.
    fn usable_fit(&self, fit: &ClockFit) -> ClockFit {
        if fit.known() {
            *fit
        } else {
            ClockFit { offset_s: self.offset[0] as f64 * 1e-9, ..ClockFit::none() }
        }
    }

    fn spans(&self, fit: &ClockFit) -> Spans {
        Spans {
            rx: [
                self.span_on(Side::Server, Side::Client, fit), // c2s: receiver = server, on the client clock
                self.span_on(Side::Client, Side::Server, fit), // s2c: receiver = client, on the server clock
            ],
            tx: [self.span_on(Side::Client, Side::Server, fit), self.span_on(Side::Server, Side::Client, fit)],
            margin: END_MARGIN,
        }
    }

    fn finish_pair(&mut self, i: usize, fit: &ClockFit) {
        let fit = self.usable_fit(fit);
        let spans = self.spans(&fit);
        let id = self.next_id;
        self.next_id += 1;
        let lag = self.window;
        let chunk = self.opts.feed_chunk.max(1);
        let (record, fates) = (self.opts.record_fates, &mut self.fates);
        let pair = &mut self.pairs[i];
        pair.fate.settle(Nanos::MAX, self.offset);
        let payload = pair.fate.payload;
        let mut replay = pair.replay.take().unwrap_or_else(|| new_replay(&self.trackers, pair.conn, payload, lag));
        let snd = replay.sender();
        let offset = self.offset;
        let pipelined = pair.fate.held() >= self.opts.pipeline_min;
        // in chunks: the copies handed to the replay stay small
        let mut take = || {
            let batch = pair.fate.take(Nanos::MAX, offset, &spans, true, chunk, snd);
            if record {
                record_fates(fates, &batch);
            }
            (!(batch[0].is_empty() && batch[1].is_empty())).then_some(batch)
        };
        if pipelined {
            replay = feed_pipelined(replay, &fit, take);
        } else {
            while let Some(batch) = take() {
                replay.feed(&batch, &fit);
            }
        }
        let (cc, sc) = (
            &self.trackers[0].conns[pair.conn[0] as usize],
            &self.trackers[1].conns[pair.conn[1] as usize],
        );
        // M18: server's receipt of the handshake ACK - client's first SYN on the server clock.
        let establishment = match (cc.first_syn_ts, sc.hs_ack_ts) {
            (Some(syn), Some(ack)) => Some(nanos_to_s(ack - fit.to_server(syn))),
            _ => None,
        };
        let mut m = replay.finish(establishment);
        if payload == [0, 0] {
            m.data_dir = None;
        }
        {
            let mut row = self.matched.row();
            write_identity(&mut row, id, pair.method, &self.opts, Some(cc), Some(sc));
            write_metrics(&mut m, &fit, &mut row);
        }
        for e in spurious_events(&m) {
            write_event(&mut self.events, id, &e);
        }
        write_loss_series(&m, id, &mut self.series);
        pair.done = true;
        pair.fate = PairFate::default();
    }

    fn cancelled(&self) -> bool {
        self.opts.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed))
    }

    fn finish(mut self, coarse: Nanos) -> PairResult {
        let fit = self.clock.fit();
        let cancelled = self.cancelled();
        for i in 0..self.pairs.len() {
            if !self.pairs[i].done && !cancelled {
                self.finish_pair(i, &fit);
            }
        }
        let mut only = [0u64; 2];
        for side in [Side::Client, Side::Server] {
            for c in &self.trackers[side.idx()].conns {
                if c.pair.is_some() {
                    continue;
                }
                only[side.idx()] += 1;
                let id = self.next_id;
                self.next_id += 1;
                let mut row = self.matched.row();
                let (a, b) = if side == Side::Client { (Some(c), None) } else { (None, Some(c)) };
                write_identity(&mut row, id, PairingMethod::only(side), &self.opts, a, b);
            }
        }
        PairResult {
            matched: self.matched,
            events: self.events,
            series: self.series,
            stats: self.stats,
            coarse_offset: coarse,
            clock: fit,
            pairs: self.pairs.len() as u64,
            client_only: only[0],
            server_only: only[1],
            budget: self.budget,
            fates: self.fates,
        }
    }
}

/// Packets a pair must still hold at its end for its replay to get a thread of its own.
/// A pair shorter than the window is replayed whole after the captures end, when the
/// engines are done and a core is free: taking the settled packets (`PairFate::take`, about
/// a quarter of that work) then overlaps with the replay. Below this, a thread costs more
/// than it saves.
const PIPELINE_MIN: usize = 1 << 17;

/// Feed the batches `take` hands out to `replay`: the ordered part of the replay
/// ([`Replay::feed_ordered`]) on a second thread, the order-free part ([`tally`]) here, next
/// to the taking; handed over one at a time (two batches alive: memory). The same batches
/// in the same order as [`Replay::feed`] in line, so the same metrics.
fn feed_pipelined(
    mut replay: Replay,
    fit: &ClockFit,
    mut take: impl FnMut() -> Option<[Vec<crate::matcher::fate::Pkt>; 2]>,
) -> Replay {
    let fit = *fit;
    let mut counts = replay.take_tally();
    let dir = replay.dir();
    let mut replay = std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<[Vec<crate::matcher::fate::Pkt>; 2]>(0);
        let feeder = std::thread::Builder::new()
            .name("hsrtcp-replay".into())
            .spawn_scoped(scope, move || {
                for batch in rx {
                    replay.feed_ordered(&batch, &fit);
                }
                replay
            })
            .expect("spawn replay thread");
        while let Some(batch) = take() {
            tally(&mut counts, dir, &batch);
            if tx.send(batch).is_err() {
                break; // the feeder panicked: join() below says so
            }
        }
        drop(tx);
        feeder.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
    });
    replay.put_tally(counts);
    replay
}

/// First packet of the connection in the data sender's capture (where M6 bins start).
fn sender_first_ts(trackers: &[Tracker; 2], conn: [u32; 2], payload: [u64; 2]) -> Nanos {
    let snd = crate::matcher::fate::sender_side(Replay::data_dir(payload));
    trackers[snd.idx()].conns[conn[snd.idx()] as usize].first_ts
}

/// The replay of pair `conn`'s data direction, SACK as the sender's capture saw the SYNs.
fn new_replay(trackers: &[Tracker; 2], conn: [u32; 2], payload: [u64; 2], lag: Nanos) -> Replay {
    let snd = crate::matcher::fate::sender_side(Replay::data_dir(payload));
    let sack = trackers[snd.idx()].conns[conn[snd.idx()] as usize].sack_in_use();
    Replay::new(Replay::data_dir(payload), lag, sender_first_ts(trackers, conn, payload), sack)
}

fn write_identity(
    row: &mut crate::table::Row<'_>,
    id: u64,
    method: PairingMethod,
    opts: &MatchOptions,
    cc: Option<&SideConn>,
    sc: Option<&SideConn>,
) {
    row.u64("flow_id", id)
        .str("pairing", Some(method.as_str()))
        .str("client_capture", Some(&opts.client_name))
        .str("server_capture", Some(&opts.server_name));
    // The connection as each capture shows it (NAT may differ): the same five columns, prefixed.
    const CV: [&str; 5] = ["cv_client_addr", "cv_client_port", "cv_server_addr", "cv_server_port", "cv_epoch"];
    const SV: [&str; 5] = ["sv_client_addr", "sv_client_port", "sv_server_addr", "sv_server_port", "sv_epoch"];
    for (names, side) in [(CV, cc), (SV, sc)] {
        if let Some(c) = side {
            row.str(names[0], Some(&c.client.addr.to_string()))
                .u64(names[1], c.client.port as u64)
                .str(names[2], Some(&c.server.addr.to_string()))
                .u64(names[3], c.server.port as u64)
                .u64(names[4], c.epoch as u64);
        }
    }
}

/// The first packet both captures show, as a coarse clock offset (server − client): the
/// client's SYN by ISN, else a data segment by (seq, length, TSval).
pub fn coarse_offset(cli: &[Segment], srv: &[Segment]) -> Option<Nanos> {
    use rustc_hash::FxHashMap;
    let syn_key = |s: &Segment| (s.flags.syn() && !s.flags.ack()).then_some((s.seq, s.dport));
    let syns: FxHashMap<(u32, u16), Nanos> = srv.iter().filter_map(|s| syn_key(s).map(|k| (k, s.ts))).rev().collect();
    if let Some(d) = cli.iter().find_map(|s| syn_key(s).and_then(|k| syns.get(&k)).map(|&t| t - s.ts)) {
        return Some(d);
    }
    let data_key = |s: &Segment| (s.payload_len > 0).then_some((s.seq, s.payload_len, s.options.timestamp, s.ack));
    let data: FxHashMap<_, Nanos> = srv.iter().filter_map(|s| data_key(s).map(|k| (k, s.ts))).rev().collect();
    cli.iter().find_map(|s| data_key(s).and_then(|k| data.get(&k)).map(|&t| t - s.ts))
}

/// Match two in-memory segment streams (tests, and callers with their own readers).
/// `client` and `server` must each be in capture order.
pub fn match_segments(
    client: impl IntoIterator<Item = Segment>,
    server: impl IntoIterator<Item = Segment>,
    opts: MatchOptions,
) -> PairResult {
    let cli: Vec<Segment> = client.into_iter().collect();
    let srv: Vec<Segment> = server.into_iter().collect();
    let (nc, ns) = (cli.len() as u64, srv.len() as u64);
    let mut r = match_batches(std::iter::once(Arc::new(cli)), std::iter::once(Arc::new(srv)), opts);
    r.stats[0].packets = nc;
    r.stats[1].packets = ns;
    r
}

/// Segments in batches of this many (callers that hand over one segment at a time).
const BATCH: usize = 2048;

/// One segment at a time → batches (one copy each, as the segment iterator made anyway).
fn batched(mut it: impl Iterator<Item = Segment>) -> impl Iterator<Item = Arc<Vec<Segment>>> {
    std::iter::from_fn(move || {
        let b: Vec<Segment> = it.by_ref().take(BATCH).collect();
        (!b.is_empty()).then(|| Arc::new(b))
    })
}

/// A read position in a stream of batches; the merge reads segments in place.
struct Cursor<I> {
    batches: I,
    cur: Arc<Vec<Segment>>,
    pos: usize,
}

impl<I: Iterator<Item = Arc<Vec<Segment>>>> Cursor<I> {
    fn new(batches: I) -> Self {
        Cursor { batches, cur: Arc::new(Vec::new()), pos: 0 }
    }

    /// Make a segment available at `pos`; false at the end of the stream.
    fn fill(&mut self) -> bool {
        while self.pos >= self.cur.len() {
            match self.batches.next() {
                Some(b) => {
                    self.cur = b;
                    self.pos = 0;
                }
                None => return false,
            }
        }
        true
    }
}

/// Feed both streams to the matcher in (coarsely aligned) time order: the segment with the
/// smaller time first, the client's on a tie. Segments are read in place in their batches
/// (a segment is ~100 bytes: copying each one out cost the matcher thread ~100 instructions
/// a packet).
fn merge(m: &mut Matcher, a: impl Iterator<Item = Arc<Vec<Segment>>>, b: impl Iterator<Item = Arc<Vec<Segment>>>) {
    let (mut a, mut b) = (Cursor::new(a), Cursor::new(b));
    let off = m.offset[0]; // fixed for the run (the coarse offset)
    loop {
        if m.cancelled() {
            return;
        }
        let (has_a, has_b) = (a.fill(), b.fill());
        if !(has_a && has_b) {
            // One stream ended: the rest of the other in order.
            if has_a {
                for s in &a.cur[a.pos..] {
                    m.push(Side::Client, s);
                }
                a.pos = a.cur.len();
            } else if has_b {
                for s in &b.cur[b.pos..] {
                    m.push(Side::Server, s);
                }
                b.pos = b.cur.len();
            } else {
                return;
            }
            continue;
        }
        let (sa, sb) = (Arc::clone(&a.cur), Arc::clone(&b.cur));
        let (mut i, mut j) = (a.pos, b.pos);
        while i < sa.len() && j < sb.len() {
            if sa[i].ts + off <= sb[j].ts {
                m.push(Side::Client, &sa[i]);
                i += 1;
            } else {
                m.push(Side::Server, &sb[j]);
                j += 1;
            }
        }
        a.pos = i;
        b.pos = j;
    }
}

/// The first `PRESCAN` segments of a stream of batches (for the coarse offset), and the
/// batches read to get them (to be matched from the start).
fn prescan(it: &mut impl Iterator<Item = Arc<Vec<Segment>>>) -> (Vec<Segment>, Vec<Arc<Vec<Segment>>>) {
    let (mut pre, mut held) = (Vec::new(), Vec::new());
    while pre.len() < PRESCAN {
        let Some(b) = it.next() else { break };
        pre.extend_from_slice(&b[..b.len().min(PRESCAN - pre.len())]);
        held.push(b);
    }
    (pre, held)
}

/// Match two streams of decoded segments, each in capture order. The same as
/// [`match_batches`] with segments handed over one at a time.
pub fn match_streams(
    client: impl Iterator<Item = Segment>,
    server: impl Iterator<Item = Segment>,
    opts: MatchOptions,
) -> PairResult {
    match_batches(batched(client), batched(server), opts)
}

/// Match two streams of batches of decoded segments, each in capture order (a capture's
/// batches as its flow engine reads them: [`crate::stream::SegmentStream::open_tapped`] and
/// [`crate::stream::Tapped::batches`]), so a two-vantage run decodes each file once and the
/// matcher reads the segments where the reader put them. The same as [`analyze_pair`] on
/// the files the streams come from, except that `stats[side].packets` and `.error` are the
/// caller's to fill in (the readers know them).
pub fn match_batches(
    mut client: impl Iterator<Item = Arc<Vec<Segment>>>,
    mut server: impl Iterator<Item = Arc<Vec<Segment>>>,
    opts: MatchOptions,
) -> PairResult {
    let (pre_c, held_c) = prescan(&mut client);
    let (pre_s, held_s) = prescan(&mut server);
    let coarse = coarse_offset(&pre_c, &pre_s).unwrap_or(0);
    drop((pre_c, pre_s));
    let mut m = Matcher::new(opts, coarse);
    merge(&mut m, held_c.into_iter().chain(client), held_s.into_iter().chain(server));
    m.finish(coarse)
}

/// Segments of one capture file; stops (and remembers the error) at the first read error.
struct FileSegments {
    reader: Option<CaptureReader>,
    packets: u64,
    error: Option<String>,
}

impl FileSegments {
    fn open(path: &Path) -> Self {
        match CaptureReader::open(path) {
            Ok(r) => FileSegments { reader: Some(r), packets: 0, error: None },
            Err(e) => FileSegments { reader: None, packets: 0, error: Some(e.to_string()) },
        }
    }
}

impl Iterator for FileSegments {
    type Item = Segment;
    fn next(&mut self) -> Option<Segment> {
        let r = self.reader.as_mut()?;
        loop {
            match r.next_frame() {
                Ok(Some(frame)) => {
                    self.packets += 1;
                    if let Decoded::Tcp(mut seg) = decode(&frame) {
                        seg.frame = frame.index as u32;
                        return Some(seg);
                    }
                }
                Ok(None) => return None,
                Err(e) => {
                    self.error = Some(e.to_string());
                    self.reader = None;
                    return None;
                }
            }
        }
    }
}

/// Analyze a client-side and a server-side capture of the same connections together.
/// Never fails: read errors are in `stats[side].error`, with the results up to that point.
pub fn analyze_pair(client: &Path, server: &Path, opts: MatchOptions) -> PairResult {
    let pre_c: Vec<Segment> = FileSegments::open(client).take(PRESCAN).collect();
    let pre_s: Vec<Segment> = FileSegments::open(server).take(PRESCAN).collect();
    let coarse = coarse_offset(&pre_c, &pre_s).unwrap_or(0);
    drop((pre_c, pre_s));
    let mut m = Matcher::new(opts, coarse);
    let mut a = FileSegments::open(client);
    let mut b = FileSegments::open(server);
    merge(&mut m, batched(&mut a), batched(&mut b));
    m.stats[0].packets = a.packets;
    m.stats[0].error = a.error.take();
    m.stats[1].packets = b.packets;
    m.stats[1].error = b.error.take();
    m.finish(coarse)
}
