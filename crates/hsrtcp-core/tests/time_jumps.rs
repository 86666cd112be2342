//! Time jumps in real captures (issue 16 item 1): a record header with an absurd time, a
//! first record at time 0, a clock step, each in tests/data/clean_200k.server.pcap (real
//! kernel TCP, tests/data/README.md) patched in place. Before capture/time_jump.rs the first
//! asked for 20 GB of bins and aborted; now each costs nothing and is reported.
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::Array;
use hsrtcp_core::analyze::analyze_capture;
use hsrtcp_core::flow::CaptureInfo;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/clean_200k.server.pcap");

/// The fixture with the seconds of the records at `offsets` set by `patch`, written to a
/// temporary file.
fn patched(name: &str, patch: impl Fn(usize, u32) -> u32) -> PathBuf {
    let mut b = std::fs::read(FIXTURE).unwrap();
    let (mut at, mut i) = (24usize, 0usize);
    while at + 16 <= b.len() {
        let secs = u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
        b[at..at + 4].copy_from_slice(&patch(i, secs).to_le_bytes());
        let caplen = u32::from_le_bytes(b[at + 8..at + 12].try_into().unwrap()) as usize;
        at += 16 + caplen;
        i += 1;
    }
    let p = std::env::temp_dir().join(format!("hsrtcp-time-jump-{}-{name}.pcap", std::process::id()));
    std::fs::write(&p, b).unwrap();
    p
}

/// (series rows, flows rows, captures batch) of one analysis.
fn analyze(p: &Path) -> (usize, usize, arrow_array::RecordBatch) {
    let (mut series, mut flows, mut captures) = (0, 0, None);
    analyze_capture(p, CaptureInfo { name: "t".into(), ..Default::default() }, 4096, &mut |_| true, &mut |name, b| match name {
        "series" => series += b.num_rows(),
        "flows" => flows += b.num_rows(),
        "captures" => captures = Some(b),
        _ => {}
    });
    (series, flows, captures.unwrap())
}

fn u64_col(b: &arrow_array::RecordBatch, name: &str) -> Option<u64> {
    let c = b.column_by_name(name).unwrap().as_primitive::<UInt64Type>();
    c.is_valid(0).then(|| c.value(0))
}

fn error(b: &arrow_array::RecordBatch) -> String {
    b.column_by_name("error").unwrap().as_string::<i32>().value(0).to_string()
}

#[test]
fn an_absurd_record_time_is_skipped_and_reported_with_its_offset() {
    let (clean_series, clean_flows, clean) = analyze(Path::new(FIXTURE));
    assert_eq!(u64_col(&clean, "time_jumps"), Some(0));
    // the reproduction: record 3 (header at byte 286) gets seconds 0xFFFFFFFF
    let p = patched("ffff", |i, s| if i == 3 { 0xFFFF_FFFF } else { s });
    let (series, flows, cap) = analyze(&p);
    assert_eq!((series, flows), (clean_series, clean_flows), "no row for the jump");
    assert_eq!(u64_col(&cap, "time_jumps"), Some(1));
    assert_eq!(u64_col(&cap, "time_jump_offset"), Some(286));
    assert_eq!(u64_col(&cap, "malformed_packets"), Some(1));
    let e = error(&cap);
    assert!(e.contains("byte offset 286") && e.contains("hsrtcp-time-jump"), "{e}");
    // a first record at time 0 before real ones
    let p0 = patched("zero", |i, s| if i == 0 { 0 } else { s });
    let (series, _, cap) = analyze(&p0);
    assert!(series <= clean_series + 1, "{series} rows");
    assert_eq!(u64_col(&cap, "time_jump_offset"), Some(24));
    for f in [p, p0] {
        std::fs::remove_file(f).unwrap();
    }
}

#[test]
fn a_clock_step_inside_a_connection_costs_no_rows() {
    // every record from the 50th on is 10^7 s later: followed, reported, and the connection's
    // series has no row for the ten million seconds in between
    let (clean_series, _, _) = analyze(Path::new(FIXTURE));
    let p = patched("step", |i, s| if i >= 50 { s + 10_000_000 } else { s });
    let (series, flows, cap) = analyze(&p);
    assert_eq!(flows, 1);
    assert!(series <= clean_series + 2, "{series} rows");
    assert_eq!(u64_col(&cap, "time_jumps"), Some(1));
    assert_eq!(u64_col(&cap, "malformed_packets"), Some(0), "nothing skipped");
    std::fs::remove_file(p).unwrap();
}

fn bool_col(b: &arrow_array::RecordBatch, name: &str) -> bool {
    b.column_by_name(name).unwrap().as_boolean().value(0)
}

/// (flows batch, captures batch) of one analysis.
fn flows_and_captures(p: &Path) -> (arrow_array::RecordBatch, arrow_array::RecordBatch) {
    let (mut flows, mut captures) = (None, None);
    analyze_capture(p, CaptureInfo { name: "t".into(), ..Default::default() }, 4096, &mut |_| true, &mut |name, b| match name {
        "flows" => flows = Some(b),
        "captures" => captures = Some(b),
        _ => {}
    });
    (flows.unwrap(), captures.unwrap())
}

#[test]
fn a_clock_stepped_back_stops_reading_and_marks_the_results_truncated() {
    // every record from the 50th (header at byte 5814) on is 10^7 s earlier: before issue 30
    // item 6 the step was followed, the flow's duration covered only the records before it
    // and nothing was marked truncated while the summary said so
    let p = patched("back", |i, s| if i >= 50 { s - 10_000_000 } else { s });
    let (flows, cap) = flows_and_captures(&p);
    assert_eq!(flows.num_rows(), 1);
    assert!(bool_col(&flows, "truncated"), "the connection was cut by the step");
    assert!(bool_col(&cap, "truncated"));
    assert_eq!(u64_col(&cap, "packets"), Some(50), "the records before the step");
    assert_eq!((u64_col(&cap, "time_jumps"), u64_col(&cap, "time_jump_offset")), (Some(1), Some(5814)));
    let e = error(&cap);
    assert!(e.contains("steps back 10000000 s at byte 5814") && e.contains("reading stopped"), "{e}");
    assert_eq!(e.matches("5814").count(), 1, "said once: {e}");
    std::fs::remove_file(p).unwrap();
}

#[test]
fn a_record_with_a_fraction_of_a_second_or_more_is_malformed() {
    // record 3 gets 0xFFFFFFFF microseconds (71 minutes): it made a 0.02 s connection last
    // 4294 s; now it is skipped and counted, and the connection is as without it
    let fixture = std::fs::read(FIXTURE).unwrap();
    let mut b = fixture.clone();
    b[286 + 4..286 + 8].copy_from_slice(&u32::MAX.to_le_bytes());
    let p = std::env::temp_dir().join(format!("hsrtcp-time-jump-{}-frac.pcap", std::process::id()));
    std::fs::write(&p, b).unwrap();
    let (flows, cap) = flows_and_captures(&p);
    let (clean_flows, _) = flows_and_captures(Path::new(FIXTURE));
    let f64_col = |b: &arrow_array::RecordBatch, n: &str| b.column_by_name(n).unwrap().as_primitive::<arrow_array::types::Float64Type>().value(0);
    let span = |b: &arrow_array::RecordBatch| f64_col(b, "last_ts") - f64_col(b, "first_ts");
    assert!(span(&flows) < 1.0 && (span(&flows) - span(&clean_flows)).abs() < 0.01, "{} s", span(&flows));
    assert_eq!(u64_col(&cap, "malformed_packets"), Some(1));
    let reasons = cap.column_by_name("malformed_reasons").unwrap().as_string::<i32>().value(0).to_string();
    assert_eq!(reasons, "bad_ts_fraction=1");
    assert!(!bool_col(&cap, "truncated"));
    std::fs::remove_file(p).unwrap();
}
