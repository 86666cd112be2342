//! `_native.analyze_pair`: the two-vantage matcher (hsrtcp_core::matcher) for Python.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{new_null_array, Array, ArrayRef, RecordBatch};
use arrow_schema::{FieldRef, Schema, SchemaRef};
use arrow_select::interleave::interleave;
use hsrtcp_core::flow::event::nanos_to_s;
use hsrtcp_core::flow::{engine, table, CaptureInfo};
use hsrtcp_core::matcher::fate::FrameFates;
use hsrtcp_core::matcher::metrics::MATCH_SERIES_COLUMNS;
use hsrtcp_core::matcher::{analyze_pair as core_pair, match_batches, MatchOptions, PairResult, PairingMethod, MATCH_COLUMNS};
use hsrtcp_core::stream;
use hsrtcp_core::table::parquet::{ParquetDir, TableSender, SEND_ROWS};
use hsrtcp_core::table::{col, schema_of, to_ipc, ColType, ColumnDef, TableBuilder};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use crate::rows;

/// Match a client-side and a server-side capture. Returns a dict: `matched`, `events` and
/// `series` (M6 per-bin loss of the matched flows) as Arrow IPC stream bytes, and `stats` (a dict of run facts: packets per side, read errors,
/// clock fit, pair counts). Never raises for bad input: read errors are in `stats`.
#[pyfunction]
#[pyo3(signature = (client, server, client_name, server_name, id_base=0, window_s=30.0, use_ip_id=false))]
pub fn analyze_pair<'py>(
    py: Python<'py>,
    client: PathBuf,
    server: PathBuf,
    client_name: String,
    server_name: String,
    id_base: u64,
    window_s: f64,
    use_ip_id: bool,
) -> PyResult<Bound<'py, PyDict>> {
    if !(window_s > 0.0) {
        return Err(pyo3::exceptions::PyValueError::new_err("window_s must be positive"));
    }
    let opts = MatchOptions { window_s, client_name, server_name, id_base, use_ip_id, ..MatchOptions::default() };
    let r = py.allow_threads(|| core_pair(&client, &server, opts));
    let d = PyDict::new_bound(py);
    let stats = PyDict::new_bound(py);
    for (side, s) in ["client", "server"].iter().zip(r.stats.iter()) {
        stats.set_item(format!("{side}_packets"), s.packets)?;
        stats.set_item(format!("{side}_tcp_packets"), s.tcp_packets)?;
        stats.set_item(format!("{side}_error"), s.error.clone())?;
    }
    stats.set_item("coarse_offset_s", nanos_to_s(r.coarse_offset))?;
    let c = r.clock;
    stats.set_item("clock_known", c.known())?;
    stats.set_item("clock_offset_s", c.known().then_some(c.offset_s))?;
    stats.set_item("clock_ref_ts", c.known().then(|| nanos_to_s(c.t_ref)))?;
    stats.set_item("clock_drift_ppm", c.known().then_some(c.drift * 1e6))?;
    stats.set_item("clock_offset_uncertainty_s", c.known().then_some(c.uncertainty_s))?;
    stats.set_item("clock_samples_down", c.samples[0])?;
    stats.set_item("clock_samples_up", c.samples[1])?;
    stats.set_item("pairs", r.pairs)?;
    stats.set_item("client_only", r.client_only)?;
    stats.set_item("server_only", r.server_only)?;
    stats.set_item("budget_flushes", r.budget.flushes)?;
    stats.set_item("budget_dropped_segments", r.budget.dropped)?;
    d.set_item("matched", PyBytes::new_bound(py, &to_ipc(&r.matched.finish())))?;
    d.set_item("events", PyBytes::new_bound(py, &to_ipc(&r.events.finish())))?;
    d.set_item("series", PyBytes::new_bound(py, &to_ipc(&r.series.finish())))?;
    d.set_item("stats", stats)?;
    Ok(d)
}

// ---------------------------------------------------------------------------------------
// Two-vantage runs straight into Parquet (`PairOut`): the single-capture tables of every
// file stream to the writer as `ParquetOut` does; the matcher's rows follow once it is done.

/// Schema version of `pair_stats`: that of docs/formats/matched.md.
pub const PAIR_STATS_VERSION: u32 = 4;

/// The `pair_stats` table: one row per (client, server) pair of a two-vantage run
/// (docs/formats/matched.md). Counts are int64 (they were polars' inference from Python
/// ints when this table was built in Python).
pub const PAIR_STATS_COLUMNS: &[ColumnDef] = &[
    col("client_packets", ColType::I64, "packets read from the client-side capture"),
    col("client_tcp_packets", ColType::I64, "TCP packets of the client-side capture"),
    col("client_error", ColType::Str, "error that stopped reading the client-side capture (file and byte offset), null if none"),
    col("server_packets", ColType::I64, "packets read from the server-side capture"),
    col("server_tcp_packets", ColType::I64, "TCP packets of the server-side capture"),
    col("server_error", ColType::Str, "error that stopped reading the server-side capture, null if none"),
    col("coarse_offset_s", ColType::F64, "coarse clock offset (server - client) from the first packet both captures show, seconds"),
    col("clock_known", ColType::Bool, "whether one-way delays gave a clock fit (A9)"),
    col("clock_offset_s", ColType::F64, "server clock - client clock at clock_ref_ts, seconds (A9); null without a fit"),
    col("clock_ref_ts", ColType::F64, "reference time of the clock fit, seconds since the Unix epoch (server clock)"),
    col("clock_drift_ppm", ColType::F64, "drift of the server clock against the client clock, ppm"),
    col("clock_offset_uncertainty_s", ColType::F64, "hard bound on the offset's error, seconds (A9)"),
    col("clock_samples_down", ColType::I64, "downlink one-way delay samples of the clock fit"),
    col("clock_samples_up", ColType::I64, "uplink one-way delay samples of the clock fit"),
    col("pairs", ColType::I64, "connections found in both captures"),
    col("client_only", ColType::I64, "connections seen in the client-side capture only"),
    col("server_only", ColType::I64, "connections seen in the server-side capture only"),
    col("budget_flushes", ColType::I64, "times the matcher's state budget closed a pair's window early (verdicts exact only when 0; docs/two-vantage.md, Memory)"),
    col("budget_dropped_segments", ColType::I64, "segments of connections still looking for their partner dropped by the state budget (0 unless a window held more packets than the budget)"),
    col("client_capture", ColType::Str, "client-side capture file"),
    col("server_capture", ColType::Str, "server-side capture file"),
];

/// The matched `flows` rows' links to the single-capture rows of their connection.
pub const MATCHED_ID_COLUMNS: &[ColumnDef] = &[
    col("client_flow_id", ColType::U64, "flow_id of the connection's single-capture row in the client-side capture"),
    col("server_flow_id", ColType::U64, "flow_id of the connection's single-capture row in the server-side capture"),
];

/// Identity of a connection in one capture, as flows rows and the matcher's cv_/sv_ columns give it.
type ConnKey = (String, u64, String, u64, u64);
const KEY_COLUMNS: [&str; 5] = ["client_addr", "client_port", "server_addr", "server_port", "epoch"];

/// The matcher's output for one pair, waiting for every pair to be done.
struct PairDone {
    matched: RecordBatch,
    events: RecordBatch,
    series: RecordBatch,
    stats: RecordBatch,
    /// Order numbers (files) of the pair's client and server capture.
    files: [usize; 2],
    /// What the matcher's state budget cost this pair, if anything (for stderr).
    warning: Option<String>,
    /// Verdicts per record of the client's and server's capture, for the `packets` rows
    /// held by `analyze` (shared files); empty when the pair's own job applied them.
    fates: [FrameFates; 2],
}

/// `MatchOptions::state_budget` from megabytes (at least one).
fn budget_bytes(mb: usize) -> PyResult<usize> {
    if mb == 0 {
        return Err(pyo3::exceptions::PyValueError::new_err("the matcher's state budget must be at least 1 MB"));
    }
    Ok(mb.saturating_mul(1 << 20))
}

/// The warning for a pair whose matcher hit its state budget (docs/two-vantage.md, "Memory").
fn budget_warning(r: &PairResult, names: [&str; 2], budget: usize) -> Option<String> {
    let b = r.budget;
    (b.flushes > 0 || b.dropped > 0).then(|| {
        format!(
            "{} + {}: a window of capture time held more packets than the matcher's budget \
             ({} MB, --match-memory): {} early window closes, {} segments dropped before pairing; the \
             verdicts of the packets then in flight are approximate (pair_stats budget_*; \
             docs/two-vantage.md, Memory)",
            names[0],
            names[1],
            budget >> 20,
            b.flushes,
            b.dropped
        )
    })
}

/// A two-vantage run writing its tables into a directory as Parquet while it runs:
/// `analyze` every capture file (its single-capture tables stream to the files as in
/// `ParquetOut`; its flows rows are also kept, one row per connection), `match_pair` every
/// pair (the matcher's rows are kept: one per connection, plus its per-second loss series
/// and spurious-timeout events), then `finish_pairs` builds the matched flows rows from
/// both and writes them after the files' rows, and `close` finishes the files.
///
/// Tables that gain two-vantage columns (`flows`, `series`) are written with the union of
/// both schemas from the first row (single-capture rows null in the two-vantage columns):
/// the same tables the in-memory path (polars, `how="diagonal_relaxed"`) built.
#[pyclass(module = "hsrtcp._native")]
pub struct PairOut {
    dir: Mutex<Option<ParquetDir>>,
    sender: TableSender,
    single_flows: SchemaRef,
    flows_schema: SchemaRef,
    series_schema: SchemaRef,
    held: Mutex<HashMap<usize, Vec<RecordBatch>>>,
    done: Mutex<BTreeMap<usize, PairDone>>,
    /// `packets` rows of files shared by several pairs, waiting for all their pairs' fates.
    held_packets: Mutex<HashMap<usize, Vec<RecordBatch>>>,
    /// Every file's analysis also writes the `packets` table.
    packets: bool,
}

/// `base`'s fields, then those of `extra` whose names `base` lacks.
fn union_schema(base: &Schema, extra: &[&Schema]) -> SchemaRef {
    let mut fields: Vec<FieldRef> = base.fields().iter().cloned().collect();
    for s in extra {
        for f in s.fields() {
            if !fields.iter().any(|g| g.name() == f.name()) {
                fields.push(f.clone());
            }
        }
    }
    Arc::new(Schema::new(fields))
}

/// `batch` with the columns of `schema`, taken by name; columns it lacks are null.
fn conform(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch, String> {
    let cols = schema
        .fields()
        .iter()
        .map(|f| match batch.column_by_name(f.name()) {
            Some(c) if c.data_type() == f.data_type() => Ok(c.clone()),
            Some(c) => Err(format!("column {}: {} where {} was expected", f.name(), c.data_type(), f.data_type())),
            None => Ok(new_null_array(f.data_type(), batch.num_rows())),
        })
        .collect::<Result<Vec<_>, _>>()?;
    RecordBatch::try_new(schema.clone(), cols).map_err(|e| e.to_string())
}

fn str_col<'a>(b: &'a RecordBatch, name: &str) -> Option<&'a arrow_array::StringArray> {
    b.column_by_name(name).and_then(|c| c.as_string_opt::<i32>())
}

fn u64_col<'a>(b: &'a RecordBatch, name: &str) -> Option<&'a arrow_array::UInt64Array> {
    b.column_by_name(name).and_then(|c| c.as_primitive_opt::<UInt64Type>())
}

/// The connection key of row `r` (columns `prefix` + KEY_COLUMNS); None if any part is null.
fn key_of(b: &RecordBatch, prefix: &str, r: usize) -> Option<ConnKey> {
    let s = |n: &str| str_col(b, &format!("{prefix}{n}")).filter(|c| c.is_valid(r)).map(|c| c.value(r).to_string());
    let u = |n: &str| u64_col(b, &format!("{prefix}{n}")).filter(|c| c.is_valid(r)).map(|c| c.value(r));
    Some((s(KEY_COLUMNS[0])?, u(KEY_COLUMNS[1])?, s(KEY_COLUMNS[2])?, u(KEY_COLUMNS[3])?, u(KEY_COLUMNS[4])?))
}

/// The pairing method of row `r` of a matcher batch; None if null or unknown.
fn pairing_of(pairing: Option<&arrow_array::StringArray>, r: usize) -> Option<PairingMethod> {
    pairing.filter(|c| c.is_valid(r)).and_then(|c| PairingMethod::parse(c.value(r)))
}

/// The `flows` rows with vantage `matched` of one pair: each matcher row joined with the
/// single-capture row of its connection in each capture (by 4-tuple + epoch). The row
/// starts from the server-side row (the client-side one for a connection only the client
/// capture has), takes the matcher's values where both have a column, and points at the
/// single-capture rows (`client_flow_id`, `server_flow_id`).
fn matched_flows(
    m: &RecordBatch,
    sides: [&[RecordBatch]; 2],
    base_schema: &SchemaRef,
    schema: &SchemaRef,
) -> Result<RecordBatch, String> {
    // Sources to gather the base rows from: the client's batches, the server's, one null row.
    let mut sources: Vec<RecordBatch> = Vec::new();
    let mut index: [HashMap<ConnKey, (usize, usize)>; 2] = [HashMap::new(), HashMap::new()];
    for (s, batches) in sides.iter().enumerate() {
        for b in batches.iter() {
            let bi = sources.len();
            for r in 0..b.num_rows() {
                if let Some(k) = key_of(b, "", r) {
                    index[s].entry(k).or_insert((bi, r));
                }
            }
            sources.push(b.clone());
        }
    }
    let null_row = RecordBatch::try_new(
        base_schema.clone(),
        base_schema.fields().iter().map(|f| new_null_array(f.data_type(), 1)).collect(),
    )
    .map_err(|e| e.to_string())?;
    let null_at = (sources.len(), 0);
    sources.push(null_row);
    let n = m.num_rows();
    let mut at: [Vec<Option<(usize, usize)>>; 2] = [Vec::with_capacity(n), Vec::with_capacity(n)];
    for r in 0..n {
        for (s, prefix) in ["cv_", "sv_"].iter().enumerate() {
            at[s].push(key_of(m, prefix, r).and_then(|k| index[s].get(&k).copied()));
        }
    }
    let ids = |s: usize| -> ArrayRef {
        let v: arrow_array::UInt64Array = at[s]
            .iter()
            .map(|a| a.and_then(|(b, r)| u64_col(&sources[b], "flow_id").map(|c| c.value(r))))
            .collect();
        Arc::new(v)
    };
    let base: Vec<(usize, usize)> = (0..n).map(|r| at[1][r].or(at[0][r]).unwrap_or(null_at)).collect();
    let capture: arrow_array::StringArray = {
        let (c, s) = (str_col(m, "client_capture"), str_col(m, "server_capture"));
        (0..n)
            .map(|r| match (c, s) {
                (Some(c), Some(s)) if c.is_valid(r) && s.is_valid(r) => Some(format!("{} + {}", c.value(r), s.value(r))),
                _ => None,
            })
            .collect()
    };
    let mut cols: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    for f in schema.fields() {
        let name = f.name().as_str();
        let col: ArrayRef = match name {
            "vantage" => Arc::new(arrow_array::StringArray::from(vec!["matched"; n])),
            "capture" => Arc::new(capture.clone()),
            "client_flow_id" => ids(0),
            "server_flow_id" => ids(1),
            _ => match m.column_by_name(name) {
                Some(c) => c.clone(),
                None if base_schema.column_with_name(name).is_some() => {
                    let arrays = sources
                        .iter()
                        .map(|b| b.column_by_name(name).map(|c| c.as_ref()))
                        .collect::<Option<Vec<&dyn Array>>>()
                        .ok_or_else(|| format!("a flows batch without column {name}"))?;
                    interleave(&arrays, &base).map_err(|e| e.to_string())?
                }
                None => new_null_array(f.data_type(), n),
            },
        };
        if col.data_type() != f.data_type() {
            return Err(format!("matched column {name}: {} where {} was expected", col.data_type(), f.data_type()));
        }
        cols.push(col);
    }
    RecordBatch::try_new(schema.clone(), cols).map_err(|e| e.to_string())
}

fn stats_row(r: &PairResult, names: [&str; 2]) -> RecordBatch {
    let mut t = TableBuilder::new(&[PAIR_STATS_COLUMNS]);
    {
        let mut row = t.row();
        let c = r.clock;
        let known = c.known();
        row.i64("client_packets", r.stats[0].packets as i64)
            .i64("client_tcp_packets", r.stats[0].tcp_packets as i64)
            .str("client_error", r.stats[0].error.as_deref())
            .i64("server_packets", r.stats[1].packets as i64)
            .i64("server_tcp_packets", r.stats[1].tcp_packets as i64)
            .str("server_error", r.stats[1].error.as_deref())
            .f64("coarse_offset_s", nanos_to_s(r.coarse_offset))
            .bool("clock_known", known)
            .f64("clock_offset_s", known.then_some(c.offset_s))
            .f64("clock_ref_ts", known.then(|| nanos_to_s(c.t_ref)))
            .f64("clock_drift_ppm", known.then_some(c.drift * 1e6))
            .f64("clock_offset_uncertainty_s", known.then_some(c.uncertainty_s))
            .i64("clock_samples_down", c.samples[0] as i64)
            .i64("clock_samples_up", c.samples[1] as i64)
            .i64("pairs", r.pairs as i64)
            .i64("client_only", r.client_only as i64)
            .i64("server_only", r.server_only as i64)
            .i64("budget_flushes", r.budget.flushes as i64)
            .i64("budget_dropped_segments", r.budget.dropped as i64)
            .str("client_capture", Some(names[0]))
            .str("server_capture", Some(names[1]));
    }
    t.finish()
}

fn os_err(e: String) -> PyErr {
    pyo3::exceptions::PyOSError::new_err(e)
}

#[pymethods]
impl PairOut {
    #[new]
    #[pyo3(signature = (dir, prefix=".hsrtcp-new.", packets=false))]
    fn new(dir: PathBuf, prefix: &str, packets: bool) -> PyResult<Self> {
        let out = crate::create_dir(&dir, prefix)?;
        let single_flows = schema_of(&[table::FLOW_COLUMNS, engine::FLOW_COLUMNS].concat());
        let flows_schema = union_schema(&single_flows, &[&schema_of(MATCH_COLUMNS), &schema_of(MATCHED_ID_COLUMNS)]);
        let single_flows = Arc::new(single_flows);
        let single_series = schema_of(&[table::SERIES_COLUMNS, engine::SERIES_COLUMNS].concat());
        let series_schema = union_schema(&single_series, &[&schema_of(MATCH_SERIES_COLUMNS)]);
        Ok(PairOut {
            sender: out.sender(),
            dir: Mutex::new(Some(out)),
            single_flows,
            flows_schema,
            series_schema,
            held: Mutex::new(HashMap::new()),
            done: Mutex::new(BTreeMap::new()),
            held_packets: Mutex::new(HashMap::new()),
            packets,
        })
    }

    /// Analyze one capture file of the run (as `ParquetOut.analyze`); its flows rows are
    /// also kept for the matched rows. `order`: the file's number (0, 1, ...).
    /// `hold_packets`: the file belongs to a pair run by `match_pair`; its `packets` rows
    /// wait in memory for that pair's fates (`finish_pairs` writes them).
    #[pyo3(signature = (path, name, vantage=None, id_base=0, progress=None, keep_flows=false, order=0, hold_packets=false))]
    #[allow(clippy::too_many_arguments)]
    fn analyze<'py>(
        &self,
        py: Python<'py>,
        path: PathBuf,
        name: String,
        vantage: Option<String>,
        id_base: u64,
        progress: Option<PyObject>,
        keep_flows: bool,
        order: usize,
        hold_packets: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let hold = hold_packets && self.packets;
        let (captures, flows, _, held) =
            py.allow_threads(|| self.analyze_file(&path, name, vantage, id_base, &progress, order, None, None, hold))?;
        if hold {
            self.held_packets.lock().expect("not poisoned").insert(order, held);
        }
        self.file_result(py, captures, flows, keep_flows, order)
    }

    /// One pair whose two files belong to no other pair, read and decoded once: both
    /// files are analyzed at the same time (as `analyze`, files number `client_order` and
    /// `server_order`) and the matcher (as `match_pair`, pair number `slot`) takes the
    /// segments their readers decoded. Returns the two results of `analyze` (client, server).
    #[pyo3(signature = (client, server, client_name, server_name, client_order, server_order, slot,
                        client_id_base, server_id_base, match_id_base, window_s=30.0, use_ip_id=false,
                        client_progress=None, server_progress=None, keep_flows=false, state_budget_mb=256))]
    #[allow(clippy::too_many_arguments)]
    fn analyze_pair_files<'py>(
        &self,
        py: Python<'py>,
        client: PathBuf,
        server: PathBuf,
        client_name: String,
        server_name: String,
        client_order: usize,
        server_order: usize,
        slot: usize,
        client_id_base: u64,
        server_id_base: u64,
        match_id_base: u64,
        window_s: f64,
        use_ip_id: bool,
        client_progress: Option<PyObject>,
        server_progress: Option<PyObject>,
        keep_flows: bool,
        state_budget_mb: usize,
    ) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyDict>)> {
        if !(window_s > 0.0) {
            return Err(pyo3::exceptions::PyValueError::new_err("window_s must be positive"));
        }
        let state_budget = budget_bytes(state_budget_mb)?;
        let names = [client_name.clone(), server_name.clone()];
        // Ctrl-C stops one side's analysis (the main thread's); the other and the matcher
        // stop with it.
        let cancel_flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let opts = MatchOptions {
            window_s,
            client_name,
            server_name,
            id_base: match_id_base,
            use_ip_id,
            cancel: Some(Arc::clone(&cancel_flag)),
            state_budget,
            record_fates: self.packets,
            ..MatchOptions::default()
        };
        let (rc, rs, done, sent) = py.allow_threads(|| {
            let cancel = &*cancel_flag;
            let (tap_c, seg_c) = stream::tap();
            let (tap_s, seg_s) = stream::tap();
            std::thread::scope(|scope| {
                let matcher = std::thread::Builder::new()
                    .name("hsrtcp-matcher".into())
                    .spawn_scoped(scope, move || match_batches(seg_c.batches(), seg_s.batches(), opts))
                    .expect("spawn matcher thread");
                let cli = std::thread::Builder::new()
                    .name("hsrtcp-client".into())
                    .spawn_scoped(scope, || {
                        let name = names[0].clone();
                        self.analyze_file(&client, name, Some("client".into()), client_id_base, &client_progress, client_order, Some(tap_c), Some(cancel), self.packets)
                    })
                    .expect("spawn analysis thread");
                let name = names[1].clone();
                let rs = self.analyze_file(&server, name, Some("server".into()), server_id_base, &server_progress, server_order, Some(tap_s), Some(cancel), self.packets);
                let rc = cli.join().unwrap_or_else(|_| Err(pyo3::exceptions::PyRuntimeError::new_err("internal error: analysis thread panicked")));
                let mut m = matcher.join();
                // The packets rows waited for the verdicts (packets.fate); then the files' turns end.
                let mut sent = Ok(());
                for (side, (r, order)) in [(&rc, client_order), (&rs, server_order)].into_iter().enumerate() {
                    let s = self.sender.for_capture(order);
                    if let (Ok(r), true) = (r, sent.is_ok()) {
                        for b in &r.3 {
                            let b = match m.as_mut() {
                                Ok(m) => m.fates[side].apply(b),
                                Err(_) => b.clone(),
                            };
                            sent = s.send("packets", b);
                            if sent.is_err() {
                                break;
                            }
                        }
                    }
                    if self.packets {
                        s.done();
                    }
                }
                (rc, rs, m, sent)
            })
        });
        let (rc, rs) = (rc?, rs?);
        sent.map_err(crate::write_error)?;
        let mut r = done.map_err(|_| pyo3::exceptions::PyRuntimeError::new_err("internal error: matcher thread panicked"))?;
        // The readers counted the records and saw the errors the matcher's own reading did.
        for (side, st) in [&rc.2, &rs.2].into_iter().enumerate() {
            r.stats[side].packets = st.packets;
            r.stats[side].error = st.error.clone();
        }
        let stats = stats_row(&r, [&names[0], &names[1]]);
        let warning = budget_warning(&r, [&names[0], &names[1]], state_budget);
        let pd = PairDone {
            matched: r.matched.finish(),
            events: r.events.finish(),
            series: r.series.finish(),
            stats,
            files: [client_order, server_order],
            warning,
            fates: Default::default(),
        };
        self.done.lock().expect("not poisoned").insert(slot, pd);
        let dc = self.file_result(py, rc.0, rc.1, keep_flows, client_order)?;
        let ds = self.file_result(py, rs.0, rs.1, keep_flows, server_order)?;
        Ok((dc, ds))
    }

    /// Run the matcher on one pair (pair number `slot`, files number `client_order` and
    /// `server_order` of this run); its rows wait for `finish_pairs`.
    #[pyo3(signature = (client, server, client_name, server_name, client_order, server_order, slot, id_base=0, window_s=30.0, use_ip_id=false, state_budget_mb=256))]
    #[allow(clippy::too_many_arguments)]
    fn match_pair(
        &self,
        py: Python<'_>,
        client: PathBuf,
        server: PathBuf,
        client_name: String,
        server_name: String,
        client_order: usize,
        server_order: usize,
        slot: usize,
        id_base: u64,
        window_s: f64,
        use_ip_id: bool,
        state_budget_mb: usize,
    ) -> PyResult<()> {
        if !(window_s > 0.0) {
            return Err(pyo3::exceptions::PyValueError::new_err("window_s must be positive"));
        }
        let state_budget = budget_bytes(state_budget_mb)?;
        let (cn, sn) = (client_name.clone(), server_name.clone());
        let opts = MatchOptions {
            window_s,
            client_name,
            server_name,
            id_base,
            use_ip_id,
            state_budget,
            record_fates: self.packets,
            ..MatchOptions::default()
        };
        let done = py.allow_threads(|| {
            let mut r = core_pair(&client, &server, opts);
            let stats = stats_row(&r, [&cn, &sn]);
            let warning = budget_warning(&r, [&cn, &sn], state_budget);
            PairDone {
                matched: r.matched.finish(),
                events: r.events.finish(),
                series: r.series.finish(),
                stats,
                files: [client_order, server_order],
                warning,
                fates: std::mem::take(&mut r.fates),
            }
        });
        self.done.lock().expect("not poisoned").insert(slot, done);
        Ok(())
    }

    /// Write the matched rows of every pair (pair k's rows as number `first_order + k` in
    /// the files, after the capture files' rows): flows, events, series, pair_stats.
    /// Several phone paths may share one server capture (an MPTCP bundle): a connection
    /// paired in one path's run is then not reported "server only" by another's. Returns
    /// `(flows, warnings)`: the matched flows rows as dicts with `keep_flows` (for a summary),
    /// else None; the pairs' matcher warnings (state budget), for stderr.
    #[pyo3(signature = (first_order, keep_flows=false))]
    fn finish_pairs<'py>(&self, py: Python<'py>, first_order: usize, keep_flows: bool) -> PyResult<Bound<'py, PyAny>> {
        let mut done = std::mem::take(&mut *self.done.lock().expect("not poisoned"));
        let held = std::mem::take(&mut *self.held.lock().expect("not poisoned"));
        let held_packets = std::mem::take(&mut *self.held_packets.lock().expect("not poisoned"));
        let (single, flows_schema, series_schema) =
            (self.single_flows.clone(), self.flows_schema.clone(), self.series_schema.clone());
        let sender = self.sender.clone();
        let warnings: Vec<String> = done.values().filter_map(|p| p.warning.clone()).collect();
        let rows = py.allow_threads(move || -> PyResult<Vec<RecordBatch>> {
            // A shared file's packets rows get the verdicts of every pair it is in (each
            // pair judges only the connections it paired: their frames do not overlap).
            for (order, batches) in held_packets {
                let mut fates = FrameFates::default();
                for p in done.values_mut() {
                    for side in 0..2 {
                        if p.files[side] == order {
                            fates.extend(std::mem::take(&mut p.fates[side]));
                        }
                    }
                }
                let s = sender.for_capture(order);
                let sent = batches.iter().try_for_each(|b| s.send("packets", fates.apply(b)));
                s.done();
                sent.map_err(crate::write_error)?;
            }
            let mut per_server: HashMap<usize, usize> = HashMap::new();
            for p in done.values() {
                *per_server.entry(p.files[1]).or_default() += 1;
            }
            let mut paired: HashMap<usize, HashSet<ConnKey>> = HashMap::new();
            for p in done.values().filter(|p| per_server[&p.files[1]] > 1) {
                let pairing = str_col(&p.matched, "pairing");
                for r in 0..p.matched.num_rows() {
                    if pairing_of(pairing, r).is_some_and(PairingMethod::is_paired) {
                        if let Some(k) = key_of(&p.matched, "sv_", r) {
                            paired.entry(p.files[1]).or_default().insert(k);
                        }
                    }
                }
            }
            let empty = Vec::new();
            let mut kept = Vec::new();
            for (slot, p) in done {
                let mut m = p.matched;
                if let Some(keys) = paired.get(&p.files[1]) {
                    let pairing = str_col(&m, "pairing");
                    let keep: arrow_array::BooleanArray = (0..m.num_rows())
                        .map(|r| {
                            let server_only = pairing_of(pairing, r) == Some(PairingMethod::ServerOnly);
                            Some(!(server_only && key_of(&m, "sv_", r).is_some_and(|k| keys.contains(&k))))
                        })
                        .collect();
                    m = arrow_select::filter::filter_record_batch(&m, &keep).map_err(|e| os_err(e.to_string()))?;
                }
                let sides = [
                    held.get(&p.files[0]).unwrap_or(&empty).as_slice(),
                    held.get(&p.files[1]).unwrap_or(&empty).as_slice(),
                ];
                let flows = matched_flows(&m, sides, &single, &flows_schema).map_err(os_err)?;
                let series = conform(&p.series, &series_schema).map_err(os_err)?;
                let s = sender.for_capture(first_order + slot);
                let sent = s.send("flows", flows.clone())
                    .and_then(|()| s.send("events", p.events))
                    .and_then(|()| s.send("series", series))
                    .and_then(|()| s.send("pair_stats", p.stats));
                s.done();
                sent.map_err(crate::write_error)?;
                if keep_flows {
                    kept.push(flows);
                }
            }
            Ok(kept)
        });
        let rows = rows?;
        let flows = if keep_flows { rows::to_rows(py, &rows)?.into_any() } else { py.None().into_bound(py) };
        Ok(PyTuple::new_bound(py, [flows, PyList::new_bound(py, warnings).into_any()]).into_any())
    }

    /// Finish the files; returns [(table, staged path)] (see `ParquetOut.close`).
    fn close(&self, py: Python<'_>) -> PyResult<Vec<(&'static str, PathBuf)>> {
        let out = self.dir.lock().expect("not poisoned").take();
        match out {
            Some(out) => py.allow_threads(|| out.close()).map_err(crate::write_error),
            None => Err(pyo3::exceptions::PyValueError::new_err("already closed")),
        }
    }

    /// Give up: the files are removed. A no-op after close().
    fn abort(&self, py: Python<'_>) {
        let out = self.dir.lock().expect("not poisoned").take();
        py.allow_threads(|| drop(out));
    }
}

impl PairOut {
    /// The work of `analyze` without the GIL: the file's captures and flows rows (the
    /// flows also stream to the writer) and its reader's counters.
    #[allow(clippy::too_many_arguments)]
    fn analyze_file(
        &self,
        path: &Path,
        name: String,
        vantage: Option<String>,
        id_base: u64,
        progress: &Option<PyObject>,
        order: usize,
        tap: Option<stream::Tap>,
        cancel: Option<&std::sync::atomic::AtomicBool>,
        hold_packets: bool,
    ) -> PyResult<(Vec<RecordBatch>, Vec<RecordBatch>, stream::CaptureStats, Vec<RecordBatch>)> {
        let sender = self.sender.for_capture(order);
        let (mut captures, mut flows, mut failed, mut bad) = (Vec::new(), Vec::new(), None, None);
        // With `hold_packets` the `packets` rows are kept and the capture's turn left open:
        // the caller sends them with the matcher's verdicts, then ends the turn.
        let mut held = Vec::new();
        let info = CaptureInfo { name, vantage, id_base, truncated: false, packets: self.packets };
        let r = crate::run_capture_cancellable(path, info, progress, SEND_ROWS, &mut |name, b| {
            let b = match name {
                "captures" => {
                    captures.push(b.clone());
                    b
                }
                "flows" => {
                    flows.push(b.clone());
                    conform(&b, &self.flows_schema).unwrap_or_else(|e| {
                        bad.get_or_insert(e);
                        b
                    })
                }
                "series" => conform(&b, &self.series_schema).unwrap_or_else(|e| {
                    bad.get_or_insert(e);
                    b
                }),
                "packets" if hold_packets => {
                    held.push(b);
                    return;
                }
                _ => b,
            };
            if bad.is_none() && failed.is_none() {
                failed = sender.send(name, b).err();
            }
        }, tap, cancel);
        if !hold_packets {
            sender.done();
        }
        if let Some(e) = bad {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(format!("internal error: {e}")));
        }
        let stats = r?;
        if let Some(e) = failed {
            return Err(crate::write_error(e));
        }
        Ok((captures, flows, stats, held))
    }

    /// What `analyze` returns for one file; its flows rows are kept for the matched rows.
    fn file_result<'py>(
        &self,
        py: Python<'py>,
        captures: Vec<RecordBatch>,
        flows: Vec<RecordBatch>,
        keep_flows: bool,
        order: usize,
    ) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new_bound(py);
        d.set_item("captures", rows::to_rows(py, &captures)?)?;
        d.set_item("flows", if keep_flows { rows::to_rows(py, &flows)?.into_any() } else { py.None().into_bound(py) })?;
        self.held.lock().expect("not poisoned").insert(order, flows);
        Ok(d)
    }
}
