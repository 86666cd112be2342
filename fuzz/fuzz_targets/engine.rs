//! Any bytes as one capture file through the whole single-vantage analysis (reader → decoder
//! → flow table → tables, `analyze_capture`): it must never panic, hang or grow without
//! bound — time jumps (a record at 0 or at 0xFFFFFFFF seconds) and many connections included
//! (seeds in fuzz/seeds/engine, see fuzz/README.md). Every table it sends must be readable.
#![no_main]

use std::path::PathBuf;

use hsrtcp_core::analyze::analyze_capture;
use hsrtcp_core::flow::CaptureInfo;
use libfuzzer_sys::fuzz_target;

/// `analyze_capture` reads a path: one scratch file per fuzzing process, rewritten per input.
fn scratch() -> PathBuf {
    std::env::temp_dir().join(format!("hsrtcp-fuzz-engine-{}.pcap", std::process::id()))
}

fuzz_target!(|data: &[u8]| {
    let path = scratch();
    std::fs::write(&path, data).expect("write the scratch capture");
    let mut captures = 0usize;
    // Small batches so the flushing paths run on small inputs too.
    let stats = analyze_capture(&path, CaptureInfo::default(), 64, &mut |_| true, &mut |name, b| {
        if name == "captures" {
            assert_eq!(b.num_rows(), 1);
            captures += 1;
        }
    });
    let stats = stats.expect("never interrupted: progress always says go on");
    assert_eq!(captures, 1, "exactly one captures row");
    if let Some(e) = &stats.error {
        assert!(!e.is_empty());
    }
});
