//! The `packets` table (opt-in, docs/formats/packets.md): one row per TCP segment, written
//! as the flow table feeds it, so its rows are in capture order and leave in batches (no
//! flow's packets are held).
//!
//! What the engine made of a segment is read from its per-direction counters
//! ([`Engine::tally`]) before and after the segment: the engine itself does no extra work,
//! and a run without the table pays one test per packet.

use crate::flow::connection::Connection;
use crate::flow::engine::{Tally, RETRANS_CLASSES};
use crate::flow::event::{nanos_to_s, Dir};
use crate::table::{col, Cell, ColType, ColumnDef, TableBuilder};
use crate::wire::Segment;

/// Schema version of `packets` (docs/formats/packets.md).
pub const PACKETS_VERSION: u32 = 1;

pub const PACKET_COLUMNS: &[ColumnDef] = &[
    col("flow_id", ColType::U64, "flow the segment belongs to (flows.flow_id)"),
    col("frame", ColType::U64, "number of the capture record, 1-based, counting every record of the file (Wireshark's frame.number)"),
    col("ts", ColType::F64, "capture time, seconds since the Unix epoch"),
    col("dir", ColType::Str, "c2s or s2c"),
    col("seq", ColType::I64, "sequence number relative to the direction's base (flows.seq_base_c2s / seq_base_s2c: the ISN when the SYN was captured)"),
    col("ack", ColType::I64, "acknowledgment number relative to the other direction's base; null without the ACK flag"),
    col("len", ColType::U64, "TCP payload bytes (from the IP length)"),
    col("flags", ColType::U64, "TCP flags: FIN 1, SYN 2, RST 4, PSH 8, ACK 16, URG 32, ECE 64, CWR 128, AE (NS) 256"),
    col("window", ColType::U64, "advertised window in bytes, scaled (RFC 7323; a SYN's window is never scaled); null while the scale is unknown (no captured handshake)"),
    col("window_raw", ColType::U64, "window field as sent (unscaled)"),
    col("sack", ColType::Str, "SACK blocks as 'left-right' relative to the acknowledged direction's base, ','-separated, in the order sent; null without"),
    col("tsval", ColType::U64, "TCP timestamp TSval (RFC 7323); null without the option"),
    col("tsecr", ColType::U64, "TCP timestamp TSecr"),
    col("ip_id", ColType::U64, "IPv4 identification; null for IPv6"),
    col("retrans", ColType::Str, "the segment is a retransmission, of this class: fast, sack_refill, rto, tlp, unclassified (as flows.retrans_*; events kind retransmission); null if not"),
    col("note", ColType::Str, "other verdicts on a data segment: reordering, late_original (reordering: an original overtaken by its own re-send), network_duplicate, window_probe, undecided (receiver: re-send or new data, flows.retransmissions_undecided); null if none"),
    col("dupack", ColType::Bool, "for a segment with the ACK flag: counted as a DupACK (flows.dupacks); null for a receiver-side DupACK candidate decided at later data (flows.dupacks_undecided) and without the ACK flag"),
];

/// Rows of the `packets` table being built, and the frame-number unwrapping.
pub struct PacketRows {
    rows: TableBuilder,
    /// Frame numbers above 2^32 (the segments carry 32 bits, in file order).
    frame_high: u64,
    last_frame: u32,
    sack: String,
}

/// What a segment's arrival changed in its connection's counters: taken before it.
#[derive(Clone, Copy)]
pub struct Before {
    data: Tally,
    acked: Tally,
}

impl PacketRows {
    pub fn new(rows_per_batch: usize) -> Self {
        PacketRows {
            rows: TableBuilder::with_capacity(&[PACKET_COLUMNS], rows_per_batch),
            frame_high: 0,
            last_frame: 0,
            sack: String::new(),
        }
    }

    pub fn rows(&mut self) -> &mut TableBuilder {
        &mut self.rows
    }

    /// The counters a segment travelling in `dir` may change.
    #[inline(never)]
    pub fn before(c: &Connection, dir: Dir) -> Before {
        Before { data: c.engine.tally(dir), acked: c.engine.tally(dir.rev()) }
    }

    /// The row of `seg` (travelling in `dir`), which the connection has just processed.
    #[inline(never)]
    pub fn push(&mut self, c: &mut Connection, seg: &Segment, dir: Dir, before: &Before) {
        if seg.frame < self.last_frame {
            self.frame_high += 1 << 32;
        }
        self.last_frame = seg.frame;
        let frame = (seg.frame != 0).then_some(self.frame_high + seg.frame as u64);
        let b = &mut c.base;
        // (the engine unwrapped this segment's numbers already: peek gives the same values)
        let seq = b.rel_seq(dir, seg.seq);
        let ack = seg.flags.ack().then(|| b.rel_ack(dir, seg.ack));
        self.sack.clear();
        if let (true, Some(space)) = (seg.options.sack_count > 0, b.half[dir.rev().idx()].seq.as_ref()) {
            use std::fmt::Write;
            for (k, blk) in seg.options.sack_blocks().iter().enumerate() {
                let sep = if k == 0 { "" } else { "," };
                let _ = write!(self.sack, "{sep}{}-{}", space.peek(blk.left), space.peek(blk.right));
            }
        }
        let window = match (seg.flags.syn(), b.wscale(dir)) {
            (true, _) => Some(seg.window as u64),
            (false, Some(s)) => Some((seg.window as u64) << s),
            (false, None) => None,
        };
        let (data, acked) = (c.engine.tally(dir), c.engine.tally(dir.rev()));
        let retrans = (0..RETRANS_CLASSES.len()).find(|&i| data.retrans[i] > before.data.retrans[i]).map(|i| RETRANS_CLASSES[i]);
        let note = if data.undecided > before.data.undecided {
            Some("undecided")
        } else if data.reordering > before.data.reordering {
            // the event just pushed says which kind of reordering
            let late = c.events.last().is_some_and(|e| e.kind == "reordering" && e.class == Some("late_original"));
            Some(if late { "late_original" } else { "reordering" })
        } else if data.duplicates > before.data.duplicates {
            Some("network_duplicate")
        } else if data.probes > before.data.probes {
            Some("window_probe")
        } else {
            None
        };
        let dupack = match seg.flags.ack() {
            false => None,
            true if acked.dupacks > before.acked.dupacks => Some(true),
            true if acked.pending_dupacks > before.acked.pending_dupacks => None,
            true => Some(false),
        };
        let ts = seg.options.timestamp;
        self.rows.append_row(&[
            Cell::U64(Some(c.base.flow_id)),
            Cell::U64(frame),
            Cell::F64(Some(nanos_to_s(seg.ts))),
            Cell::Str(Some(dir.name())),
            Cell::I64(Some(seq)),
            Cell::I64(ack),
            Cell::U64(Some(seg.payload_len as u64)),
            Cell::U64(Some(seg.flags.0 as u64)),
            Cell::U64(window),
            Cell::U64(Some(seg.window as u64)),
            Cell::Str((!self.sack.is_empty()).then_some(self.sack.as_str())),
            Cell::U64(ts.map(|t| t.0 as u64)),
            Cell::U64(ts.map(|t| t.1 as u64)),
            Cell::U64(seg.ip_id.map(u64::from)),
            Cell::Str(retrans),
            Cell::Str(note),
            Cell::Bool(dupack),
        ]);
    }
}
