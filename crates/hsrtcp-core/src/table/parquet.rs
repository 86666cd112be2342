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
//!
//! Every file says which table it holds and the version of that table's schema (Parquet
//! key-value metadata `hsrtcp.schema`, `hsrtcp.schema_version`: docs/formats/output.md).
//!
//! Errors: a write the system refused is a [`WriteError`] with the file and the system's
//! error number ("No space left on device"), which the parquet crate's own error loses.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use arrow_array::RecordBatch;
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::{DataType, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
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
/// Parquet key-value metadata: the table a file holds, and its schema version.
pub const SCHEMA_KEY: &str = "hsrtcp.schema";
pub const VERSION_KEY: &str = "hsrtcp.schema_version";

/// Why the tables could not be written: the file, and the system's error where it refused
/// an operation. Shown as "PATH: REASON".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteError {
    /// The file (or directory) concerned, if any.
    pub path: Option<PathBuf>,
    /// The system's error number (`ENOSPC` ...), when the system refused a read or write.
    pub errno: Option<i32>,
    /// What went wrong: the system's text ("No space left on device (os error 28)") or the
    /// writer's.
    pub reason: String,
}

impl WriteError {
    fn io(path: &Path, e: &io::Error) -> Self {
        WriteError { path: Some(path.to_path_buf()), errno: e.raw_os_error(), reason: e.to_string() }
    }

    fn other(path: Option<&Path>, reason: impl fmt::Display) -> Self {
        WriteError { path: path.map(Path::to_path_buf), errno: None, reason: reason.to_string() }
    }

    /// The system's text for [`Self::errno`] without Rust's " (os error N)".
    pub fn strerror(&self) -> Option<&str> {
        let n = self.errno?;
        Some(self.reason.strip_suffix(&format!(" (os error {n})")).unwrap_or(&self.reason))
    }
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(p) => write!(f, "{}: {}", p.display(), self.reason),
            None => f.write_str(&self.reason),
        }
    }
}

impl std::error::Error for WriteError {}

/// A file that remembers the last error the system gave one of its writes: the parquet
/// crate hands such an error on as a text without it ("External: transport error").
struct Recorded {
    file: File,
    error: Option<io::Error>,
}

impl Recorded {
    fn new(file: File) -> Self {
        Recorded { file, error: None }
    }

    fn record<T>(&mut self, r: io::Result<T>) -> io::Result<T> {
        if let Err(e) = &r {
            if e.kind() != io::ErrorKind::Interrupted {
                // io::Error is not Clone: an OS error is its number, any other its text.
                self.error = Some(match e.raw_os_error() {
                    Some(n) => io::Error::from_raw_os_error(n),
                    None => io::Error::new(e.kind(), e.to_string()),
                });
            }
        }
        r
    }

    /// The error for a failure of a writer of this file at `path`: the system's, if one
    /// of the writes failed, else the writer's own.
    fn error(&self, path: &Path, writer: &dyn fmt::Display) -> WriteError {
        match &self.error {
            Some(e) => WriteError::io(path, e),
            None => WriteError::other(Some(path), writer),
        }
    }
}

impl Write for Recorded {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let r = self.file.write(buf);
        self.record(r)
    }

    fn flush(&mut self) -> io::Result<()> {
        let r = self.file.flush();
        self.record(r)
    }
}

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
    /// The error that stopped the writer (set before its channel closes).
    failed: Arc<Mutex<Option<WriteError>>>,
}

impl TableSender {
    /// Queue `batch` for table `name` (blocks while the writer is behind). Fails once the
    /// writer has stopped: with the error that stopped it (the same [`ParquetDir::close`]
    /// returns), or because the directory was closed.
    pub fn send(&self, name: &'static str, batch: RecordBatch) -> Result<(), WriteError> {
        self.tx.send(Message::Rows(self.capture, name, batch)).map_err(|_| self.stopped())
    }

    fn stopped(&self) -> WriteError {
        let failed = self.failed.lock().unwrap_or_else(|e| e.into_inner()).clone();
        failed.unwrap_or_else(|| WriteError::other(None, "the Parquet writer stopped: the directory was closed"))
    }

    /// The same writer, for the rows of capture number `capture` (files hold the captures'
    /// rows in the order of these numbers).
    pub fn for_capture(&self, capture: usize) -> TableSender {
        TableSender { capture, ..self.clone() }
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
    worker: Option<JoinHandle<Result<Staged, WriteError>>>,
}

impl ParquetDir {
    /// Create `dir` (and its parents) and start the writer thread; table NAME is written to
    /// `dir/PREFIX + NAME.parquet`. `versions`: the schema version of each table, written
    /// into its file's metadata with its name (a table not listed gets its name only).
    pub fn create(dir: &Path, prefix: &str, versions: &[(&'static str, u32)]) -> Result<Self, WriteError> {
        std::fs::create_dir_all(dir).map_err(|e| WriteError {
            reason: format!("cannot create directory: {e}"),
            ..WriteError::io(dir, &e)
        })?;
        let (tx, rx) = sync_channel::<Message>(QUEUE);
        let files = Files { dir: dir.to_path_buf(), prefix: prefix.to_string(), versions: versions.to_vec() };
        let keep = Arc::new(AtomicBool::new(false));
        let kept = keep.clone();
        let failed = Arc::new(Mutex::new(None));
        let report = failed.clone();
        let worker = std::thread::Builder::new()
            .name("hsrtcp-parquet".into())
            .spawn(move || write_all(&files, rx, &kept, &report))
            .map_err(|e| WriteError::other(None, format!("cannot start the Parquet writer thread: {e}")))?;
        Ok(ParquetDir { sender: Some(TableSender { tx, capture: 0, failed }), keep, worker: Some(worker) })
    }

    /// A sender for capture 0 ([`TableSender::for_capture`] gives the others).
    pub fn sender(&self) -> TableSender {
        self.sender.clone().expect("sender lives until close")
    }

    /// No more rows: the writer finishes the files from now on, while the caller does
    /// other work (on a two-core host the end of a run is otherwise one core waiting for
    /// the other); [`Self::close`] then waits for them. Without `close`, the directory
    /// still removes its files when dropped.
    pub fn start_close(&mut self) {
        self.keep.store(true, Ordering::SeqCst);
        self.end();
    }

    /// Wait for every queued batch and finish the files (under their staged names).
    /// Returns them, or the first error (then no file of this run is left).
    pub fn close(mut self) -> Result<Staged, WriteError> {
        self.start_close();
        match self.worker.take().map(|w| w.join()) {
            Some(Ok(r)) => r,
            _ => Err(WriteError::other(None, "internal error: the Parquet writer thread panicked")),
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
            // (finished after start_close, but never closed: not kept either)
            if let Ok(Ok(staged)) = w.join() {
                for (_, path) in staged {
                    let _ = std::fs::remove_file(path);
                }
            }
        }
    }
}

/// Where the files go.
struct Files {
    dir: PathBuf,
    prefix: String,
    versions: Vec<(&'static str, u32)>,
}

impl Files {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{}{name}", self.prefix))
    }

    fn version(&self, table: &str) -> Option<u32> {
        self.versions.iter().find(|(t, _)| *t == table).map(|&(_, v)| v)
    }
}

struct Open {
    writer: ArrowWriter<Recorded>,
    path: PathBuf,
}

impl Open {
    fn error(&self, e: &dyn fmt::Display) -> WriteError {
        self.writer.inner().error(&self.path, e)
    }
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

fn write_all(
    files: &Files,
    rx: Receiver<Message>,
    keep: &AtomicBool,
    failed: &Mutex<Option<WriteError>>,
) -> Result<Staged, WriteError> {
    let mut w = Writer { files, open: BTreeMap::new(), turn: 0, done: BTreeSet::new(), spools: BTreeMap::new() };
    let result = w.receive(&rx);
    if let Err(e) = &result {
        // Before the channel closes: a sender whose send then fails reads why.
        *failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.clone());
    }
    // Unblock any sender still waiting, then keep nothing half-done.
    drop(rx);
    let result = result
        .and_then(|()| match keep.load(Ordering::SeqCst) {
            true => Ok(()),
            false => Err(WriteError::other(None, "abandoned before close")),
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
    let mut first = None;
    for (name, mut o) in open {
        match o.writer.finish() {
            Ok(_) => staged.push((name, o.path)),
            Err(e) => {
                first.get_or_insert(o.error(&e));
                drop(o.writer);
                let _ = std::fs::remove_file(&o.path);
            }
        }
    }
    match first {
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
    fn receive(&mut self, rx: &Receiver<Message>) -> Result<(), WriteError> {
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
    fn replay_all(&mut self) -> Result<(), WriteError> {
        while let Some((_, s)) = self.spools.pop_first() {
            self.replay(s)?;
        }
        Ok(())
    }

    fn write(&mut self, name: &'static str, batch: &RecordBatch) -> Result<(), WriteError> {
        if !self.open.contains_key(name) {
            let path = self.files.path(&format!("{name}.parquet"));
            let file = File::create(&path).map_err(|e| WriteError::io(&path, &e))?;
            let props = properties(name, self.files.version(name), &batch.schema());
            let writer = ArrowWriter::try_new(Recorded::new(file), batch.schema(), Some(props))
                .map_err(|e| WriteError::other(Some(&path), e))?;
            self.open.insert(name, Open { writer, path });
        }
        let o = self.open.get_mut(name).expect("opened above");
        if batch.num_rows() > 0 {
            o.writer.write(batch).map_err(|e| o.error(&e))?;
        }
        Ok(())
    }

    fn spool(&mut self, capture: usize, name: &'static str, batch: &RecordBatch) -> Result<(), WriteError> {
        let spool = self.spools.entry(capture).or_default();
        let i = match spool.tables.iter().position(|(n, _, _)| *n == name) {
            Some(i) => i,
            None => {
                let path = self.files.path(&format!("spool{capture}.{name}.arrows"));
                let file = File::create(&path).map_err(|e| WriteError::io(&path, &e))?;
                let writer =
                    StreamWriter::try_new(BufWriter::new(file), &batch.schema()).map_err(|e| arrow_error(&path, e))?;
                spool.tables.push((name, writer, path));
                spool.tables.len() - 1
            }
        };
        let (_, writer, path) = &mut spool.tables[i];
        writer.write(batch).map_err(|e| arrow_error(path, e))
    }

    /// Copy a spooled capture's rows into the files and remove its spool files.
    fn replay(&mut self, spool: Spool) -> Result<(), WriteError> {
        for (name, mut writer, path) in spool.tables {
            writer.finish().map_err(|e| arrow_error(&path, e))?; // (flushes)
            drop(writer);
            let read = |e: &dyn fmt::Display| WriteError::other(Some(&path), format!("cannot read back: {e}"));
            let file = File::open(&path).map_err(|e| WriteError::io(&path, &e))?;
            let reader = StreamReader::try_new(BufReader::new(file), None).map_err(|e| read(&e))?;
            for batch in reader {
                self.write(name, &batch.map_err(|e| read(&e))?)?;
            }
            let _ = std::fs::remove_file(&path);
        }
        Ok(())
    }
}

/// An Arrow IPC error (it keeps the system's).
fn arrow_error(path: &Path, e: arrow_schema::ArrowError) -> WriteError {
    match &e {
        arrow_schema::ArrowError::IoError(_, io) => WriteError::io(path, io),
        _ => WriteError::other(Some(path), e),
    }
}

/// Tables with a row per packet or per ACK, where encoding speed matters more than the
/// last tenth of file size.
const LONG_TABLES: &[&str] = &["rtt", "packets"];

/// The packets table's columns that keep column-chunk statistics.
const PACKETS_PRUNED_BY: &[&str] = &["flow_id", "frame", "ts"];

/// Encoding settings for table `name` (schema version `version`): encoding runs on the
/// core the capture reader shares, and with every default on it took longer than reading
/// (about 60 ms for 100 k event rows).
fn properties(name: &str, version: Option<u32>, schema: &Schema) -> WriterProperties {
    // The readers (python/hsrtcp/results.py) check the table and the version first.
    let mut meta = vec![KeyValue::new(SCHEMA_KEY.to_string(), name.to_string())];
    if let Some(v) = version {
        meta.push(KeyValue::new(VERSION_KEY.to_string(), v.to_string()));
    }
    let mut b = WriterProperties::builder()
        .set_key_value_metadata(Some(meta))
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
    if name == "packets" {
        // A row per packet: min/max of every column cost a sixth of encoding the table
        // (callgrind, 1 M packets); readers prune by flow, time and frame only.
        for f in schema.fields().iter().filter(|f| !PACKETS_PRUNED_BY.contains(&f.name().as_str())) {
            b = b.set_column_statistics_enabled(ColumnPath::from(f.name().as_str()), EnabledStatistics::None);
        }
        // IP IDs are close to random: Snappy only spends time on them.
        b = b.set_column_compression(ColumnPath::from("ip_id"), Compression::UNCOMPRESSED);
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
        let dir = test_dir("test");
        let out = ParquetDir::create(&dir, ".new.", &[]).unwrap();
        let handles: Vec<_> = (0..3)
            .map(|i| {
                let s = out.sender().for_capture(i as usize);
                std::thread::spawn(move || {
                    s.send("things", batch(i * 100, 100)).unwrap();
                    s.send("empty", batch(0, 0)).unwrap();
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
        let dir = test_dir("held");
        let out = ParquetDir::create(&dir, "", &[]).unwrap();
        let held = out.sender();
        held.send("things", batch(0, 5)).unwrap();
        assert_eq!(out.close().unwrap(), vec![("things", dir.join("things.parquet"))]);
        let err = held.send("things", batch(5, 5)).expect_err("a send after close must fail");
        assert_eq!(err.to_string(), "the Parquet writer stopped: the directory was closed");
        assert_eq!(rows_of(&dir.join("things.parquet")).0, 5);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn dropped_without_close_leaves_no_files() {
        let dir = test_dir("drop");
        let out = ParquetDir::create(&dir, ".new.", &[]).unwrap();
        out.sender().send("things", batch(0, 10)).unwrap();
        // a spooled capture too
        out.sender().for_capture(1).send("things", batch(10, 10)).unwrap();
        drop(out);
        let names = names_in(&dir);
        assert!(names.is_empty(), "left behind: {names:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn start_close_then_close_keeps_the_files_and_drop_removes_them() {
        let dir = test_dir("start_close");
        let mut out = ParquetDir::create(&dir, ".new.", &[]).unwrap();
        out.sender().send("things", batch(0, 10)).unwrap();
        out.start_close();
        let staged = out.close().unwrap();
        assert_eq!(staged, vec![("things", dir.join(".new.things.parquet"))]);
        assert_eq!(rows_of(&dir.join(".new.things.parquet")).0, 10);
        std::fs::remove_file(dir.join(".new.things.parquet")).unwrap();

        let mut out = ParquetDir::create(&dir, ".new.", &[]).unwrap();
        out.sender().send("things", batch(0, 10)).unwrap();
        out.start_close();
        drop(out);
        let names = names_in(&dir);
        assert!(names.is_empty(), "left behind: {names:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unwritable_directory_is_an_error_naming_it() {
        let err = match ParquetDir::create(Path::new("/proc/hsrtcp-no-such-dir/x"), "", &[]) {
            Err(e) => e,
            Ok(_) => panic!("created a directory under /proc"),
        };
        assert_eq!(err.path.as_deref(), Some(Path::new("/proc/hsrtcp-no-such-dir/x")));
        assert!(err.to_string().starts_with("/proc/hsrtcp-no-such-dir/x: cannot create directory: "), "{err}");
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
        let dir = test_dir("order");
        let out = ParquetDir::create(&dir, "", &[]).unwrap();
        let s = out.sender();
        let (c0, c1, c2) = (s.for_capture(0), s.for_capture(1), s.for_capture(2));
        // Capture 2 first, then 1 and 0 interleaved; 2 finishes before 0 does.
        c2.send("things", batch(200, 3)).unwrap();
        c1.send("things", batch(100, 2)).unwrap();
        c0.send("things", batch(0, 2)).unwrap();
        c2.done();
        c1.send("things", batch(102, 2)).unwrap();
        c0.send("things", batch(2, 2)).unwrap();
        c0.done();
        // capture 1 now has its turn: its later rows go straight in
        c1.send("things", batch(104, 1)).unwrap();
        c1.done();
        out.close().unwrap();
        assert_eq!(column_n(&dir.join("things.parquet")), vec![0, 1, 2, 3, 100, 101, 102, 103, 104, 200, 201, 202]);
        let names = names_in(&dir);
        assert_eq!(names.len(), 1, "spool files left: {names:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn every_file_names_its_table_and_schema_version() {
        let dir = test_dir("meta");
        let out = ParquetDir::create(&dir, "", &[("things", 3)]).unwrap();
        out.sender().send("things", batch(0, 5)).unwrap();
        out.sender().send("other", batch(0, 5)).unwrap();
        out.close().unwrap();
        let meta = |name: &str| {
            let r = SerializedFileReader::new(File::open(dir.join(name)).unwrap()).unwrap();
            let kv = r.metadata().file_metadata().key_value_metadata().cloned().unwrap_or_default();
            kv.into_iter().filter(|k| k.key.starts_with("hsrtcp.")).map(|k| (k.key, k.value.unwrap())).collect::<Vec<_>>()
        };
        let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
        assert_eq!(meta("things.parquet"), vec![pair(SCHEMA_KEY, "things"), pair(VERSION_KEY, "3")]);
        // a table without a declared version still says which table it is
        assert_eq!(meta("other.parquet"), vec![pair(SCHEMA_KEY, "other")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// This test's directory under the system's temporary one (named for the process: tests
    /// of two runs at once do not meet).
    fn test_dir(test: &str) -> PathBuf {
        std::env::temp_dir().join(format!("hsrtcp-parquet-{test}-{}", std::process::id()))
    }

    /// The names of the files in `dir`.
    fn names_in(dir: &Path) -> Vec<std::ffi::OsString> {
        std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect()
    }

    /// This test's output directory with the file `name` a link to /dev/full, where every
    /// write fails with ENOSPC: (the directory, the file, the output writing there with `prefix`).
    fn on_a_full_device(test: &str, name: &str, prefix: &str) -> (PathBuf, PathBuf, ParquetDir) {
        let dir = test_dir(test);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::os::unix::fs::symlink("/dev/full", &path).unwrap();
        let out = ParquetDir::create(&dir, prefix, &[]).unwrap();
        (dir, path, out)
    }

    fn assert_no_space(err: &WriteError, path: &Path) {
        assert_eq!(err.path.as_deref(), Some(path), "{err}");
        assert_eq!(err.errno, Some(28), "{err}");
        assert_eq!(err.strerror(), Some("No space left on device"), "{err}");
        assert_eq!(err.to_string(), format!("{}: No space left on device (os error 28)", path.display()));
    }

    #[test]
    fn a_full_disk_at_close_is_the_system_error_naming_the_file() {
        // The footer write failed as "External: transport error", without the errno.
        let (dir, path, out) = on_a_full_device("full", ".new.things.parquet", ".new.");
        out.sender().send("things", batch(0, 10)).unwrap();
        assert_no_space(&out.close().unwrap_err(), &path);
        let names = names_in(&dir);
        assert!(names.is_empty(), "left behind: {names:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_send_after_a_failed_write_returns_that_error() {
        let (dir, path, out) = on_a_full_device("stopped", "things.parquet", "");
        let s = out.sender();
        // A whole row group goes to the file: its write fails and the writer stops.
        let mut sent = 0;
        let err = loop {
            match s.send("things", batch(0, ROW_GROUP as u64)) {
                Ok(()) => sent += 1,
                Err(e) => break e,
            }
            assert!(sent < 1000, "the writer never stopped");
        };
        assert_no_space(&err, &path);
        assert_no_space(&out.close().unwrap_err(), &path);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_spool_file_that_cannot_be_written_is_the_system_error_naming_it() {
        let (dir, path, out) = on_a_full_device("spool-full", "spool1.things.arrows", "");
        let s = out.sender();
        s.for_capture(1).send("things", batch(100, 5)).unwrap();
        s.for_capture(1).done();
        s.send("things", batch(0, 5)).unwrap();
        s.done();
        assert_no_space(&out.close().unwrap_err(), &path);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
