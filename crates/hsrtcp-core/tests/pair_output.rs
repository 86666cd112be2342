//! The core's pair join and its orchestration (`matcher::output::PairOutput`) on a real
//! fixture pair, written to Parquet and read back. Witnesses for the numbers: tshark's frame
//! counts of the two captures (587 client, 591 server) and conversation table (three
//! connections, ports 46386/46398/46404 to 5201), the fixture's lab truth
//! (multi_concurrent.json: 3 connections, 4 data packets lost, no ACK lost), and the rows
//! `hsrtcp analyze --client ... --server ... --packets` (the Python path, built on the
//! binding's own join before it moved here) wrote for the same pair.

use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use hsrtcp_core::matcher::output::{PairJob, PairOutput};
use hsrtcp_core::matcher::pair_stats::PAIR_STATS_VERSION;
use hsrtcp_core::matcher::MatchOptions;
use hsrtcp_core::table::parquet::ParquetDir;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

const SERVER_BASE: u64 = 1 << 40;
const MATCH_BASE: u64 = 1 << 62;

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data")
}

/// A fresh directory under the system's temporary directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let d = std::env::temp_dir().join(format!("hsrtcp-pair-output-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        TempDir(d)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn job(name: &str) -> PairJob {
    let d = data();
    let paths = [d.join(format!("{name}.client.pcap")), d.join(format!("{name}.server.pcap"))];
    let opts = MatchOptions {
        client_name: "phone.pcap".into(),
        server_name: "server.pcap".into(),
        id_base: MATCH_BASE,
        ..MatchOptions::default()
    };
    PairJob { paths, orders: [0, 1], slot: 0, id_bases: [0, SERVER_BASE], opts }
}

/// The tables of one run: every file read whole.
struct Tables {
    flows: RecordBatch,
    pair_stats: RecordBatch,
    packets: RecordBatch,
}

fn read(staged: &[(&'static str, PathBuf)], table: &str) -> RecordBatch {
    let path = &staged.iter().find(|(t, _)| *t == table).unwrap_or_else(|| panic!("no {table} file")).1;
    let r = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path).unwrap()).unwrap().build().unwrap();
    let batches: Vec<RecordBatch> = r.map(|b| b.unwrap()).collect();
    arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap()
}

/// The pair as the CLI runs a pair whose files are in no other pair (`both`: one job reads
/// both files and feeds the matcher), or as it runs a file shared by several pairs (each
/// file analyzed alone, the matcher reading both files again).
fn run(name: &str, both: bool, tag: &str) -> (Tables, Vec<RecordBatch>) {
    let tmp = TempDir::new(tag);
    let dir = ParquetDir::create(&tmp.0, ".t.", &[("pair_stats", PAIR_STATS_VERSION)]).unwrap();
    let out = PairOutput::new(dir, true);
    let j = job(name);
    let mut go = |_: u64| true;
    let kept_flows = if both {
        let mut go2 = |_: u64| true;
        let [c, s] = out.analyze_pair_files(j, true, [&mut go, &mut go2]).unwrap();
        [c.flows.unwrap(), s.flows.unwrap()].concat()
    } else {
        let mut kept = Vec::new();
        for file in j.files() {
            kept.extend(out.analyze(file, true, true, &mut go).unwrap().flows.unwrap());
        }
        out.match_pair(j);
        kept
    };
    let done = out.finish_pairs(2, true).unwrap();
    assert!(done.warnings.is_empty(), "{:?}", done.warnings);
    let staged = out.close().expect("open").unwrap();
    let t = Tables { flows: read(&staged, "flows"), pair_stats: read(&staged, "pair_stats"), packets: read(&staged, "packets") };
    (t, [kept_flows, done.flows].concat())
}

fn u64s(b: &RecordBatch, c: &str) -> Vec<Option<u64>> {
    b.column_by_name(c).unwrap_or_else(|| panic!("no {c}")).as_primitive::<UInt64Type>().iter().collect()
}

fn strs(b: &RecordBatch, c: &str) -> Vec<Option<String>> {
    b.column_by_name(c).unwrap().as_string::<i32>().iter().map(|s| s.map(str::to_string)).collect()
}

fn i64_of(b: &RecordBatch, c: &str) -> i64 {
    b.column_by_name(c).unwrap().as_primitive::<Int64Type>().value(0)
}

#[test]
fn the_core_joins_a_real_pair_as_the_python_path_did() {
    let (t, kept) = run("multi_concurrent", true, "both");
    let f = &t.flows;
    // The files' rows (client file, then server file), then the pair's matched rows.
    let vantage: Vec<_> = strs(f, "vantage").into_iter().map(Option::unwrap).collect();
    assert_eq!(vantage, ["client", "client", "client", "server", "server", "server", "matched", "matched", "matched"]);
    let ids = u64s(f, "flow_id");
    let want_ids: Vec<Option<u64>> = [0, 1, 2, SERVER_BASE, SERVER_BASE + 1, SERVER_BASE + 2, MATCH_BASE, MATCH_BASE + 1, MATCH_BASE + 2]
        .into_iter()
        .map(Some)
        .collect();
    assert_eq!(ids, want_ids);
    let m = f.slice(6, 3);
    assert_eq!(strs(&m, "pairing"), vec![Some("isn".to_string()); 3]);
    assert_eq!(u64s(&m, "client_port"), [Some(46386), Some(46398), Some(46404)]);
    assert_eq!(u64s(&m, "client_flow_id"), [Some(0), Some(1), Some(2)]);
    assert_eq!(u64s(&m, "server_flow_id"), [Some(SERVER_BASE), Some(SERVER_BASE + 1), Some(SERVER_BASE + 2)]);
    assert_eq!(strs(&m, "capture"), vec![Some("phone.pcap + server.pcap".to_string()); 3]);
    // The matcher's columns (lab truth: 4 data packets lost in all, no ACK).
    assert_eq!(u64s(&m, "lost_data_packets"), [Some(2), Some(0), Some(2)]);
    assert_eq!(u64s(&m, "data_packets_sent"), [Some(142), Some(141), Some(143)]);
    assert_eq!(u64s(&m, "lost_ack_packets"), [Some(0); 3]);
    // The single-capture columns come from the server-side row of the connection.
    assert_eq!(u64s(&m, "s2c_packets"), u64s(&f.slice(3, 3), "s2c_packets"));
    assert_eq!(u64s(&m, "s2c_packets"), [Some(144), Some(144), Some(146)]);
    assert_eq!(u64s(&m, "c2s_packets"), [Some(33), Some(30), Some(94)]);
    let dur = |b: &RecordBatch| -> Vec<f64> { b.column_by_name("duration_s").unwrap().as_primitive::<Float64Type>().values().to_vec() };
    assert_eq!(dur(&m), dur(&f.slice(3, 3)));
    assert_ne!(dur(&m), dur(&f.slice(0, 3)), "the client-side durations differ: the base row is the server's");
    // The single-capture rows have no matcher values.
    assert_eq!(f.slice(0, 6).column_by_name("pairing").unwrap().null_count(), 6);
    // What the caller gets back is what was written.
    assert_eq!(kept.iter().map(RecordBatch::num_rows).sum::<usize>(), 9);

    let s = &t.pair_stats;
    assert_eq!(s.num_rows(), 1);
    for (c, v) in [("client_packets", 587), ("server_packets", 591), ("pairs", 3), ("client_only", 0), ("server_only", 0), ("budget_flushes", 0)] {
        assert_eq!(i64_of(s, c), v, "{c}");
    }
    assert_eq!(strs(s, "client_capture"), [Some("phone.pcap".to_string())]);

    // packets.fate: every client record delivered; the server's 591 records are 587
    // delivered and the 4 the lab dropped.
    let p = &t.packets;
    assert_eq!(p.num_rows(), 587 + 591);
    let (pid, fate) = (u64s(p, "flow_id"), strs(p, "fate"));
    let count = |server: bool, what: &str| {
        pid.iter().zip(&fate).filter(|(id, f)| (id.unwrap() >= SERVER_BASE) == server && f.as_deref() == Some(what)).count()
    };
    assert_eq!((count(false, "delivered"), count(true, "delivered"), count(true, "lost")), (587, 587, 4));
}

#[test]
fn files_analyzed_apart_give_the_tables_of_the_joint_run() {
    let (joint, _) = run("multi_concurrent", true, "joint");
    let (apart, _) = run("multi_concurrent", false, "apart");
    assert_eq!(joint.flows, apart.flows);
    assert_eq!(joint.pair_stats, apart.pair_stats);
    assert_eq!(joint.packets, apart.packets);
}
