//! Two-vantage runs straight into Parquet ([`PairOutput`]): the single-capture tables of
//! every file stream to the writer as a single-capture run's do; the matcher's rows follow
//! once every pair is done, joined with the files' `flows` rows (`join`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;

use crate::analyze::analyze_capture_tapped;
use crate::flow::CaptureInfo;
use crate::matcher::fate::FrameFates;
use crate::matcher::join::{conform, drop_paired_elsewhere, matched_flows, paired_server_keys, ConnKey, PairSchemas};
use crate::matcher::pair_stats::{budget_warning, stats_row};
use crate::matcher::{analyze_pair, match_batches, MatchOptions, PairResult};
use crate::stream::{self, CaptureStats};
use crate::table::parquet::{ParquetDir, Staged, TableSender, WriteError, SEND_ROWS};

/// A progress callback: bytes of the file read so far; false stops the analysis.
pub type Progress<'a> = &'a mut (dyn FnMut(u64) -> bool + Send);

/// Why a [`PairOutput`] call failed.
#[derive(Debug)]
pub enum OutputError {
    /// The progress callback number `.0` of the call (0: client or the only file, 1: server)
    /// stopped its analysis; the other analysis of a pair stops with it.
    Interrupted(usize),
    /// Writing the Parquet files failed.
    Write(WriteError),
    /// A defect: rows that do not fit their table's schema, a thread that panicked.
    Internal(String),
    /// The matched rows could not be joined with the files' rows (a defect too; the binding
    /// has always shown it as an OSError).
    Join(String),
}

/// The rows the caller gets back from a file's analysis (the rest went to the files).
#[derive(Debug, Default)]
pub struct FileRows {
    pub captures: Vec<RecordBatch>,
    /// The file's `flows` rows, when asked for (`keep_flows`).
    pub flows: Option<Vec<RecordBatch>>,
}

/// One capture file of a run.
#[derive(Clone, Debug)]
pub struct FileJob {
    pub path: PathBuf,
    /// The file as shown in the tables.
    pub name: String,
    pub vantage: Option<String>,
    pub id_base: u64,
    /// The file's number in this run: the files hold the rows in this order.
    pub order: usize,
}

/// One (client, server) pair of a run. The captures' names, the matched rows' id base and
/// the matcher's settings are in `opts`.
#[derive(Clone, Debug)]
pub struct PairJob {
    pub paths: [PathBuf; 2],
    /// The files' numbers in this run (client, server).
    pub orders: [usize; 2],
    /// The pair's number: its rows come after the files', in this order.
    pub slot: usize,
    /// flow_id bases of the two files' own analyses ([`PairOutput::analyze_pair_files`]).
    pub id_bases: [u64; 2],
    pub opts: MatchOptions,
}

impl PairJob {
    /// The pair's two captures as files of the run (client, server), each with its own name,
    /// vantage, id base and number.
    pub fn files(&self) -> [FileJob; 2] {
        [0, 1].map(|s| FileJob {
            path: self.paths[s].clone(),
            name: [&self.opts.client_name, &self.opts.server_name][s].clone(),
            vantage: Some(["client", "server"][s].into()),
            id_base: self.id_bases[s],
            order: self.orders[s],
        })
    }
}

/// The matched rows of every pair ([`PairOutput::finish_pairs`]).
#[derive(Debug, Default)]
pub struct FinishedPairs {
    /// The matched `flows` rows, when asked for.
    pub flows: Vec<RecordBatch>,
    /// The pairs' matcher warnings (state budget), for stderr.
    pub warnings: Vec<String>,
}

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

impl PairDone {
    fn new(mut r: PairResult, job: &PairJob, keep_fates: bool) -> Self {
        let names = [job.opts.client_name.as_str(), job.opts.server_name.as_str()];
        PairDone {
            stats: stats_row(&r, names),
            warning: budget_warning(&r, names, job.opts.state_budget),
            fates: if keep_fates { std::mem::take(&mut r.fates) } else { Default::default() },
            matched: r.matched.finish(),
            events: r.events.finish(),
            series: r.series.finish(),
            files: job.orders,
        }
    }
}

/// What one file's analysis kept: its captures and flows rows, its reader's counters, and
/// its `packets` rows when they wait for verdicts.
struct Analyzed {
    captures: Vec<RecordBatch>,
    flows: Vec<RecordBatch>,
    stats: CaptureStats,
    packets: Vec<RecordBatch>,
}

/// A two-vantage run writing its tables into a directory as Parquet while it runs:
/// `analyze` every capture file (its single-capture tables stream to the files; its flows
/// rows are also kept, one row per connection), `match_pair` every pair (the matcher's rows
/// are kept: one per connection, plus its per-second loss series and spurious-timeout
/// events), then `finish_pairs` builds the matched flows rows from both and writes them
/// after the files' rows, and `close` finishes the files. `analyze_pair_files` does the
/// work of two `analyze` and one `match_pair` with each file read once.
///
/// Tables that gain two-vantage columns (`flows`, `series`) are written with the union of
/// both schemas from the first row ([`PairSchemas`]).
pub struct PairOutput {
    dir: Mutex<Option<ParquetDir>>,
    sender: TableSender,
    schemas: PairSchemas,
    held: Mutex<HashMap<usize, Vec<RecordBatch>>>,
    done: Mutex<BTreeMap<usize, PairDone>>,
    /// `packets` rows of files shared by several pairs, waiting for all their pairs' fates.
    held_packets: Mutex<HashMap<usize, Vec<RecordBatch>>>,
    /// Every file's analysis also writes the `packets` table.
    packets: bool,
}

/// `progress`, and once it stopped one analysis of a job, every other analysis sharing
/// `cancel` stops at its next report (Ctrl-C reaches only one thread).
fn shared_stop<'a>(progress: Progress<'a>, cancel: &'a AtomicBool) -> impl FnMut(u64) -> bool + Send + 'a {
    move |bytes| {
        if cancel.load(Relaxed) {
            return false;
        }
        let go = progress(bytes);
        if !go {
            cancel.store(true, Relaxed);
        }
        go
    }
}

impl PairOutput {
    /// A run writing into `dir`; with `packets` every file's analysis also writes the
    /// `packets` table, with the matcher's verdicts (packets.fate).
    pub fn new(dir: ParquetDir, packets: bool) -> Self {
        PairOutput {
            sender: dir.sender(),
            dir: Mutex::new(Some(dir)),
            schemas: PairSchemas::default(),
            held: Mutex::new(HashMap::new()),
            done: Mutex::new(BTreeMap::new()),
            held_packets: Mutex::new(HashMap::new()),
            packets,
        }
    }

    /// Analyze one capture file of the run; its flows rows are also kept for the matched
    /// rows. `hold_packets`: the file belongs to a pair run by `match_pair`; its `packets`
    /// rows wait in memory for that pair's fates (`finish_pairs` writes them).
    pub fn analyze(
        &self,
        file: FileJob,
        hold_packets: bool,
        keep_flows: bool,
        progress: Progress<'_>,
    ) -> Result<FileRows, OutputError> {
        let hold = hold_packets && self.packets;
        let order = file.order;
        let a = self.analyze_file(file, None, progress, hold, 0)?;
        if hold {
            self.held_packets.lock().expect("not poisoned").insert(order, a.packets);
        }
        Ok(self.keep_flows(a.captures, a.flows, keep_flows, order))
    }

    /// One pair whose two files belong to no other pair, read and decoded once: both files
    /// are analyzed at the same time (as `analyze`) and the matcher (as `match_pair`) takes
    /// the segments their readers decoded. Returns the rows of both files (client, server).
    pub fn analyze_pair_files(
        &self,
        job: PairJob,
        keep_flows: bool,
        progress: [Progress<'_>; 2],
    ) -> Result<[FileRows; 2], OutputError> {
        let cancel = Arc::new(AtomicBool::new(false));
        let opts = MatchOptions { cancel: Some(Arc::clone(&cancel)), record_fates: self.packets, ..job.opts.clone() };
        let files = job.files();
        let [pc, ps] = progress;
        let (mut report_c, mut report_s) = (shared_stop(pc, &cancel), shared_stop(ps, &cancel));
        let [fc, fs] = files;
        let (rc, rs, done, sent) = std::thread::scope(|scope| {
            let (tap_c, seg_c) = stream::tap();
            let (tap_s, seg_s) = stream::tap();
            let matcher = std::thread::Builder::new()
                .name("hsrtcp-matcher".into())
                .spawn_scoped(scope, move || match_batches(seg_c.batches(), seg_s.batches(), opts))
                .expect("spawn matcher thread");
            let cli = std::thread::Builder::new()
                .name("hsrtcp-client".into())
                .spawn_scoped(scope, || self.analyze_file(fc, Some(tap_c), &mut report_c, self.packets, 0))
                .expect("spawn analysis thread");
            let rs = self.analyze_file(fs, Some(tap_s), &mut report_s, self.packets, 1);
            let rc = cli.join().unwrap_or_else(|_| Err(OutputError::Internal("analysis thread panicked".into())));
            let mut m = matcher.join();
            let sent = self.send_judged_packets([&rc, &rs], job.orders, m.as_mut().ok());
            (rc, rs, m, sent)
        });
        let (rc, rs) = (rc?, rs?);
        sent.map_err(OutputError::Write)?;
        let mut r = done.map_err(|_| OutputError::Internal("matcher thread panicked".into()))?;
        // The readers counted the records and saw the errors the matcher's own reading did.
        for (side, st) in [&rc.stats, &rs.stats].into_iter().enumerate() {
            r.stats[side].packets = st.packets;
            r.stats[side].error = st.error.clone();
        }
        let pd = PairDone::new(r, &job, false);
        self.done.lock().expect("not poisoned").insert(job.slot, pd);
        let dc = self.keep_flows(rc.captures, rc.flows, keep_flows, job.orders[0]);
        let ds = self.keep_flows(rs.captures, rs.flows, keep_flows, job.orders[1]);
        Ok([dc, ds])
    }

    /// The `packets` rows of both files of a pair, with the matcher's verdicts
    /// (packets.fate; none when the matcher failed), then the files' turns end.
    fn send_judged_packets(
        &self,
        files: [&Result<Analyzed, OutputError>; 2],
        orders: [usize; 2],
        mut m: Option<&mut PairResult>,
    ) -> Result<(), WriteError> {
        let mut sent = Ok(());
        for (side, (r, order)) in files.into_iter().zip(orders).enumerate() {
            let s = self.sender.for_capture(order);
            if let (Ok(r), true) = (r, sent.is_ok()) {
                for b in &r.packets {
                    let b = match m.as_deref_mut() {
                        Some(m) => m.fates[side].apply(b),
                        None => b.clone(),
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
        sent
    }

    /// Run the matcher on one pair; its rows wait for `finish_pairs`.
    pub fn match_pair(&self, job: PairJob) {
        let opts = MatchOptions { record_fates: self.packets, ..job.opts.clone() };
        let r = analyze_pair(&job.paths[0], &job.paths[1], opts);
        let done = PairDone::new(r, &job, true);
        self.done.lock().expect("not poisoned").insert(job.slot, done);
    }

    /// Write the matched rows of every pair (pair k's rows as number `first_order + k` in
    /// the files, after the capture files' rows): flows, events, series, pair_stats.
    /// Several phone paths may share one server capture (an MPTCP bundle): a connection
    /// paired in one path's run is then not reported "server only" by another's.
    pub fn finish_pairs(&self, first_order: usize, keep_flows: bool) -> Result<FinishedPairs, OutputError> {
        let mut done = std::mem::take(&mut *self.done.lock().expect("not poisoned"));
        let held = std::mem::take(&mut *self.held.lock().expect("not poisoned"));
        let held_packets = std::mem::take(&mut *self.held_packets.lock().expect("not poisoned"));
        let warnings: Vec<String> = done.values().filter_map(|p| p.warning.clone()).collect();
        self.send_held_packets(held_packets, &mut done).map_err(OutputError::Write)?;
        let paired = paired_elsewhere(&done);
        let empty = Vec::new();
        let mut kept = Vec::new();
        for (slot, p) in done {
            let mut m = p.matched;
            if let Some(keys) = paired.get(&p.files[1]) {
                m = drop_paired_elsewhere(&m, keys).map_err(OutputError::Join)?;
            }
            let sides = [
                held.get(&p.files[0]).unwrap_or(&empty).as_slice(),
                held.get(&p.files[1]).unwrap_or(&empty).as_slice(),
            ];
            let flows = matched_flows(&m, sides, &self.schemas).map_err(OutputError::Join)?;
            let series = conform(&p.series, &self.schemas.series).map_err(OutputError::Join)?;
            let s = self.sender.for_capture(first_order + slot);
            let sent = s
                .send("flows", flows.clone())
                .and_then(|()| s.send("events", p.events))
                .and_then(|()| s.send("series", series))
                .and_then(|()| s.send("pair_stats", p.stats));
            s.done();
            sent.map_err(OutputError::Write)?;
            if keep_flows {
                kept.push(flows);
            }
        }
        Ok(FinishedPairs { flows: kept, warnings })
    }

    /// A shared file's packets rows get the verdicts of every pair it is in (each pair
    /// judges only the connections it paired: their frames do not overlap).
    fn send_held_packets(
        &self,
        held_packets: HashMap<usize, Vec<RecordBatch>>,
        done: &mut BTreeMap<usize, PairDone>,
    ) -> Result<(), WriteError> {
        for (order, batches) in held_packets {
            let mut fates = FrameFates::default();
            for p in done.values_mut() {
                for side in 0..2 {
                    if p.files[side] == order {
                        fates.extend(std::mem::take(&mut p.fates[side]));
                    }
                }
            }
            let s = self.sender.for_capture(order);
            let sent = batches.iter().try_for_each(|b| s.send("packets", fates.apply(b)));
            s.done();
            sent?;
        }
        Ok(())
    }

    /// Finish the files; returns (table, staged path) of each, or None when already closed.
    pub fn close(&self) -> Option<Result<Staged, WriteError>> {
        let out = self.dir.lock().expect("not poisoned").take();
        out.map(ParquetDir::close)
    }

    /// Give up: the files are removed. A no-op after close().
    pub fn abort(&self) {
        drop(self.dir.lock().expect("not poisoned").take());
    }

    /// The work of `analyze`: the file's tables stream to the writer (`flows` and `series`
    /// in the run's wider schemas); its captures and flows rows and its reader's counters
    /// are returned. `file_no`: the number of `progress` for [`OutputError::Interrupted`].
    fn analyze_file(
        &self,
        file: FileJob,
        tap: Option<stream::Tap>,
        progress: &mut dyn FnMut(u64) -> bool,
        hold_packets: bool,
        file_no: usize,
    ) -> Result<Analyzed, OutputError> {
        let sender = self.sender.for_capture(file.order);
        let (mut captures, mut flows, mut failed, mut bad) = (Vec::new(), Vec::new(), None, None);
        // With `hold_packets` the `packets` rows are kept and the capture's turn left open:
        // the caller sends them with the matcher's verdicts, then ends the turn.
        let mut held = Vec::new();
        let info =
            CaptureInfo { name: file.name, vantage: file.vantage, id_base: file.id_base, truncated: false, packets: self.packets };
        let mut sink = |name: &'static str, b: RecordBatch| {
            let b = match name {
                "captures" => {
                    captures.push(b.clone());
                    b
                }
                "flows" => {
                    flows.push(b.clone());
                    conform(&b, &self.schemas.flows).unwrap_or_else(|e| {
                        bad.get_or_insert(e);
                        b
                    })
                }
                "series" => conform(&b, &self.schemas.series).unwrap_or_else(|e| {
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
        };
        let r = analyze_capture_tapped(&file.path, info, SEND_ROWS, progress, &mut sink, tap);
        // Not when interrupted: the run is abandoned (see the binding's `analyze`).
        if !hold_packets && r.is_some() {
            sender.done();
        }
        if let Some(e) = bad {
            return Err(OutputError::Internal(e));
        }
        let stats = r.ok_or(OutputError::Interrupted(file_no))?;
        if let Some(e) = failed {
            return Err(OutputError::Write(e));
        }
        Ok(Analyzed { captures, flows, stats, packets: held })
    }

    /// What `analyze` returns for one file; its flows rows are kept for the matched rows.
    fn keep_flows(&self, captures: Vec<RecordBatch>, flows: Vec<RecordBatch>, keep: bool, order: usize) -> FileRows {
        let rows = FileRows { captures, flows: keep.then(|| flows.clone()) };
        self.held.lock().expect("not poisoned").insert(order, flows);
        rows
    }
}

/// The server-side keys of the connections paired by some pair, per server file shared by
/// several pairs.
fn paired_elsewhere(done: &BTreeMap<usize, PairDone>) -> HashMap<usize, HashSet<ConnKey>> {
    let mut per_server: HashMap<usize, usize> = HashMap::new();
    for p in done.values() {
        *per_server.entry(p.files[1]).or_default() += 1;
    }
    let mut paired: HashMap<usize, HashSet<ConnKey>> = HashMap::new();
    for p in done.values().filter(|p| per_server[&p.files[1]] > 1) {
        let mut keys = HashSet::new();
        paired_server_keys(&p.matched, &mut keys);
        if !keys.is_empty() {
            paired.entry(p.files[1]).or_default().extend(keys);
        }
    }
    paired
}
