//! `_native.analyze_pair`: the two-vantage matcher (hsrtcp_core::matcher) for Python.

use std::path::PathBuf;

use hsrtcp_core::flow::event::nanos_to_s;
use hsrtcp_core::matcher::{analyze_pair as core_pair, MatchOptions};
use hsrtcp_core::table::to_ipc;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

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
    d.set_item("matched", PyBytes::new_bound(py, &to_ipc(&r.matched.finish())))?;
    d.set_item("events", PyBytes::new_bound(py, &to_ipc(&r.events.finish())))?;
    d.set_item("series", PyBytes::new_bound(py, &to_ipc(&r.series.finish())))?;
    d.set_item("stats", stats)?;
    Ok(d)
}
