//! `_native.FileJob` and `_native.PairJob`: the core's jobs of a run
//! (hsrtcp_core::matcher::output), built in Python and taken by `ParquetOut.analyze` and
//! `PairOut`'s methods.

use std::path::PathBuf;

use hsrtcp_core::matcher::output::{FileJob, PairJob};
use hsrtcp_core::matcher::MatchOptions;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// A capture file of a run: its path, the name the tables show, its vantage (None:
/// inferred; a pair's files are its client and server whatever it says), the base of its
/// flow ids and its number in the run (the files hold the rows in this order).
#[pyclass(frozen, module = "hsrtcp._native", name = "FileJob")]
pub struct PyFileJob(pub FileJob);

#[pymethods]
impl PyFileJob {
    #[new]
    #[pyo3(signature = (path, name, vantage=None, id_base=0, order=0))]
    fn new(path: PathBuf, name: String, vantage: Option<String>, id_base: u64, order: usize) -> Self {
        PyFileJob(FileJob { path, name, vantage, id_base, order })
    }
}

/// A pair of two files of a run (client, server): its number `slot` (its rows come after
/// the files', in this order), the `id_base` of its matched rows and the matcher's
/// settings. No defaults: they are the run's (hsrtcp.pair). Raises ValueError unless
/// window_s > 0 and state_budget_mb >= 1.
#[pyclass(frozen, module = "hsrtcp._native", name = "PairJob")]
pub struct PyPairJob(pub PairJob);

#[pymethods]
impl PyPairJob {
    #[new]
    fn new(
        client: PyRef<'_, PyFileJob>,
        server: PyRef<'_, PyFileJob>,
        slot: usize,
        id_base: u64,
        window_s: f64,
        use_ip_id: bool,
        state_budget_mb: usize,
    ) -> PyResult<Self> {
        check_window(window_s)?;
        let (c, s) = (&client.0, &server.0);
        let opts = MatchOptions {
            window_s,
            client_name: c.name.clone(),
            server_name: s.name.clone(),
            id_base,
            use_ip_id,
            state_budget: budget_bytes(state_budget_mb)?,
            ..MatchOptions::default()
        };
        Ok(PyPairJob(PairJob {
            paths: [c.path.clone(), s.path.clone()],
            orders: [c.order, s.order],
            slot,
            id_bases: [c.id_base, s.id_base],
            opts,
        }))
    }
}

pub(crate) fn check_window(window_s: f64) -> PyResult<()> {
    if !(window_s > 0.0) {
        return Err(PyValueError::new_err("window_s must be positive"));
    }
    Ok(())
}

/// `MatchOptions::state_budget` from megabytes (at least one).
fn budget_bytes(mb: usize) -> PyResult<usize> {
    if mb == 0 {
        return Err(PyValueError::new_err("the matcher's state budget must be at least 1 MB"));
    }
    Ok(mb.saturating_mul(1 << 20))
}
