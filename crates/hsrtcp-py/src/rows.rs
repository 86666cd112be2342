//! Small tables as Python rows (a list of dicts), for callers that must not pay for
//! importing polars: `hsrtcp analyze` prints its summary from these.

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// The rows of `batches` (one schema) as a list of {column: value} dicts; null is None.
pub fn to_rows<'py>(py: Python<'py>, batches: &[RecordBatch]) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty_bound(py);
    for b in batches {
        let schema = b.schema();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        for row in 0..b.num_rows() {
            let d = PyDict::new_bound(py);
            for (name, col) in names.iter().zip(b.columns()) {
                d.set_item(*name, cell(py, col.as_ref(), row))?;
            }
            out.append(d)?;
        }
    }
    Ok(out)
}

fn cell(py: Python<'_>, col: &dyn Array, row: usize) -> PyObject {
    if col.is_null(row) {
        return py.None();
    }
    match col.data_type() {
        DataType::UInt64 => col.as_primitive::<UInt64Type>().value(row).into_py(py),
        DataType::Int64 => col.as_primitive::<Int64Type>().value(row).into_py(py),
        DataType::Float64 => col.as_primitive::<Float64Type>().value(row).into_py(py),
        DataType::Boolean => col.as_boolean().value(row).into_py(py),
        DataType::Utf8 => col.as_string::<i32>().value(row).into_py(py),
        // The core's tables use only the types above (hsrtcp_core::table::ColType).
        other => format!("<{other}>").into_py(py),
    }
}
