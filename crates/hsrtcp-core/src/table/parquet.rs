//! Tables written straight to Parquet files while the analysis runs.
//!
//! A [`ParquetDir`] owns one writer thread; any number of analyses (one per capture, on
//! their own threads) hand it record batches through a bounded channel. The writer encodes
//! each into the table's open row group ([`ROW_GROUP`] rows), so memory holds a few batches
//! and one row group per table, never a whole table: this is what keeps the peak memory of
//! `hsrtcp analyze` independent of the capture's length. Encoding runs on the
//! writer thread, off the flow engine's core.
//!
//! Files are written as `.NAME.parquet.tmp<pid>` and renamed to `NAME.parquet` by
//! [`ParquetDir::close`], so a reader never sees half a file; a directory that is dropped
//! without `close` (an error or a panic) removes its temporary files.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use arrow_array::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use arrow_schema::{DataType, Schema};
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

/// A table name and one batch of its rows; `None` ends the run (senders may outlive it).
type Message = Option<(&'static str, RecordBatch)>;

/// The sending end: cheap to clone, one per analysis thread.
#[derive(Clone)]
pub struct TableSender {
    tx: SyncSender<Message>,
}

impl TableSender {
    /// Queue `batch` for table `name` (blocks while the writer is behind). Returns false once
    /// the writer has stopped (after an I/O error, reported by [`ParquetDir::close`]).
    pub fn send(&self, name: &'static str, batch: RecordBatch) -> bool {
        self.tx.send(Some((name, batch))).is_ok()
    }
}

/// An output directory of Parquet tables being written.
pub struct ParquetDir {
    sender: Option<TableSender>,
    /// Set by close: only then do the files get their final names.
    commit: Arc<AtomicBool>,
    worker: Option<JoinHandle<Result<Vec<PathBuf>, String>>>,
}

impl ParquetDir {
    /// Create `dir` (and its parents) and start the writer thread.
    pub fn create(dir: &Path) -> Result<Self, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: cannot create directory: {e}", dir.display()))?;
        let (tx, rx) = sync_channel::<Message>(QUEUE);
        let dir = dir.to_path_buf();
        let commit = Arc::new(AtomicBool::new(false));
        let committed = commit.clone();
        let worker = std::thread::Builder::new()
            .name("hsrtcp-parquet".into())
            .spawn(move || write_all(&dir, rx, &committed))
            .map_err(|e| format!("cannot start the Parquet writer thread: {e}"))?;
        Ok(ParquetDir { sender: Some(TableSender { tx }), commit, worker: Some(worker) })
    }

    pub fn sender(&self) -> TableSender {
        self.sender.clone().expect("sender lives until close")
    }

    /// Wait for every queued batch, finish the files and give them their final names.
    /// Returns the paths written (sorted by table name), or the first I/O error (then no
    /// table of this run has its final name and the temporary files are gone).
    pub fn close(mut self) -> Result<Vec<PathBuf>, String> {
        self.commit.store(true, Ordering::SeqCst);
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
            let _ = s.tx.send(None);
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

struct Open {
    writer: ArrowWriter<File>,
    tmp: PathBuf,
    path: PathBuf,
}

fn write_all(dir: &Path, rx: Receiver<Message>, commit: &AtomicBool) -> Result<Vec<PathBuf>, String> {
    let mut open: BTreeMap<&'static str, Open> = BTreeMap::new();
    let result = receive(dir, &rx, &mut open);
    // Unblock any sender still waiting, then keep nothing half-done.
    drop(rx);
    let result = result.and_then(|()| match commit.load(Ordering::SeqCst) {
        true => Ok(()),
        false => Err("abandoned before close".to_string()),
    });
    if let Err(e) = result {
        for o in open.into_values() {
            drop(o.writer);
            let _ = std::fs::remove_file(&o.tmp);
        }
        return Err(e);
    }
    let mut done = Vec::with_capacity(open.len());
    let mut failed = None;
    for o in open.into_values() {
        let tmp = o.tmp.clone();
        let r = o
            .writer
            .close()
            .map_err(|e| format!("{}: {e}", o.path.display()))
            .and_then(|_| std::fs::rename(&o.tmp, &o.path).map_err(|e| format!("{}: {e}", o.path.display())));
        match r {
            Ok(()) => done.push(o.path),
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                failed.get_or_insert(e);
            }
        }
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(done),
    }
}

fn receive(dir: &Path, rx: &Receiver<Message>, open: &mut BTreeMap<&'static str, Open>) -> Result<(), String> {
    while let Ok(Some((name, batch))) = rx.recv() {
        if !open.contains_key(name) {
            let path = dir.join(format!("{name}.parquet"));
            let tmp = dir.join(format!(".{name}.parquet.tmp{}", std::process::id()));
            let file = File::create(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
            let props = properties(name, &batch.schema());
            let writer = ArrowWriter::try_new(file, batch.schema(), Some(props))
                .map_err(|e| format!("{}: {e}", path.display()))?;
            open.insert(name, Open { writer, tmp, path });
        }
        let o = open.get_mut(name).expect("opened above");
        if batch.num_rows() > 0 {
            o.writer.write(&batch).map_err(|e| format!("{}: {e}", o.path.display()))?;
        }
    }
    Ok(())
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
        let out = ParquetDir::create(&dir).unwrap();
        let handles: Vec<_> = (0..3)
            .map(|i| {
                let s = out.sender();
                std::thread::spawn(move || {
                    assert!(s.send("things", batch(i * 100, 100)));
                    assert!(s.send("empty", batch(0, 0)));
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let written = out.close().unwrap();
        assert_eq!(written, vec![dir.join("empty.parquet"), dir.join("things.parquet")]);
        assert_eq!(rows_of(&dir.join("things.parquet")), (300, 1));
        // A table that only ever got empty batches still has its file and schema.
        assert_eq!(rows_of(&dir.join("empty.parquet")).0, 0);
        let leftovers: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn close_does_not_wait_for_senders_still_held() {
        let dir = std::env::temp_dir().join(format!("hsrtcp-parquet-held-{}", std::process::id()));
        let out = ParquetDir::create(&dir).unwrap();
        let held = out.sender();
        assert!(held.send("things", batch(0, 5)));
        assert_eq!(out.close().unwrap(), vec![dir.join("things.parquet")]);
        assert!(!held.send("things", batch(5, 5)), "a send after close must fail");
        assert_eq!(rows_of(&dir.join("things.parquet")).0, 5);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn dropped_without_close_leaves_no_files() {
        let dir = std::env::temp_dir().join(format!("hsrtcp-parquet-drop-{}", std::process::id()));
        let out = ParquetDir::create(&dir).unwrap();
        assert!(out.sender().send("things", batch(0, 10)));
        drop(out);
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
        assert!(names.is_empty(), "left behind: {names:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unwritable_directory_is_an_error_naming_it() {
        let err = match ParquetDir::create(Path::new("/proc/hsrtcp-no-such-dir/x")) {
            Err(e) => e,
            Ok(_) => panic!("created a directory under /proc"),
        };
        assert!(err.contains("/proc/hsrtcp-no-such-dir/x"), "{err}");
    }
}
