//! One single-vantage analysis of one capture with a null sink, for instruction counts:
//! `valgrind --tool=callgrind --separate-threads=yes target/release/examples/analyze_once FILE`
//! (the main thread is the flow engine, `hsrtcp-reader` the reader and decoder).
use std::path::Path;

use hsrtcp_core::analyze::analyze_capture;
use hsrtcp_core::flow::CaptureInfo;
use hsrtcp_core::table::parquet::ROW_GROUP;

fn main() {
    let path = std::env::args().nth(1).expect("usage: analyze_once FILE");
    let mut rows = 0usize;
    let stats = analyze_capture(Path::new(&path), CaptureInfo::default(), ROW_GROUP, &mut |_| true, &mut |_, b| {
        rows += b.num_rows();
    })
    .expect("the progress callback never stops the analysis");
    println!("{} packets, {rows} rows, error {:?}", stats.packets, stats.error);
}
