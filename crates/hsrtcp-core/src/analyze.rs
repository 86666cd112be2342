//! One capture file through the whole single-vantage pipeline:
//! reader → decoder → flow table → tables.

use std::path::Path;

use crate::capture::CaptureReader;
use crate::flow::{CaptureInfo, FlowTable, Output};
use crate::table::{col, ColType, ColumnDef, TableBuilder};
use crate::wire::{decode, Decoded, Nanos};

/// One row per capture file (docs/formats/captures.md).
pub const CAPTURE_COLUMNS: &[ColumnDef] = &[
    col("capture", ColType::Str, "capture file"),
    col("vantage", ColType::Str, "client, server, or null"),
    col("packets", ColType::U64, "records read"),
    col("tcp_packets", ColType::U64, "records decoded as TCP"),
    col("other_packets", ColType::U64, "records of other protocols (ARP, UDP, ICMP, ...)"),
    col("malformed_packets", ColType::U64, "records that could not be decoded"),
    col("malformed_reasons", ColType::Str, "malformed records per reason, 'reason=count' separated by ';'"),
    col("flows", ColType::U64, "TCP connections found"),
    col("first_ts", ColType::F64, "first record, seconds since the Unix epoch"),
    col("last_ts", ColType::F64, "last record, seconds since the Unix epoch"),
    col("truncated", ColType::Bool, "reading stopped at an error; the rows before it are kept"),
    col("error", ColType::Str, "the error that stopped reading, naming the file and byte offset"),
];

/// Counters of one capture file.
#[derive(Clone, Debug, Default)]
pub struct CaptureStats {
    pub packets: u64,
    pub tcp_packets: u64,
    pub other_packets: u64,
    pub malformed: Vec<(&'static str, u64)>,
    pub flows: u64,
    pub first_ts: Option<Nanos>,
    pub last_ts: Option<Nanos>,
    pub error: Option<String>,
}

impl CaptureStats {
    fn count_malformed(&mut self, reason: &'static str) {
        match self.malformed.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, n)) => *n += 1,
            None => self.malformed.push((reason, 1)),
        }
    }

    pub fn malformed_total(&self) -> u64 {
        self.malformed.iter().map(|(_, n)| n).sum()
    }
}

/// Results of one capture: the three flow tables plus the capture's own row.
pub struct CaptureResult {
    pub output: Output,
    pub stats: CaptureStats,
    pub captures: TableBuilder,
}

/// How often (in records) progress is reported.
const PROGRESS_EVERY: u64 = 1 << 14;

/// Analyze one capture file. Never fails: an unreadable or corrupt file yields the flows
/// read so far (marked truncated) and the error in `stats.error`.
pub fn analyze_capture(path: &Path, info: CaptureInfo, progress: &mut dyn FnMut(u64)) -> CaptureResult {
    let mut stats = CaptureStats::default();
    let mut output = Output::default();
    let mut table = FlowTable::new(info.clone());
    let mut reader = match CaptureReader::open(path) {
        Ok(r) => Some(r),
        Err(e) => {
            stats.error = Some(e.to_string());
            None
        }
    };
    if let Some(reader) = reader.as_mut() {
        loop {
            match reader.next_frame() {
                Ok(Some(frame)) => {
                    stats.packets += 1;
                    if stats.first_ts.is_none() {
                        stats.first_ts = Some(frame.ts);
                    }
                    stats.last_ts = Some(stats.last_ts.map_or(frame.ts, |t| t.max(frame.ts)));
                    match decode(&frame) {
                        Decoded::Tcp(seg) => {
                            stats.tcp_packets += 1;
                            table.push(&seg);
                        }
                        Decoded::NotTcp => stats.other_packets += 1,
                        Decoded::Malformed(reason) => stats.count_malformed(reason.name()),
                    }
                    if stats.packets % PROGRESS_EVERY == 0 {
                        progress(reader.bytes_read());
                        table.drain_retired(&mut output);
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    stats.error = Some(e.to_string());
                    break;
                }
            }
        }
        progress(reader.bytes_read());
    }
    table.finish(stats.error.is_some(), &mut output);
    stats.flows = output.flows.rows() as u64;
    let mut captures = TableBuilder::new(&[CAPTURE_COLUMNS]);
    {
        let reasons: Vec<String> = stats.malformed.iter().map(|(r, n)| format!("{r}={n}")).collect();
        let mut r = captures.row();
        r.str("capture", Some(&info.name))
            .str("vantage", info.vantage.as_deref())
            .u64("packets", stats.packets)
            .u64("tcp_packets", stats.tcp_packets)
            .u64("other_packets", stats.other_packets)
            .u64("malformed_packets", stats.malformed_total())
            .str("malformed_reasons", Some(&reasons.join(";")))
            .u64("flows", stats.flows)
            .f64("first_ts", stats.first_ts.map(crate::flow::event::nanos_to_s))
            .f64("last_ts", stats.last_ts.map(crate::flow::event::nanos_to_s))
            .bool("truncated", stats.error.is_some())
            .str("error", stats.error.as_deref());
    }
    CaptureResult { output, stats, captures }
}
