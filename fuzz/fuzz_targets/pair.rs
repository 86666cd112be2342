//! Any bytes as a client and a server capture through the two-vantage matcher
//! (`analyze_pair`): it must never panic, hang or grow without bound, whatever the two
//! captures hold (time jumps, clocks far apart, many connections, one side empty).
//!
//! Input layout: a 4-byte little-endian word whose low 31 bits are a length n (taken modulo
//! the rest's length + 1) and whose top bit selects a 2-KB state budget, then the client
//! capture (n bytes), then the server capture (the rest). The seeds in
//! fuzz/seeds/pair follow it (scripts/make_fuzz_seeds.py).
#![no_main]

use std::path::PathBuf;

use hsrtcp_core::matcher::analyze_pair;
use libfuzzer_sys::fuzz_target;

#[path = "common/small_match.rs"]
mod small_match;
use small_match::small_match_options;

/// `analyze_pair` reads paths: two scratch files per fuzzing process, rewritten per input.
fn scratch(side: &str) -> PathBuf {
    std::env::temp_dir().join(format!("hsrtcp-fuzz-pair-{}.{side}.pcap", std::process::id()))
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let (head, rest) = data.split_at(4);
    let word = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
    let n = (word & 0x7FFF_FFFF) as usize % (rest.len() + 1);
    let (client, server) = rest.split_at(n);
    let (c, s) = (scratch("client"), scratch("server"));
    std::fs::write(&c, client).expect("write the scratch client capture");
    std::fs::write(&s, server).expect("write the scratch server capture");
    // The length word's top bit picks the 2-KB state budget.
    let opts = small_match_options(word & 0x8000_0000 != 0);
    let r = analyze_pair(&c, &s, opts);
    let matched = r.matched.finish();
    let _ = (r.events.finish(), r.series.finish());
    assert_eq!(matched.num_rows() as u64, r.pairs + r.client_only + r.server_only);
});
