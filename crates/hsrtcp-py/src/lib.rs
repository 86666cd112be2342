//! hsrtcp._native: the only place with PyO3. Thin: it runs core functions with the GIL
//! released and hands tables over as Arrow IPC stream bytes (polars reads them whole, no
//! per-packet Python objects).

mod pair;

use std::path::PathBuf;

use hsrtcp_core::analyze::{analyze_capture as core_analyze, CAPTURE_COLUMNS};
use hsrtcp_core::flow::{engine, event::EVENT_COLUMNS, table, CaptureInfo};
use hsrtcp_core::table::{to_ipc, ColumnDef};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

/// Analyze one capture. Returns a dict of Arrow IPC stream bytes: flows, events, series,
/// captures. Never raises for bad input: the error is in the captures row.
#[pyfunction]
#[pyo3(signature = (path, name, vantage=None, id_base=0, progress=None))]
fn analyze_capture<'py>(
    py: Python<'py>,
    path: PathBuf,
    name: String,
    vantage: Option<String>,
    id_base: u64,
    progress: Option<PyObject>,
) -> PyResult<Bound<'py, PyDict>> {
    let info = CaptureInfo { name, vantage, id_base, truncated: false };
    let result = py.allow_threads(|| {
        let mut report = |bytes: u64| {
            if let Some(cb) = &progress {
                Python::with_gil(|py| {
                    // A failing progress callback must not stop the analysis.
                    let _ = cb.call1(py, (bytes,));
                });
            }
        };
        let r = core_analyze(&path, info, &mut report);
        let o = r.output;
        [
            ("flows", to_ipc(&o.flows.finish())),
            ("events", to_ipc(&o.events.finish())),
            ("series", to_ipc(&o.series.finish())),
            ("captures", to_ipc(&r.captures.finish())),
        ]
    });
    let d = PyDict::new_bound(py);
    for (k, v) in result {
        d.set_item(k, PyBytes::new_bound(py, &v))?;
    }
    Ok(d)
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
    d.set_item("flows", describe(&[table::FLOW_COLUMNS, engine::FLOW_COLUMNS]))?;
    d.set_item("events", describe(&[EVENT_COLUMNS]))?;
    d.set_item("series", describe(&[table::SERIES_COLUMNS, engine::SERIES_COLUMNS]))?;
    d.set_item("captures", describe(&[CAPTURE_COLUMNS]))?;
    Ok(d)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(analyze_capture, m)?)?;
    m.add_function(wrap_pyfunction!(schemas, m)?)?;
    m.add_function(wrap_pyfunction!(pair::analyze_pair, m)?)?;
    Ok(())
}
