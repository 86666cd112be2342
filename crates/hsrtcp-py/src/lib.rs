//! hsrtcp._native: the only place with PyO3. Thin: it runs core functions with the GIL
//! released and hands tables over as Arrow IPC stream bytes (polars reads them whole, no
//! per-packet Python objects).

mod job;
pub(crate) mod pair;
mod rows;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

use arrow_array::RecordBatch;

use hsrtcp_core::analyze::analyze_capture_tapped;
use hsrtcp_core::flow::CaptureInfo;
use hsrtcp_core::matcher::join::MATCHED_ID_COLUMNS;
use hsrtcp_core::matcher::metrics::MATCH_SERIES_COLUMNS;
use hsrtcp_core::matcher::output::FileJob;
use hsrtcp_core::matcher::MATCH_COLUMNS;
use hsrtcp_core::table::parquet::{ParquetDir, TableSender, WriteError, ROW_GROUP, SEND_ROWS};
use hsrtcp_core::table::registry::TABLES;
use hsrtcp_core::table::{to_ipc_stream, ColumnDef};
use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use job::{PyFileJob, PyPairJob};

/// Analyze one capture. Returns a dict of Arrow IPC stream bytes: flows, events, rtt,
/// series, captures, mptcp, mptcp_subflows, mptcp_series, and packets with `packets`.
/// Never raises for bad input: the error is in the captures row. Raises
/// KeyboardInterrupt on Ctrl-C (see [`run_capture`]).
#[pyfunction]
#[pyo3(signature = (path, name, vantage=None, id_base=0, progress=None, packets=false))]
fn analyze_capture<'py>(
    py: Python<'py>,
    path: PathBuf,
    name: String,
    vantage: Option<String>,
    id_base: u64,
    progress: Option<PyObject>,
    packets: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let tables = py.allow_threads(|| {
        let mut tables: BTreeMap<&'static str, Vec<RecordBatch>> = BTreeMap::new();
        let info = CaptureInfo { name, vantage, id_base, truncated: false, packets };
        run_capture(&path, info, &progress, ROW_GROUP, &mut |name, b| {
            tables.entry(name).or_default().push(b);
        })?;
        Ok::<_, PyErr>(
            tables
                .into_iter()
                .map(|(name, batches)| (name, to_ipc_stream(&batches[0].schema(), &batches)))
                .collect::<Vec<_>>(),
        )
    })?;
    let d = PyDict::new_bound(py);
    for (k, v) in tables {
        d.set_item(k, PyBytes::new_bound(py, &v))?;
    }
    Ok(d)
}

/// The core's single-capture analysis (without the GIL held), its tables handed to `sink`
/// in batches of about `rows_per_batch` rows and its progress (bytes of the file read so
/// far) to the Python callback (see [`python_progress`]).
pub(crate) fn run_capture(
    path: &std::path::Path,
    info: CaptureInfo,
    progress: &Option<PyObject>,
    rows_per_batch: usize,
    sink: &mut dyn FnMut(&'static str, RecordBatch),
) -> PyResult<hsrtcp_core::stream::CaptureStats> {
    let mut stop = None;
    let mut report = python_progress(progress, &mut stop);
    let r = analyze_capture_tapped(path, info, rows_per_batch, &mut report, sink, None);
    drop(report);
    r.ok_or_else(|| interrupted(stop))
}

/// An analysis's progress report for the core: false stops it.
///
/// Interruptions: every few thousand packets (about a millisecond) it takes the GIL for
/// the progress callback and runs Python's pending signal handlers, so Ctrl-C on the main
/// thread stops the analysis at once with KeyboardInterrupt. Analyses on other threads
/// (where Python runs no signal handlers) stop when their progress callback raises
/// KeyboardInterrupt (hsrtcp.runner does that once the main thread was interrupted).
/// Other exceptions of the callback are ignored: a failing progress bar must not stop an
/// analysis. What stopped it is left in `stop` ([`interrupted`] raises it).
pub(crate) fn python_progress<'a>(
    progress: &'a Option<PyObject>,
    stop: &'a mut Option<PyErr>,
) -> impl FnMut(u64) -> bool + Send + 'a {
    move |bytes: u64| {
        Python::with_gil(|py| {
            if let Some(cb) = progress {
                if let Err(e) = cb.call1(py, (bytes,)) {
                    if e.is_instance_of::<PyKeyboardInterrupt>(py) {
                        *stop = Some(e);
                        return false;
                    }
                }
            }
            match py.check_signals() {
                Ok(()) => true,
                Err(e) => {
                    *stop = Some(e);
                    false
                }
            }
        })
    }
}

/// The error of an analysis its progress report stopped: what stopped it, else a plain
/// KeyboardInterrupt (another analysis of the same job was interrupted).
pub(crate) fn interrupted(stop: Option<PyErr>) -> PyErr {
    stop.unwrap_or_else(|| PyKeyboardInterrupt::new_err("interrupted"))
}

/// An output directory that analyses write their tables into as Parquet while they run
/// (hsrtcp_core::table::parquet): memory stays flat however long the captures are. Several
/// threads may analyze into one directory at once; the files hold the captures' rows in
/// the order of their `order` numbers. `close()` finishes the files under their staged
/// names (`prefix` + table + ".parquet") and returns them: hsrtcp.output commits them
/// with the run's other files.
/// `packets`: every analysis also writes the `packets` table (docs/formats/packets.md).
#[pyclass(module = "hsrtcp._native")]
struct ParquetOut {
    dir: Mutex<Option<ParquetDir>>,
    sender: TableSender,
    packets: bool,
}

#[pymethods]
impl ParquetOut {
    #[new]
    #[pyo3(signature = (dir, prefix=".hsrtcp-new.", packets=false))]
    fn new(dir: PathBuf, prefix: &str, packets: bool) -> PyResult<Self> {
        let out = create_dir(&dir, prefix)?;
        Ok(ParquetOut { sender: out.sender(), dir: Mutex::new(Some(out)), packets })
    }

    /// Analyze one capture into the directory. Returns {"captures": [row], "flows": [rows]
    /// or None}: the capture's row and, with `keep_flows`, its flow rows (for a summary).
    /// The file's `order` is its place in the files (0, 1, ...; each number once).
    #[pyo3(signature = (file, progress=None, keep_flows=false))]
    fn analyze<'py>(
        &self,
        py: Python<'py>,
        file: PyRef<'py, PyFileJob>,
        progress: Option<PyObject>,
        keep_flows: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let FileJob { path, name, vantage, id_base, order } = file.0.clone();
        let sender = self.sender.for_capture(order);
        let (captures, flows, failed) = py.allow_threads(|| {
            let (mut captures, mut flows, mut failed) = (Vec::new(), Vec::new(), None);
            let info = CaptureInfo { name, vantage, id_base, truncated: false, packets: self.packets };
            let r = run_capture(&path, info, &progress, SEND_ROWS, &mut |name, b| {
                match name {
                    "captures" => captures.push(b.clone()),
                    "flows" if keep_flows => flows.push(b.clone()),
                    _ => {}
                }
                if failed.is_none() {
                    failed = sender.send(name, b).err();
                }
            });
            // An interrupted run is abandoned: saying "done" would give the next capture its
            // turn, and the writer would copy that capture's spooled rows into files that are
            // then thrown away.
            if r.is_ok() {
                sender.done();
            }
            r.map(|_| (captures, flows, failed))
        })?;
        if let Some(e) = failed {
            return Err(write_error(e));
        }
        let d = PyDict::new_bound(py);
        d.set_item("captures", rows::to_rows(py, &captures)?)?;
        d.set_item("flows", if keep_flows { rows::to_rows(py, &flows)?.into_any() } else { py.None().into_bound(py) })?;
        Ok(d)
    }

    /// No more analyses: the writer starts finishing the files while the caller goes on;
    /// close() waits for them.
    fn start_close(&self, py: Python<'_>) {
        if let Some(out) = self.dir.lock().expect("not poisoned").as_mut() {
            py.allow_threads(|| out.start_close()); // (the writer's queue may be full)
        }
    }

    /// Finish the files; returns [(table, staged path)]. Raises OSError (naming the file)
    /// if writing failed; then no file of this run is left.
    fn close(&self, py: Python<'_>) -> PyResult<Vec<(&'static str, PathBuf)>> {
        let out = self.dir.lock().expect("not poisoned").take();
        match out {
            Some(out) => py.allow_threads(|| out.close()).map_err(write_error),
            None => Err(pyo3::exceptions::PyValueError::new_err("already closed")),
        }
    }

    /// Give up: the files are removed. A no-op after close().
    fn abort(&self, py: Python<'_>) {
        let out = self.dir.lock().expect("not poisoned").take();
        py.allow_threads(|| drop(out));
    }
}

/// The output directory of a run, each table's file saying its schema version. Its error
/// stays a text ("DIR: cannot create directory: ..."): the callers show it as it is.
pub(crate) fn create_dir(dir: &std::path::Path, prefix: &str) -> PyResult<ParquetDir> {
    let versions: Vec<(&'static str, u32)> = TABLES.iter().map(|t| (t.name, t.version)).collect();
    ParquetDir::create(dir, prefix, &versions).map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))
}

/// A failure of the Parquet writer as Python's `OSError(errno, strerror, filename)` when the
/// system refused a write ("No space left on device"), else `OSError("PATH: reason")`.
pub(crate) fn write_error(e: WriteError) -> PyErr {
    match (e.errno, e.strerror(), &e.path) {
        (Some(n), Some(text), Some(path)) => pyo3::exceptions::PyOSError::new_err((n, text.to_string(), path.clone())),
        (Some(n), Some(text), None) => pyo3::exceptions::PyOSError::new_err((n, text.to_string())),
        _ => pyo3::exceptions::PyOSError::new_err(e.to_string()),
    }
}

fn describe(parts: &[&[ColumnDef]]) -> Vec<(String, String, String)> {
    parts
        .iter()
        .flat_map(|p| p.iter())
        .map(|c| (c.name.to_string(), c.ty.name().to_string(), c.doc.to_string()))
        .collect()
}

/// The declared schema of every table: {table: [(column, type, doc), ...]}.
#[pyfunction]
fn schemas(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new_bound(py);
    for t in TABLES {
        d.set_item(t.name, describe(t.parts))?;
    }
    Ok(d)
}

/// The schema version of every table: {table: version} (Parquet metadata `hsrtcp.schema_version`).
#[pyfunction]
fn schema_versions(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new_bound(py);
    for t in TABLES {
        d.set_item(t.name, t.version)?;
    }
    Ok(d)
}

/// The columns a two-vantage run adds to `flows` (the matcher's, on the rows with vantage
/// "matched") and to `series` (its loss series): {table: [(column, type, doc), ...]}.
#[pyfunction]
fn matched_schemas(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new_bound(py);
    d.set_item("flows", describe(&[MATCH_COLUMNS, MATCHED_ID_COLUMNS]))?;
    d.set_item("series", describe(&[MATCH_SERIES_COLUMNS]))?;
    Ok(d)
}

/// For a command-line run that ends soon after the analysis: let the C allocator keep the
/// memory freed during the run instead of handing it back to the kernel at once. By default
/// glibc maps each block of 128 KiB or more afresh and unmaps it when freed, and trims the
/// heap; the Parquet writer's column buffers came and went like that, every unmap stopped
/// the other threads for a TLB flush, and every reuse faulted its pages in again. On the
/// bench capture `hsrtcp analyze` took 4,350 -> 3,530 page faults, about 2 ms less wall time
/// (85.4 -> 83.3 ms, mean of 5 x 15 interleaved runs) and 1 MB more peak memory.
/// Process-wide, so only the CLI calls it, never the library.
#[pyfunction]
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes two allocator thresholds.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 64 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(analyze_capture, m)?)?;
    m.add_function(wrap_pyfunction!(schemas, m)?)?;
    m.add_function(wrap_pyfunction!(schema_versions, m)?)?;
    m.add_function(wrap_pyfunction!(matched_schemas, m)?)?;
    m.add_function(wrap_pyfunction!(keep_freed_memory, m)?)?;
    m.add_function(wrap_pyfunction!(pair::analyze_pair, m)?)?;
    m.add_class::<PyFileJob>()?;
    m.add_class::<PyPairJob>()?;
    m.add_class::<ParquetOut>()?;
    m.add_class::<pair::PairOut>()?;
    Ok(())
}
