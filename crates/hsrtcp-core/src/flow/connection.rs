//! One TCP connection as seen from one capture point: identity, roles, handshake options,
//! per-direction volumes and per-second bins. The behaviour engine ([`super::engine`]) runs
//! alongside and reads this state through [`ConnBase`].

use crate::flow::engine::series::{Runs, SILENCE_WITHOUT_ROWS};
use crate::flow::engine::Engine;
use crate::flow::event::{Dir, Event};
use crate::flow::key::{roles_of, Endpoint};
use crate::flow::seq::SeqSpace;
use crate::wire::{Nanos, Segment, TcpOptions};

pub const NANOS_PER_S: i64 = 1_000_000_000;

/// What one side sent, as observed at the capture point.
#[derive(Clone, Debug, Default)]
pub struct Half {
    /// Sequence space of the bytes this side sends (created at its first segment, or at the
    /// first ACK from the other side if that comes first).
    pub seq: Option<SeqSpace>,
    /// What this side's SYN (or SYN-ACK) announced, if captured. Recorded by the connection
    /// together with what follows from it ([`ConnBase::wscale`], [`ConnBase::mss`]).
    pub syn: Option<SynOptions>,
    pub syn_seq: Option<u32>,
    pub syn_count: u32,
    pub packets: u64,
    pub payload_bytes: u64,
    pub fin_count: u32,
    pub first_fin_ts: Option<Nanos>,
    pub rst_count: u32,
    /// Segments carrying an MPTCP option (kind 30).
    pub mptcp_packets: u64,
    /// Segments carrying TCP timestamps.
    pub ts_packets: u64,
    /// Payload bytes per 1-second bin since the connection's first packet (docs/metrics.md M3).
    pub bins: Runs<u64>,
    /// Segments with an impossible header (SYN with FIN or RST, data offset past the packet).
    pub malformed: u64,
}

/// What a SYN announced: the handshake options the analysis reads. Kept instead of the whole
/// [`TcpOptions`] (96 bytes with room for SACK blocks and an MPTCP option) because every
/// connection holds two, and a scan's connections hold nothing else worth a byte.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SynOptions {
    pub mss: Option<u16>,
    pub wscale: Option<u8>,
    pub sack_permitted: bool,
    /// The SYN carried a TCP timestamps option (RFC 7323).
    pub timestamps: bool,
}

impl SynOptions {
    pub fn of(o: &TcpOptions) -> Self {
        SynOptions { mss: o.mss, wscale: o.wscale, sack_permitted: o.sack_permitted, timestamps: o.timestamp.is_some() }
    }
}

/// The connection state every analysis layer may read.
#[derive(Clone, Debug)]
pub struct ConnBase {
    pub flow_id: u64,
    /// 0 for the first connection on this 4-tuple in the capture, then 1, 2, …
    pub epoch: u32,
    pub client: Endpoint,
    pub server: Endpoint,
    /// True when the opener was identified from a SYN; false when roles were guessed
    /// (capture started mid-connection: the higher port is taken as the client).
    pub roles_from_syn: bool,
    pub half: [Half; 2],
    pub first_ts: Nanos,
    pub last_ts: Nanos,
    /// Bins [from, to) inside silences longer than [`SILENCE_WITHOUT_ROWS`] (no packet in
    /// either direction): they get no `series` rows. Usually empty.
    pub silences: Vec<(usize, usize)>,
    /// Where the capture was taken, when the caller knows it (CaptureInfo.vantage). The
    /// engine infers it from the handshake or timestamp echoes when this is `None`.
    pub vantage: Option<Vantage>,
    /// [`ConnBase::wscale`] and [`ConnBase::mss`] per direction, worked out from the SYN
    /// options when a SYN is recorded: the engine asks for them several times a packet
    /// (reading them out of the optional options each time cost 6 M instructions on the
    /// bench capture).
    scale: [Option<u8>; 2],
    announced_mss: [Option<u16>; 2],
}

/// The host a capture was taken on (or next to).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vantage {
    Client,
    Server,
}

impl Vantage {
    /// "client" / "server" (anything else: `None`).
    pub fn parse(s: &str) -> Option<Vantage> {
        match s {
            "client" => Some(Vantage::Client),
            "server" => Some(Vantage::Server),
            _ => None,
        }
    }
}

impl ConnBase {
    /// Both SYN and SYN-ACK were captured.
    pub fn handshake_seen(&self) -> bool {
        self.half[0].syn.is_some() && self.half[1].syn.is_some()
    }

    /// Window scale shift applied to windows *sent by* `dir`'s sender (RFC 7323 §2.3):
    /// learned only from a captured handshake; `None` when unknown, never assumed.
    #[inline]
    pub fn wscale(&self, dir: Dir) -> Option<u8> {
        self.scale[dir.idx()]
    }

    /// MSS announced by `dir`'s sender in its SYN.
    #[inline]
    pub fn mss(&self, dir: Dir) -> Option<u16> {
        self.announced_mss[dir.idx()]
    }

    /// Record the options of `dir`'s first SYN and what follows from them.
    fn learn_syn(&mut self, dir: Dir, options: &TcpOptions) {
        self.half[dir.idx()].syn = Some(SynOptions::of(options));
        self.announced_mss[dir.idx()] = options.mss;
        if let (Some(a), Some(b)) = (&self.half[0].syn, &self.half[1].syn) {
            // Scaling is on only when both SYNs offered it; then each side's own shift
            // applies (at most 14), else windows are taken as they are.
            self.scale = match (a.wscale, b.wscale) {
                (Some(x), Some(y)) => [Some(x.min(14)), Some(y.min(14))],
                _ => [Some(0), Some(0)],
            };
        }
    }

    pub fn sack_permitted(&self) -> Option<bool> {
        if !self.handshake_seen() {
            return None;
        }
        Some(self.half.iter().all(|h| h.syn.as_ref().is_some_and(|o| o.sack_permitted)))
    }

    /// Timestamps in use: from the handshake when captured, else from what the packets carry.
    pub fn timestamps(&self) -> Option<bool> {
        if self.handshake_seen() {
            return Some(self.half.iter().all(|h| h.syn.as_ref().is_some_and(|o| o.timestamps)));
        }
        if self.half.iter().any(|h| h.ts_packets > 0) {
            Some(true)
        } else {
            None
        }
    }

    /// The side that sent more payload bytes (the bulk-data sender), if any payload was seen.
    pub fn data_dir(&self) -> Option<Dir> {
        let (c, s) = (self.half[0].payload_bytes, self.half[1].payload_bytes);
        match (c, s) {
            (0, 0) => None,
            _ if s >= c => Some(Dir::S2C),
            _ => Some(Dir::C2S),
        }
    }

    /// A RST was seen, or both sides sent FIN.
    pub fn closed(&self) -> bool {
        self.half.iter().any(|h| h.rst_count > 0) || self.half.iter().all(|h| h.fin_count > 0)
    }

    /// How the connection ended as far as this capture shows.
    pub fn end_reason(&self) -> &'static str {
        if self.half.iter().any(|h| h.rst_count > 0) {
            "rst"
        } else if self.half.iter().all(|h| h.fin_count > 0) {
            "fin"
        } else if self.half.iter().any(|h| h.fin_count > 0) {
            "half_closed"
        } else {
            "open"
        }
    }

    /// Number of 1-second bins spanned from the first to the last packet.
    pub fn bin_count(&self) -> usize {
        self.bin_of(self.last_ts) + 1
    }

    /// The 1-second bin `ts` falls in (times before the first packet: bin 0).
    pub fn bin_of(&self, ts: Nanos) -> usize {
        ((ts.max(self.first_ts) - self.first_ts) / NANOS_PER_S) as usize
    }

    /// The bins of the connection that get `series` rows, as ranges in order: all of them
    /// but those inside silences longer than [`SILENCE_WITHOUT_ROWS`].
    pub fn row_bins(&self) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
        let ends = self.silences.iter().map(|s| s.0).chain([self.bin_count()]);
        let starts = [0].into_iter().chain(self.silences.iter().map(|s| s.1));
        starts.zip(ends).filter(|(a, b)| a < b).map(|(a, b)| a..b)
    }

    /// Real length of bin `bin` in seconds: 1 but for the last, which ends at the last packet
    /// (bins start at the first packet); `None` when it has no length (the last packet on
    /// its first instant).
    pub fn bin_seconds(&self, bin: usize) -> Option<f64> {
        let start = self.first_ts + bin as i64 * NANOS_PER_S;
        let len = (self.last_ts - start).min(NANOS_PER_S);
        (len > 0).then(|| len as f64 * 1e-9)
    }

    /// A packet at `ts` ends a silence longer than [`SILENCE_WITHOUT_ROWS`]: the bins strictly
    /// between the last packet's and this one's get no rows.
    #[cold]
    fn silence_until(&mut self, ts: Nanos) {
        let (from, to) = (self.bin_of(self.last_ts) + 1, self.bin_of(ts));
        if to > from {
            self.silences.push((from, to));
        }
    }

    /// Relative sequence number of a segment in its own direction (wrap-aware).
    pub fn rel_seq(&mut self, dir: Dir, raw: u32) -> i64 {
        self.half[dir.idx()].seq.get_or_insert_with(|| SeqSpace::new(raw)).unwrap(raw)
    }

    /// Relative position of an ACK number sent by `dir` (it acknowledges the other side).
    pub fn rel_ack(&mut self, dir: Dir, raw_ack: u32) -> i64 {
        self.half[dir.rev().idx()].seq.get_or_insert_with(|| SeqSpace::new(raw_ack)).peek(raw_ack)
    }
}

/// A connection: the base state, its behaviour engine and the events found so far.
pub struct Connection {
    pub base: ConnBase,
    pub engine: Engine,
    pub events: Vec<Event>,
}

impl Connection {
    /// A new connection whose first captured packet is `seg`.
    pub fn new(flow_id: u64, epoch: u32, seg: &Segment) -> Self {
        let (client, server, roles_from_syn) = roles_of(seg);
        Connection {
            base: ConnBase {
                flow_id,
                epoch,
                client,
                server,
                roles_from_syn,
                half: [Half::default(), Half::default()],
                first_ts: seg.ts,
                last_ts: seg.ts,
                silences: Vec::new(),
                vantage: None,
                scale: [None; 2],
                announced_mss: [None; 2],
            },
            engine: Engine::default(),
            events: Vec::new(),
        }
    }

    /// Account one segment travelling in `dir` (the flow table found it with the
    /// connection), foundation columns first, then run the behaviour engine on it.
    /// Called from one place only, [`crate::flow::FlowTable::push`] (embryos hatch through
    /// it too): with a second caller the compiler stopped inlining it into the packet loop,
    /// 25 M instructions more on the bench capture.
    #[inline]
    pub fn on_segment(&mut self, seg: &Segment, dir: Dir) {
        let b = &mut self.base;
        // Capture files are not always in time order (per-CPU buffers): never go backwards.
        if seg.ts > b.last_ts {
            if seg.ts - b.last_ts > SILENCE_WITHOUT_ROWS {
                b.silence_until(seg.ts);
            }
            b.last_ts = seg.ts;
        }
        let bin = (seg.ts.max(b.first_ts) - b.first_ts) / NANOS_PER_S;
        let h = &mut b.half[dir.idx()];
        h.packets += 1;
        h.payload_bytes += seg.payload_len as u64;
        if seg.payload_len > 0 {
            *h.bins.at(bin as usize) += seg.payload_len as u64;
        }
        let f = seg.flags;
        let first_syn = f.syn() && h.syn.is_none();
        if f.syn() {
            h.syn_count += 1;
            if first_syn {
                h.syn_seq = Some(seg.seq);
            }
            if f.fin() || f.rst() {
                h.malformed += 1;
            }
        }
        if f.fin() {
            h.fin_count += 1;
            h.first_fin_ts.get_or_insert(seg.ts);
        }
        if f.rst() {
            h.rst_count += 1;
        }
        if seg.options.mptcp.is_some() {
            h.mptcp_packets += 1;
        }
        if seg.options.timestamp.is_some() {
            h.ts_packets += 1;
        }
        if first_syn {
            b.learn_syn(dir, &seg.options);
        }
        self.engine.on_segment(&mut self.base, seg, dir, &mut self.events);
    }

    /// The capture ended (or the connection was retired): let the engine close its books.
    pub fn finish(&mut self, capture_end: Nanos) {
        self.engine.finish(&mut self.base, capture_end, &mut self.events);
    }
}
