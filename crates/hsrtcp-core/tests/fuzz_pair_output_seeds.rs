//! The `pair_output` fuzz target's body (fuzz/fuzz_targets/common/pair_output.rs) over every
//! committed seed of fuzz/seeds/pair_output, on stable Rust: the target keeps compiling, and
//! the seeds (real fixture cuts, scans, time jumps, the inputs the `pair` target found) pass
//! its invariants on every path through `PairOutput`.

use std::path::Path;

#[path = "../../../fuzz/fuzz_targets/common/pair_output.rs"]
mod pair_output;

fn seeds() -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/pair_output");
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            let p = e.unwrap().path();
            (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap())
        })
        .collect();
    out.sort();
    out
}

#[test]
fn every_pair_output_seed_keeps_the_invariants() {
    let all = seeds();
    assert!(all.len() >= 20, "{} seeds", all.len());
    for (name, data) in &all {
        pair_output::run(data, "seeds").unwrap_or_else(|| panic!("{name}: too short to be a seed"));
    }
}

#[test]
fn the_fixture_cut_pairs_its_connection_on_every_path() {
    // The 12-record cuts of clean_200k (tests/data/README.md): one connection, handshake
    // included, in both captures; tshark shows one TCP conversation in each cut.
    for (name, data) in seeds().iter().filter(|(n, _)| n.starts_with("clean_200k")) {
        let o = pair_output::run(data, "cut").unwrap();
        assert_eq!((o.pairs, o.matched), (1, 1), "{name}");
        assert_eq!(o.rows["flows"], 3, "{name}: client row, server row, matched row");
        assert_eq!(o.rows.contains_key("packets"), name.contains("packets"), "{name}");
    }
}
