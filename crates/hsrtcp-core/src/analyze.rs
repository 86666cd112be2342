//! One capture file through the whole single-vantage pipeline:
//! reader → decoder → flow table → tables.

use std::path::Path;

use arrow_array::RecordBatch;

use crate::flow::{CaptureInfo, FlowTable, Output};
pub use crate::stream::CaptureStats;
use crate::stream::{SegmentStream, Tap};
use crate::table::TableBuilder;
pub use crate::table::registry::{CAPTURES_VERSION, CAPTURE_COLUMNS};

/// Analyze one capture file, handing the tables on in pieces as they fill: `sink` gets
/// (table name, batch of rows) for `flows`, `events`, `series`, `packets` when
/// `info.packets` asks for it, and finally `captures` (one row), every table at least once
/// (possibly empty, so every schema is seen; all but `packets` and `captures` start with an
/// empty batch).
/// Batches hold about `rows_per_batch` rows; memory stays bounded by the open connections
/// and the sink, not by the capture's length.
///
/// Never fails: an unreadable or corrupt file yields the flows read so far (marked
/// truncated) and the error in the returned stats and in the `captures` row.
///
/// `progress` gets the bytes of the file read so far, every few thousand packets; it
/// returns false to stop the analysis (an interruption: Ctrl-C). Then the result is None
/// and the `captures` row is never sent: the rows sent so far are a fragment to discard.
pub fn analyze_capture(
    path: &Path,
    info: CaptureInfo,
    rows_per_batch: usize,
    progress: &mut dyn FnMut(u64) -> bool,
    sink: &mut dyn FnMut(&'static str, RecordBatch),
) -> Option<CaptureStats> {
    analyze_capture_tapped(path, info, rows_per_batch, progress, sink, None)
}

/// [`analyze_capture`], handing a copy of the decoded segments to `tap` as well
/// ([`SegmentStream::open_tapped`]: the two-vantage run's matcher).
pub fn analyze_capture_tapped(
    path: &Path,
    info: CaptureInfo,
    rows_per_batch: usize,
    progress: &mut dyn FnMut(u64) -> bool,
    sink: &mut dyn FnMut(&'static str, RecordBatch),
    tap: Option<Tap>,
) -> Option<CaptureStats> {
    let rows_per_batch = rows_per_batch.max(1);
    let mut output = Output::default();
    let mut table = FlowTable::new(info.clone());
    if info.packets {
        table.write_packets(rows_per_batch);
    }
    let outers = crate::wire::OuterTable::default();
    table.set_outers(outers.clone());
    let mut stream = SegmentStream::open_with(path, tap, outers);
    let mut batches = 0u64;
    let mut flows = 0u64;
    let mut counted = |name: &'static str, b: RecordBatch| {
        if name == "flows" {
            flows += b.num_rows() as u64;
        }
        sink(name, b)
    };
    // Every schema first (empty batches): a sink writing files creates them now, beside the
    // reader and the engine, instead of in the run's serial end (on the bench host's ext4
    // without a journal a new file costs a scan of recently deleted inodes; bench/README.md, s18).
    output.flush(0, &mut counted);
    let mut go_on = true;
    while let Some((batch, links)) = stream.next_batch_linked() {
        for (seg, &link) in batch.iter().zip(links) {
            table.push_linked(seg, link);
        }
        if let Some(p) = table.packet_rows().filter(|p| p.rows() >= rows_per_batch) {
            counted("packets", p.take_batch());
        }
        batches += 1;
        if batches % 8 == 0 {
            table.drain_retired_flushing(&mut output, &mut |o| o.flush(rows_per_batch, &mut counted));
            output.flush(rows_per_batch, &mut counted);
            go_on = progress(stream.bytes_read());
            if !go_on {
                break;
            }
        }
    }
    if !(go_on && progress(stream.bytes_read())) {
        stream.finish(); // the reader stops at its next batch
        return None;
    }
    let stats = stream.finish();
    let mptcp_malformed = table.mptcp_malformed();
    if let Some(p) = table.packet_rows() {
        counted("packets", p.take_batch()); // (also when empty: the sink learns the schema)
    }
    table.finish_flushing(stats.error.is_some(), &mut output, &mut |o| o.flush(rows_per_batch, &mut counted));
    output.flush(0, &mut counted);
    sink("captures", capture_row(&info, &stats, flows, &mptcp_malformed));
    Some(stats)
}

/// The capture's own row of the `captures` table.
/// `mptcp_malformed`: malformed MPTCP options per reason; they join the reasons (the
/// packets carrying them were decoded, so `malformed_packets` does not count them).
fn capture_row(info: &CaptureInfo, stats: &CaptureStats, flows: u64, mptcp_malformed: &[(&str, u64)]) -> RecordBatch {
    let mut captures = TableBuilder::new(&[CAPTURE_COLUMNS]);
    {
        let mut reasons: Vec<String> = stats.malformed.iter().map(|(r, n)| format!("{r}={n}")).collect();
        reasons.extend(mptcp_malformed.iter().map(|(r, n)| format!("{r}={n}")));
        // A time jump is bad input too (exit 3), but reading went on: not truncated.
        let error = match (&stats.error, &stats.time_jump) {
            (Some(e), Some(j)) => Some(format!("{e}; {j}")),
            (e, j) => e.clone().or_else(|| j.clone()),
        };
        let mut r = captures.row();
        r.str("capture", Some(&info.name))
            .str("vantage", info.vantage.as_deref())
            .u64("packets", stats.packets)
            .u64("tcp_packets", stats.tcp_packets)
            .u64("other_packets", stats.other_packets)
            .u64("malformed_packets", stats.malformed_total())
            .str("malformed_reasons", Some(&reasons.join(";")))
            .u64("flows", flows)
            .f64("first_ts", stats.first_ts.map(crate::flow::event::nanos_to_s))
            .f64("last_ts", stats.last_ts.map(crate::flow::event::nanos_to_s))
            .bool("truncated", stats.error.is_some())
            .str("error", error.as_deref())
            .u64("time_jumps", stats.time_jumps)
            .u64("time_jump_offset", stats.time_jump_offset)
            .u64("tunneled_packets", stats.tunneled_packets);
    }
    captures.finish()
}
