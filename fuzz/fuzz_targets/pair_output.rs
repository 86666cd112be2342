//! Any bytes as a client and a server capture through the core's two-vantage output path,
//! the one the Python binding drives (`matcher::output::PairOutput`: both files' analyses,
//! the matcher, the pair join and the Parquet tables): it must never panic, hang or grow
//! without bound; the tables read back have their declared schemas and one matched row per
//! pair and per one-sided connection. Input layout and checks: common/pair_output.rs.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "common/pair_output.rs"]
mod pair_output;

fuzz_target!(|data: &[u8]| {
    let _ = pair_output::run(data, "fuzz");
});
