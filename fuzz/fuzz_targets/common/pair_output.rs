//! The body of the `pair_output` fuzz target, shared with the core's cargo test
//! (crates/hsrtcp-core/tests/fuzz_pair_output_seeds.rs runs it over fuzz/seeds/pair_output
//! on stable Rust), so the target cannot rot unbuilt.
//!
//! Input layout: the `pair` target's (a 4-byte little-endian word, then the client capture,
//! then the server capture), with the word's top three bits choosing the path through
//! [`PairOutput`]: bit 31 a 2-KB matcher state budget, bit 30 the files analyzed apart
//! (`analyze` twice, then `match_pair`: how the CLI runs a server file shared by several
//! pairs) instead of `analyze_pair_files`, bit 29 the `packets` table with the matcher's
//! verdicts. The low 29 bits are the client length n (modulo the rest's length + 1).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, RecordBatch};
use arrow_schema::Schema;
use hsrtcp_core::analyze::CAPTURE_COLUMNS;
use hsrtcp_core::flow::event::EVENT_COLUMNS;
use hsrtcp_core::flow::packets::PACKET_COLUMNS;
use hsrtcp_core::matcher::join::PairSchemas;
use hsrtcp_core::matcher::output::{PairJob, PairOutput};
use hsrtcp_core::matcher::pair_stats::{PAIR_STATS_COLUMNS, PAIR_STATS_VERSION};
use hsrtcp_core::matcher::MatchOptions;
use hsrtcp_core::table::parquet::ParquetDir;
use hsrtcp_core::table::schema_of;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

#[path = "small_match.rs"]
mod small_match;
use small_match::small_match_options;

const BUDGET_BIT: u32 = 1 << 31;
const APART_BIT: u32 = 1 << 30;
const PACKETS_BIT: u32 = 1 << 29;
const LEN_MASK: u32 = PACKETS_BIT - 1;

const SERVER_BASE: u64 = 1 << 40;
const MATCH_BASE: u64 = 1 << 62;

/// What one input did (for the seed test's own checks).
#[derive(Debug, Default)]
pub struct Outcome {
    /// Rows per table written.
    pub rows: HashMap<String, usize>,
    /// The pair's matched rows (pairs + client only + server only).
    pub matched: usize,
    pub pairs: i64,
}

/// A scratch directory per process (and per `tag`: tests run in threads), emptied per input.
fn scratch(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("hsrtcp-fuzz-pair-output-{}-{tag}", std::process::id()))
}

/// Run one input through the core's two-vantage output path and check its invariants;
/// panics on a violation. `tag` names the scratch directory (distinct per thread).
pub fn run(data: &[u8], tag: &str) -> Option<Outcome> {
    if data.len() < 4 {
        return None;
    }
    let (head, rest) = data.split_at(4);
    let word = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
    let n = (word & LEN_MASK) as usize % (rest.len() + 1);
    let (client, server) = rest.split_at(n);
    let dir = scratch(tag);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the scratch directory");
    let paths = [dir.join("client.pcap"), dir.join("server.pcap")];
    std::fs::write(&paths[0], client).expect("write the scratch client capture");
    std::fs::write(&paths[1], server).expect("write the scratch server capture");
    let out = run_files(paths, &dir.join("out"), word);
    let _ = std::fs::remove_dir_all(&dir);
    Some(out)
}

fn run_files(paths: [PathBuf; 2], out_dir: &Path, word: u32) -> Outcome {
    let packets = word & PACKETS_BIT != 0;
    let opts = MatchOptions {
        client_name: "client.pcap".into(),
        server_name: "server.pcap".into(),
        id_base: MATCH_BASE,
        ..small_match_options(word & BUDGET_BIT != 0)
    };
    let job = PairJob { paths, orders: [0, 1], slot: 0, id_bases: [0, SERVER_BASE], opts };
    let dir = ParquetDir::create(out_dir, ".fuzz.", &[("pair_stats", PAIR_STATS_VERSION)]).expect("create the output");
    let run = PairOutput::new(dir, packets);
    let mut go = |_: u64| true;
    let file_flows: usize = if word & APART_BIT != 0 {
        let mut kept = 0;
        for file in job.files() {
            let rows = run.analyze(file, true, true, &mut go).expect("a file's analysis never fails here");
            kept += rows.flows.expect("asked for").iter().map(RecordBatch::num_rows).sum::<usize>();
        }
        run.match_pair(job);
        kept
    } else {
        let mut go2 = |_: u64| true;
        let rows = run.analyze_pair_files(job, true, [&mut go, &mut go2]).expect("a pair's analysis never fails here");
        rows.iter().map(|r| r.flows.as_ref().expect("asked for").iter().map(RecordBatch::num_rows).sum::<usize>()).sum()
    };
    let done = run.finish_pairs(2, true).expect("the join never fails");
    let matched: usize = done.flows.iter().map(RecordBatch::num_rows).sum();
    let staged = run.close().expect("still open").expect("the files are written");
    let tables: HashMap<&str, RecordBatch> = staged.iter().map(|(t, p)| (*t, read(p))).collect();
    for (_, p) in &staged {
        let _ = std::fs::remove_file(p);
    }
    check(&tables, file_flows, matched, packets)
}

/// Every row of a Parquet file as one batch (its schema when empty).
fn read(path: &Path) -> RecordBatch {
    let f = std::fs::File::open(path).expect("a staged file exists");
    let b = ParquetRecordBatchReaderBuilder::try_new(f).expect("a readable Parquet file");
    let schema = b.schema().clone();
    let batches: Vec<RecordBatch> = b.build().expect("reader").map(|r| r.expect("a readable row group")).collect();
    arrow_select::concat::concat_batches(&schema, &batches).expect("one schema per file")
}

/// Names, types and nullability of `got` are those of `want` (metadata aside).
fn same_fields(table: &str, got: &Schema, want: &Schema) {
    let f = |s: &Schema| s.fields().iter().map(|f| (f.name().clone(), f.data_type().clone(), f.is_nullable())).collect::<Vec<_>>();
    assert_eq!(f(got), f(want), "table {table}: written schema differs from the declared one");
}

fn check(tables: &HashMap<&str, RecordBatch>, file_flows: usize, matched: usize, packets: bool) -> Outcome {
    let schemas = PairSchemas::default();
    let declared: [(&str, Schema); 6] = [
        ("flows", (*schemas.flows).clone()),
        ("series", (*schemas.series).clone()),
        ("events", schema_of(EVENT_COLUMNS)),
        ("pair_stats", schema_of(PAIR_STATS_COLUMNS)),
        ("captures", schema_of(CAPTURE_COLUMNS)),
        ("packets", schema_of(PACKET_COLUMNS)),
    ];
    for (name, want) in &declared {
        match tables.get(name) {
            Some(b) => same_fields(name, &b.schema(), want),
            None => assert!(*name == "packets" && !packets, "no {name} table"),
        }
    }
    // One captures row per file, one pair_stats row for the pair.
    assert_eq!(tables["captures"].num_rows(), 2);
    let stats = &tables["pair_stats"];
    assert_eq!(stats.num_rows(), 1);
    let stat = |c: &str| stats.column_by_name(c).unwrap_or_else(|| panic!("no {c}")).as_primitive::<Int64Type>().value(0);
    let (pairs, c_only, s_only) = (stat("pairs"), stat("client_only"), stat("server_only"));
    // One matched row per paired connection and per one-sided connection, after the files'
    // own rows (a file's rows: one per connection).
    assert_eq!(matched as i64, pairs + c_only + s_only, "matched rows");
    let flows = &tables["flows"];
    assert_eq!(flows.num_rows(), file_flows + matched, "flows rows: the files', then the matched ones");
    let vantage = flows.column_by_name("vantage").expect("vantage").as_string::<i32>();
    let n_matched = (0..flows.num_rows()).filter(|&i| vantage.is_valid(i) && vantage.value(i) == "matched").count();
    assert_eq!(n_matched, matched);
    assert!((file_flows..flows.num_rows()).all(|i| vantage.value(i) == "matched"), "matched rows come last");
    // Each side's connections are paired at most once.
    assert!(pairs as usize <= file_flows, "{pairs} pairs from {file_flows} single-capture rows");
    Outcome {
        rows: tables.iter().map(|(k, v)| (k.to_string(), v.num_rows())).collect(),
        matched,
        pairs,
    }
}
