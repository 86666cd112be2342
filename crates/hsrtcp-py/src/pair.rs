//! `_native.analyze_pair` and `_native.PairOut`: the two-vantage matcher
//! (hsrtcp_core::matcher) for Python. The join, its schemas and its threads are the core's
//! (`matcher::output`); here: arguments, the GIL, Python's progress callbacks and errors.

use std::path::PathBuf;

use hsrtcp_core::flow::event::nanos_to_s;
use hsrtcp_core::matcher::output::{FileRows, OutputError, PairOutput};
use hsrtcp_core::matcher::{analyze_pair as core_pair, MatchOptions};
use hsrtcp_core::table::to_ipc;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use crate::job::{check_window, PyFileJob, PyPairJob};
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
    check_window(window_s)?;
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

/// The one map of the core's run errors to Python's. `stops`: what each progress callback
/// of the call raised (Ctrl-C), in the order they were handed to the core.
fn output_error(e: OutputError, stops: &mut [Option<PyErr>]) -> PyErr {
    match e {
        OutputError::Interrupted(i) => crate::interrupted(stops.get_mut(i).and_then(Option::take)),
        OutputError::Write(e) => crate::write_error(e),
        OutputError::Internal(e) => PyRuntimeError::new_err(format!("internal error: {e}")),
        OutputError::Join(e) => PyOSError::new_err(e),
    }
}

/// A two-vantage run writing its tables into a directory as Parquet while it runs
/// (hsrtcp_core::matcher::output::PairOutput): `analyze` every capture file, `match_pair`
/// every pair (or `analyze_pair_files` for a pair whose files are in no other pair), then
/// `finish_pairs` writes the matched rows, and `close` finishes the files.
#[pyclass(module = "hsrtcp._native")]
pub struct PairOut {
    run: PairOutput,
}

#[pymethods]
impl PairOut {
    #[new]
    #[pyo3(signature = (dir, prefix=".hsrtcp-new.", packets=false))]
    fn new(dir: PathBuf, prefix: &str, packets: bool) -> PyResult<Self> {
        let out = crate::create_dir(&dir, prefix)?;
        Ok(PairOut { run: PairOutput::new(out, packets) })
    }

    /// Analyze one capture file of the run (as `ParquetOut.analyze`); its flows rows are
    /// also kept for the matched rows. `hold_packets`: the file belongs to a pair run by
    /// `match_pair`; its `packets` rows wait in memory for that pair's fates (`finish_pairs`
    /// writes them).
    #[pyo3(signature = (file, progress=None, keep_flows=false, hold_packets=false))]
    fn analyze<'py>(
        &self,
        py: Python<'py>,
        file: PyRef<'py, PyFileJob>,
        progress: Option<PyObject>,
        keep_flows: bool,
        hold_packets: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let file = file.0.clone();
        let mut stops = [None];
        let r = py.allow_threads(|| {
            let mut report = crate::python_progress(&progress, &mut stops[0]);
            self.run.analyze(file, hold_packets, keep_flows, &mut report)
        });
        let rows = r.map_err(|e| output_error(e, &mut stops))?;
        file_result(py, rows)
    }

    /// One pair whose two files belong to no other pair, read and decoded once: both
    /// files are analyzed at the same time (as `analyze`) and the matcher (as `match_pair`)
    /// takes the segments their readers decoded. Returns the two results of `analyze`
    /// (client, server).
    /// `progress`: each file's progress callback (client, server).
    #[pyo3(signature = (job, progress, keep_flows=false))]
    fn analyze_pair_files<'py>(
        &self,
        py: Python<'py>,
        job: PyRef<'py, PyPairJob>,
        progress: (Option<PyObject>, Option<PyObject>),
        keep_flows: bool,
    ) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyDict>)> {
        let job = job.0.clone();
        let (client_progress, server_progress) = progress;
        let mut stops = [None, None];
        let r = py.allow_threads(|| {
            let [sc, ss] = &mut stops;
            let mut rc = crate::python_progress(&client_progress, sc);
            let mut rs = crate::python_progress(&server_progress, ss);
            self.run.analyze_pair_files(job, keep_flows, [&mut rc, &mut rs])
        });
        let [dc, ds] = r.map_err(|e| output_error(e, &mut stops))?;
        Ok((file_result(py, dc)?, file_result(py, ds)?))
    }

    /// Run the matcher on one pair of this run; its rows wait for `finish_pairs`.
    fn match_pair(&self, py: Python<'_>, job: PyRef<'_, PyPairJob>) {
        let job = job.0.clone();
        py.allow_threads(|| self.run.match_pair(job));
    }

    /// Write the matched rows of every pair (pair k's rows as number `first_order + k` in
    /// the files, after the capture files' rows): flows, events, series, pair_stats.
    /// Several phone paths may share one server capture (an MPTCP bundle): a connection
    /// paired in one path's run is then not reported "server only" by another's. Returns
    /// `(flows, warnings)`: the matched flows rows as dicts with `keep_flows` (for a summary),
    /// else None; the pairs' matcher warnings (state budget), for stderr.
    #[pyo3(signature = (first_order, keep_flows=false))]
    fn finish_pairs<'py>(&self, py: Python<'py>, first_order: usize, keep_flows: bool) -> PyResult<Bound<'py, PyAny>> {
        let done = py.allow_threads(|| self.run.finish_pairs(first_order, keep_flows)).map_err(|e| output_error(e, &mut []))?;
        let flows = if keep_flows { rows::to_rows(py, &done.flows)?.into_any() } else { py.None().into_bound(py) };
        Ok(PyTuple::new_bound(py, [flows, PyList::new_bound(py, done.warnings).into_any()]).into_any())
    }

    /// Finish the files; returns [(table, staged path)] (see `ParquetOut.close`).
    fn close(&self, py: Python<'_>) -> PyResult<Vec<(&'static str, PathBuf)>> {
        match py.allow_threads(|| self.run.close()) {
            Some(r) => r.map_err(crate::write_error),
            None => Err(PyValueError::new_err("already closed")),
        }
    }

    /// Give up: the files are removed. A no-op after close().
    fn abort(&self, py: Python<'_>) {
        py.allow_threads(|| self.run.abort());
    }
}

/// What `analyze` returns for one file: {"captures": [row], "flows": [rows] or None}.
fn file_result(py: Python<'_>, r: FileRows) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new_bound(py);
    d.set_item("captures", rows::to_rows(py, &r.captures)?)?;
    d.set_item("flows", match &r.flows {
        Some(f) => rows::to_rows(py, f)?.into_any(),
        None => py.None().into_bound(py),
    })?;
    Ok(d)
}
