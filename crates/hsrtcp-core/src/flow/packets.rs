//! The `packets` table (opt-in, docs/formats/packets.md): one row per TCP segment, written
//! as the flow table feeds it, so its rows are in capture order and leave in batches (no
//! flow's packets are held).
//!
//! What the engine made of a segment is read from its per-direction counters
//! ([`Engine::tally`]) before and after the segment: the engine itself does no extra work,
//! and a run without the table pays one test per packet.

use crate::flow::connection::Connection;
use crate::flow::engine::{Tally, RETRANS_CLASSES};
use crate::flow::event::{nanos_to_s, Dir, EventKind};
use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
use arrow_buffer::{BooleanBuffer, NullBuffer, ScalarBuffer};
use arrow_schema::Schema;

pub use crate::table::registry::{PACKETS_VERSION, PACKET_COLUMNS};
use crate::table::{schema_of, str_column};
use crate::wire::Segment;

/// Retransmission classes, notes and DupACK verdicts as stored in a [`Row`] (0: none).
const NOTES: [&str; 5] = ["undecided", "reordering", "late_original", "network_duplicate", "window_probe"];

/// One row while it waits for its batch: plain values, turned into Arrow columns one column
/// at a time ([`PacketRows::take_batch`]). Cell by cell through a generic
/// [`crate::table::TableBuilder`] the rows cost 12 % of a `--packets` run's CPU (perf, bench
/// capture), the largest single item.
#[derive(Clone, Copy)]
struct Row {
    flow_id: u64,
    frame: u64,
    ts: i64,
    seq: i64,
    ack: i64,
    window: u32,
    len: u32,
    tsval: u32,
    tsecr: u32,
    /// The row's SACK text in [`PacketRows::sack`].
    sack: (u32, u32),
    flags: u16,
    window_raw: u16,
    ip_id: u16,
    /// index + 1 in RETRANS_CLASSES / NOTES; 0 none
    retrans: u8,
    note: u8,
    /// [`Has`] bits: which optional values are present, the direction, the DupACK verdict.
    has: Has,
}

bitflags::bitflags! {
    /// Bits of [`Row::has`].
    #[derive(Clone, Copy)]
    struct Has: u16 {
        const S2C = 1 << 0;
        const ACK = 1 << 1;
        const WINDOW = 1 << 2;
        const TS = 1 << 3;
        const IP_ID = 1 << 4;
        const DUPACK_KNOWN = 1 << 5;
        const DUPACK = 1 << 6;
    }
}

/// Rows of the `packets` table being built.
pub struct PacketRows {
    rows: Vec<Row>,
    /// The batch's SACK texts, end to end.
    sack: String,
    schema: Arc<Schema>,
}

/// What a segment's arrival changed in its connection's counters: taken before it.
#[derive(Clone, Copy)]
pub struct Before {
    data: Tally,
    acked: Tally,
}

impl PacketRows {
    pub fn new(rows_per_batch: usize) -> Self {
        PacketRows { rows: Vec::with_capacity(rows_per_batch), sack: String::new(), schema: Arc::new(schema_of(PACKET_COLUMNS)) }
    }

    pub fn rows(&self) -> usize {
        self.rows.len()
    }

    /// The counters a segment travelling in `dir` may change.
    #[inline(never)]
    pub fn before(c: &Connection, dir: Dir) -> Before {
        Before { data: c.engine.tally(dir), acked: c.engine.tally(dir.rev()) }
    }

    /// The row of `seg` (travelling in `dir`; record number `frame`), which the connection
    /// has just processed.
    #[inline(never)]
    pub fn push(&mut self, c: &mut Connection, seg: &Segment, frame: Option<u64>, dir: Dir, before: &Before) {
        let b = &mut c.base;
        // (the engine unwrapped this segment's numbers already: peek gives the same values)
        let seq = b.rel_seq(dir, seg.seq);
        let ack = if seg.flags.ack() { b.rel_ack(dir, seg.ack) } else { 0 };
        let sack_from = self.sack.len() as u32;
        if let (true, Some(space)) = (seg.options.sack_count > 0, b.half[dir.rev().idx()].seq.as_ref()) {
            use std::fmt::Write;
            for (k, blk) in seg.options.sack_blocks().iter().enumerate() {
                let sep = if k == 0 { "" } else { "," };
                let _ = write!(self.sack, "{sep}{}-{}", space.peek(blk.left), space.peek(blk.right));
            }
        }
        // (at most 65535 << 14: fits 32 bits)
        let window = match (seg.flags.syn(), b.wscale(dir)) {
            (true, _) => Some(seg.window as u32),
            (false, Some(s)) => Some((seg.window as u32) << s.min(14)),
            (false, None) => None,
        };
        let (data, acked) = (c.engine.tally(dir), c.engine.tally(dir.rev()));
        let retrans = (0..RETRANS_CLASSES.len()).find(|&i| data.retrans[i] > before.data.retrans[i]).map_or(0, |i| i as u8 + 1);
        let note = if data.undecided > before.data.undecided {
            1
        } else if data.reordering > before.data.reordering {
            // the event just pushed says which kind of reordering
            let late = c.events.last().is_some_and(|e| e.kind == EventKind::Reordering && e.class == Some("late_original"));
            if late { 3 } else { 2 }
        } else if data.duplicates > before.data.duplicates {
            4
        } else if data.probes > before.data.probes {
            5
        } else {
            0
        };
        let dupack = match seg.flags.ack() {
            false => Has::empty(),
            true if acked.dupacks > before.acked.dupacks => Has::DUPACK_KNOWN | Has::DUPACK,
            true if acked.pending_dupacks > before.acked.pending_dupacks => Has::empty(),
            true => Has::DUPACK_KNOWN,
        };
        let bit = |on: bool, b: Has| if on { b } else { Has::empty() };
        let (tsval, tsecr) = seg.options.timestamp.unwrap_or((0, 0));
        self.rows.push(Row {
            flow_id: c.base.flow_id,
            // (0: a segment not read from a file, never in an analysis of captures)
            frame: frame.unwrap_or(0),
            ts: seg.ts,
            seq,
            ack,
            window: window.unwrap_or(0),
            len: seg.payload_len,
            tsval,
            tsecr,
            sack: (sack_from, self.sack.len() as u32),
            flags: seg.flags.0,
            window_raw: seg.window,
            ip_id: seg.ip_id.unwrap_or(0),
            retrans,
            note,
            has: bit(dir == Dir::S2C, Has::S2C)
                | bit(seg.flags.ack(), Has::ACK)
                | bit(window.is_some(), Has::WINDOW)
                | bit(seg.options.timestamp.is_some(), Has::TS)
                | bit(seg.ip_id.is_some(), Has::IP_ID)
                | dupack,
        });
    }

    /// The rows so far as one batch (schema [`PACKET_COLUMNS`]); the collection starts over,
    /// keeping its memory.
    pub fn take_batch(&mut self) -> RecordBatch {
        let rows = &self.rows;
        let n = rows.len();
        fn valid(rows: &[Row], bit: Has) -> Option<NullBuffer> {
            let v: Vec<bool> = rows.iter().map(|r| r.has.contains(bit)).collect();
            let nb = NullBuffer::from(v);
            (nb.null_count() > 0).then_some(nb)
        }
        fn u32s(rows: &[Row], f: impl Fn(&Row) -> u32, nulls: Option<NullBuffer>) -> ArrayRef {
            Arc::new(UInt32Array::new(ScalarBuffer::from(rows.iter().map(f).collect::<Vec<_>>()), nulls))
        }
        let has = |r: &Row, bit: Has| r.has.contains(bit);
        let some_str = |values: Vec<Option<&str>>| -> ArrayRef { Arc::new(StringArray::from(values)) };
        let cols: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::new(ScalarBuffer::from(rows.iter().map(|r| r.flow_id).collect::<Vec<_>>()), None)),
            Arc::new(UInt64Array::new(ScalarBuffer::from(rows.iter().map(|r| r.frame).collect::<Vec<_>>()), None)),
            Arc::new(Float64Array::new(ScalarBuffer::from(rows.iter().map(|r| nanos_to_s(r.ts)).collect::<Vec<_>>()), None)),
            str_column(rows.iter().map(|r| if has(r, Has::S2C) { "s2c" } else { "c2s" }), n),
            Arc::new(Int64Array::new(ScalarBuffer::from(rows.iter().map(|r| r.seq).collect::<Vec<_>>()), None)),
            Arc::new(Int64Array::new(ScalarBuffer::from(rows.iter().map(|r| r.ack).collect::<Vec<_>>()), valid(rows, Has::ACK))),
            u32s(rows, |r| r.len, None),
            u32s(rows, |r| r.flags as u32, None),
            u32s(rows, |r| r.window, valid(rows, Has::WINDOW)),
            u32s(rows, |r| r.window_raw as u32, None),
            some_str(rows.iter().map(|r| (r.sack.1 > r.sack.0).then(|| &self.sack[r.sack.0 as usize..r.sack.1 as usize])).collect()),
            u32s(rows, |r| r.tsval, valid(rows, Has::TS)),
            u32s(rows, |r| r.tsecr, valid(rows, Has::TS)),
            u32s(rows, |r| r.ip_id as u32, valid(rows, Has::IP_ID)),
            some_str(rows.iter().map(|r| r.retrans.checked_sub(1).map(|i| RETRANS_CLASSES[i as usize].as_str())).collect()),
            some_str(rows.iter().map(|r| r.note.checked_sub(1).map(|i| NOTES[i as usize])).collect()),
            Arc::new(BooleanArray::new(
                BooleanBuffer::from(rows.iter().map(|r| has(r, Has::DUPACK)).collect::<Vec<_>>()),
                valid(rows, Has::DUPACK_KNOWN),
            )),
            // (set by the matcher's verdicts in a two-vantage run: matcher::fate::FrameFates)
            arrow_array::new_null_array(&arrow_schema::DataType::Utf8, n),
        ];
        self.rows.clear();
        self.sack.clear();
        RecordBatch::try_new(self.schema.clone(), cols).expect("packets columns match PACKET_COLUMNS")
    }
}
