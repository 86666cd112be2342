//! Tables written straight to Parquet files while the analysis runs.
//!
//! A [`ParquetDir`] owns one writer thread; any number of analyses (one per capture, on
//! their own threads) hand it record batches through a bounded channel. The writer encodes
//! each into the table's open row group ([`ROW_GROUP`] rows), so memory holds a few batches
//! and one row group per table, never a whole table: this is what keeps the peak memory of
//! `hsrtcp analyze` independent of the capture's length. Encoding runs on the
//! writer thread, off the flow engine's core.
//!
//! Reproducible order: every batch carries the number of the capture it comes from, and
//! the files hold the captures' rows in that order (capture 0's rows, then capture 1's ...),
//! whatever the threads' timing. Batches of the capture whose turn it is go straight into
//! the files; those of later captures wait in spool files (Arrow IPC, no encoding) next to
//! the tables and are copied in when their turn comes ([`TableSender::done`] ends a
//! capture's turn). A single capture never spools.
//!
//! Staging: the files are written as `PREFIX + NAME.parquet` and [`ParquetDir::close`]
//! leaves them there, finished, for the caller to commit together with the run's other
//! files (python/hsrtcp/output.py gives them their final names). A directory that is
//! dropped without `close` (an error, an interruption, a panic) removes its files.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use arrow_array::RecordBatch;
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::{DataType, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;

/// Batches waiting for the writer; with batches of about [`SEND_ROWS`] rows this bounds the
/// memory between the engines and the writer.
const QUEUE: usize = 8;
/// Rows per row group.
pub const ROW_GROUP: usize = 32 * 1024;
/// Rows per batch an analysis hands the writer. The writer encodes each batch into the open
/// row group as it arrives, so batches smaller than a row group spread the encoding over
/// the run; with whole row groups, one came in near the end of a bulk transfer's capture
/// and its encoding (2-5 ms for 32 k `rtt` rows) was left after the analysis.
pub const SEND_ROWS: usize = 4 * 1024;

enum Message {
    /// Rows of table `.1` from capture `.0`.
    Rows(usize, &'static str, RecordBatch),
    /// Capture `.0` sent all its rows.
    Done(usize),
    /// The run is over (senders may outlive it).
    End,
}

/// The sending end of one capture: cheap to clone, one per analysis thread.
#[derive(Clone)]
pub struct TableSender {
    tx: SyncSender<Message>,
    capture: usize,
}

impl TableSender {
    /// Queue `batch` for table `name` (blocks while the writer is behind). Returns false once
    /// the writer has stopped (after an I/O error, reported by [`ParquetDir::close`]).
    pub fn send(&self, name: &'static str, batch: RecordBatch) -> bool {
        self.tx.send(Message::Rows(self.capture, name, batch)).is_ok()
    }

    /// The same writer, for the rows of capture number `capture` (files hold the captures'
    /// rows in the order of these numbers).
    pub fn for_capture(&self, capture: usize) -> TableSender {
        TableSender { tx: self.tx.clone(), capture }
    }

    /// This capture sent all its rows: the next capture's turn.
    pub fn done(&self) {
        let _ = self.tx.send(Message::Done(self.capture));
    }
}

/// The files of a closed [`ParquetDir`]: (table name, staged path), sorted by table name.
pub type Staged = Vec<(&'static str, PathBuf)>;

/// An output directory of Parquet tables being written.
pub struct ParquetDir {
    sender: Option<TableSender>,
    /// Set by close: only then are the files kept.
    keep: Arc<AtomicBool>,
    worker: Option<JoinHandle<Result<Staged, String>>>,
}

impl ParquetDir {
    /// Create `dir` (and its parents) and start the writer thread; table NAME is written to
    /// `dir/PREFIX + NAME.parquet`.
    pub fn create(dir: &Path, prefix: &str) -> Result<Self, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: cannot create directory: {e}", dir.display()))?;
        let (tx, rx) = sync_channel::<Message>(QUEUE);
        let files = Files { dir: dir.to_path_buf(), prefix: prefix.to_string() };
        let keep = Arc::new(AtomicBool::new(false));
        let kept = keep.clone();
        let worker = std::thread::Builder::new()
            .name("hsrtcp-parquet".into())
            .spawn(move || write_all(&files, rx, &kept))
            .map_err(|e| format!("cannot start the Parquet writer thread: {e}"))?;
        Ok(ParquetDir { sender: Some(TableSender { tx, capture: 0 }), keep, worker: Some(worker) })
    }

    /// A sender for capture 0 ([`TableSender::for_capture`] gives the others).
    pub fn sender(&self) -> TableSender {
        self.sender.clone().expect("sender lives until close")
    }

    /// Wait for every queued batch and finish the files (under their staged names).
    /// Returns them, or the first I/O error (then no file of this run is left).
    pub fn close(mut self) -> Result<Staged, String> {
        self.keep.store(true, Ordering::SeqCst);
        self.end();
        match self.worker.take().map(|w| w.join()) {
            Some(Ok(r)) => r,
            _ => Err("internal error: the Parquet writer thread panicked".into()),
        }
    }
}

impl ParquetDir {
    /// Tell the writer the run is over: clones of the sender held elsewhere do not keep
    /// it waiting (their later sends fail).
    fn end(&mut self) {
        if let Some(s) = self.sender.take() {
            let _ = s.tx.send(Message::End);
        }
    }
}

impl Drop for ParquetDir {
    fn drop(&mut self) {
        // Dropped without close: the writer sees the channel close and cleans up after
        // itself; waiting here keeps its files from outliving the directory object.
        self.end();
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

/// Where the files go.
struct Files {
    dir: PathBuf,
    prefix: String,
}

impl Files {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{}{name}", self.prefix))
    }
}

struct Open {
    writer: ArrowWriter<File>,
    path: PathBuf,
}

/// Rows of a capture whose turn has not come: one Arrow IPC file per table.
#[derive(Default)]
struct Spool {
    tables: Vec<(&'static str, StreamWriter<BufWriter<File>>, PathBuf)>,
}

/// The writer thread's state.
struct Writer<'a> {
    files: &'a Files,
    open: BTreeMap<&'static str, Open>,
    /// The capture whose rows go straight into the files.
    turn: usize,
    done: BTreeSet<usize>,
    spools: BTreeMap<usize, Spool>,
}

fn write_all(files: &Files, rx: Receiver<Message>, keep: &AtomicBool) -> Result<Staged, String> {
    let mut w = Writer { files, open: BTreeMap::new(), turn: 0, done: BTreeSet::new(), spools: BTreeMap::new() };
    let result = w.receive(&rx);
    // Unblock any sender still waiting, then keep nothing half-done.
    drop(rx);
    let result = result
        .and_then(|()| match keep.load(Ordering::SeqCst) {
            true => Ok(()),
            false => Err("abandoned before close".to_string()),
        })
        .and_then(|()| w.replay_all());
    let Writer { open, spools, .. } = w;
    for s in spools.into_values() {
        for (_, writer, path) in s.tables {
            drop(writer);
            let _ = std::fs::remove_file(&path);
        }
    }
    if let Err(e) = result {
        for o in open.into_values() {
            drop(o.writer);
            let _ = std::fs::remove_file(&o.path);
        }
        return Err(e);
    }
    let mut staged = Vec::with_capacity(open.len());
    let mut failed = None;
    for (name, o) in open {
        match o.writer.close() {
            Ok(_) => staged.push((name, o.path)),
            Err(e) => {
                failed.get_or_insert(format!("{}: {e}", o.path.display()));
                let _ = std::fs::remove_file(&o.path);
            }
        }
    }
    match failed {
        Some(e) => {
            for (_, p) in &staged {
                let _ = std::fs::remove_file(p);
            }
            Err(e)
        }
        None => Ok(staged),
    }
}

impl Writer<'_> {
    fn receive(&mut self, rx: &Receiver<Message>) -> Result<(), String> {
        while let Ok(msg) = rx.recv() {
            match msg {
                Message::Rows(c, name, batch) if c <= self.turn => self.write(name, &batch)?,
                Message::Rows(c, name, batch) => self.spool(c, name, &batch)?,
                Message::Done(c) => {
                    self.done.insert(c);
                    while self.done.remove(&self.turn) {
                        self.turn += 1;
                        if let Some(s) = self.spools.remove(&self.turn) {
                            self.replay(s)?;
                        }
                    }
                }
                Message::End => break,
            }
        }
        Ok(())
    }

    /// Rows of captures that never said they were done, in capture order.
    fn replay_all(&mut self) -> Result<(), String> {
        while let Some((_, s)) = self.spools.pop_first() {
            self.replay(s)?;
        }
        Ok(())
    }

    fn write(&mut self, name: &'static str, batch: &RecordBatch) -> Result<(), String> {
        if !self.open.contains_key(name) {
            let path = self.files.path(&format!("{name}.parquet"));
            let file = File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let props = properties(name, &batch.schema());
            let writer = ArrowWriter::try_new(file, batch.schema(), Some(props))
                .map_err(|e| format!("{}: {e}", path.display()))?;
            self.open.insert(name, Open { writer, path });
        }
        let o = self.open.get_mut(name).expect("opened above");
        if batch.num_rows() > 0 {
            o.writer.write(batch).map_err(|e| format!("{}: {e}", o.path.display()))?;
        }
        Ok(())
    }

    fn spool(&mut self, capture: usize, name: &'static str, batch: &RecordBatch) -> Result<(), String> {
        let spool = self.spools.entry(capture).or_default();
        let i = match spool.tables.iter().position(|(n, _, _)| *n == name) {
            Some(i) => i,
            None => {
                let path = self.files.path(&format!("spool{capture}.{name}.arrows"));
                let file = File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                let writer = StreamWriter::try_new(BufWriter::new(file), &batch.schema())
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                spool.tables.push((name, writer, path));
                spool.tables.len() - 1
            }
        };
        let (_, writer, path) = &mut spool.tables[i];
        writer.write(batch).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Copy a spooled capture's rows into the files and remove its spool files.
    fn replay(&mut self, spool: Spool) -> Result<(), String> {
        for (name, mut writer, path) in spool.tables {
            let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
            writer.finish().map_err(|e| err(&e))?;
            drop(writer);
            let file = File::open(&path).map_err(|e| err(&e))?;
            let reader = StreamReader::try_new(BufReader::new(file), None).map_err(|e| err(&e))?;
            for batch in reader {
                self.write(name, &batch.map_err(|e| err(&e))?)?;
            }
            let _ = std::fs::remove_file(&path);
        }
        Ok(())
    }
}

/// Tables with a row per packet or per ACK, where encoding speed matters more than the
/// last tenth of file size.
const LONG_TABLES: &[&str] = &["rtt"];

/// Encoding settings for table `name`: encoding runs on the core the capture reader
/// shares, and with every default on it took longer than reading (about 60 ms for 100 k
/// event rows).
fn properties(name: &str, schema: &Schema) -> WriterProperties {
    let mut b = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_size(ROW_GROUP)
        // Column-chunk statistics still let readers skip row groups; per-page ones cost
        // encoding time for little.
        .set_statistics_enabled(EnabledStatistics::Chunk)
        // Dictionaries pay off for the few distinct strings (kind, class, dir ...), not
        // for times and sequence numbers that hardly repeat. In the long tables even the
        // strings go plain: Snappy squeezes "ackack…" almost as well (rtt: +10 % size) and
        // looking every value up in the dictionary cost a third of writing the table.
        .set_dictionary_enabled(false);
    let long = LONG_TABLES.contains(&name);
    for f in schema.fields().iter().filter(|f| f.data_type() == &DataType::Utf8) {
        let path = ColumnPath::from(f.name().as_str());
        b = if long {
            // Min and max of a column of two or three short words prune nothing, and
            // comparing every string for them was a sixth of encoding the rtt table.
            b.set_column_statistics_enabled(path, EnabledStatistics::None)
        } else {
            b.set_column_dictionary_enabled(path, true)
        };
    }
    b.build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{col, ColType, ColumnDef, TableBuilder};
    use parquet::file::reader::{FileReader, SerializedFileReader};

    const T: &[ColumnDef] = &[col("n", ColType::U64, "n"), col("s", ColType::Str, "s")];

    fn batch(from: u64, rows: u64) -> RecordBatch {
        let mut t = TableBuilder::new(&[T]);
        for n in from..from + rows {
            t.row().u64("n", n).str("s", (n % 2 == 0).then_some("even"));
        }
        t.finish()
    }

    fn rows_of(path: &Path) -> (i64, usize) {
        let r = SerializedFileReader::new(File::open(path).unwrap()).unwrap();
        (r.metadata().file_metadata().num_rows(), r.metadata().num_row_groups())
    }

    #[test]
    fn batches_from_several_threads_land_in_one_file_per_table() {
        let dir = std::env::temp_dir().join(format!("hsrtcp-parquet-test-{}", std::process::id()));
        let out = ParquetDir::create(&dir, ".new.").unwrap();
        let handles: Vec<_> = (0..3)
            .map(|i| {
                let s = out.sender().for_capture(i as usize);
                std::thread::spawn(move || {
                    assert!(s.send("things", batch(i * 100, 100)));
                    assert!(s.send("empty", batch(0, 0)));
                    s.done();
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let written = out.close().unwrap();
        // Staged, not renamed: the caller commits the run's files together.
        let (empty, things) = (dir.join(".new.empty.parquet"), dir.join(".new.things.parquet"));
        assert_eq!(written, vec![("empty", empty.clone()), ("things", things.clone())]);
        assert_eq!(rows_of(&things), (300, 1));
        // A table that only ever got empty batches still has its file and schema.
        assert_eq!(rows_of(&empty).0, 0);
        let mut left: Vec<_> = std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()).map(|e| e.path()).collect();
        left.sort();
        assert_eq!(left, vec![empty, things], "spool files left");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn close_does_not_wait_for_senders_still_held() {
        let dir = std::env::temp_dir().join(format!("hsrtcp-parquet-held-{}", std::process::id()));
        let out = ParquetDir::create(&dir, "").unwrap();
        let held = out.sender();
        assert!(held.send("things", batch(0, 5)));
        assert_eq!(out.close().unwrap(), vec![("things", dir.join("things.parquet"))]);
        assert!(!held.send("things", batch(5, 5)), "a send after close must fail");
        assert_eq!(rows_of(&dir.join("things.parquet")).0, 5);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn dropped_without_close_leaves_no_files() {
        let dir = std::env::temp_dir().join(format!("hsrtcp-parquet-drop-{}", std::process::id()));
        let out = ParquetDir::create(&dir, ".new.").unwrap();
        assert!(out.sender().send("things", batch(0, 10)));
        // a spooled capture too
        assert!(out.sender().for_capture(1).send("things", batch(10, 10)));
        drop(out);
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
        assert!(names.is_empty(), "left behind: {names:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unwritable_directory_is_an_error_naming_it() {
        let err = match ParquetDir::create(Path::new("/proc/hsrtcp-no-such-dir/x"), "") {
            Err(e) => e,
            Ok(_) => panic!("created a directory under /proc"),
        };
        assert!(err.contains("/proc/hsrtcp-no-such-dir/x"), "{err}");
    }

    fn column_n(path: &Path) -> Vec<u64> {
        use arrow_array::cast::AsArray;
        use arrow_array::types::UInt64Type;
        use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        let r = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap().build().unwrap();
        r.flat_map(|b| b.unwrap().column(0).as_primitive::<UInt64Type>().values().to_vec()).collect()
    }

    #[test]
    fn rows_land_in_capture_order_whatever_the_timing() {
        let dir = std::env::temp_dir().join(format!("hsrtcp-parquet-order-{}", std::process::id()));
        let out = ParquetDir::create(&dir, "").unwrap();
        let s = out.sender();
        let (c0, c1, c2) = (s.for_capture(0), s.for_capture(1), s.for_capture(2));
        // Capture 2 first, then 1 and 0 interleaved; 2 finishes before 0 does.
        assert!(c2.send("things", batch(200, 3)));
        assert!(c1.send("things", batch(100, 2)));
        assert!(c0.send("things", batch(0, 2)));
        c2.done();
        assert!(c1.send("things", batch(102, 2)));
        assert!(c0.send("things", batch(2, 2)));
        c0.done();
        // capture 1 now has its turn: its later rows go straight in
        assert!(c1.send("things", batch(104, 1)));
        c1.done();
        out.close().unwrap();
        assert_eq!(column_n(&dir.join("things.parquet")), vec![0, 1, 2, 3, 100, 101, 102, 103, 104, 200, 201, 202]);
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
        assert_eq!(names.len(), 1, "spool files left: {names:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
