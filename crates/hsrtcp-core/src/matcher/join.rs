//! The pair join: the matcher's rows of one pair joined with the single-capture `flows` rows
//! of their connection in each capture, into the `flows` rows with vantage `matched`
//! (docs/formats/matched.md), and the schemas of the tables a two-vantage run widens.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{new_null_array, Array, ArrayRef, BooleanArray, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{FieldRef, Schema, SchemaRef};
use arrow_select::interleave::interleave;

use crate::matcher::metrics::MATCH_SERIES_COLUMNS;
use crate::matcher::{PairingMethod, MATCH_COLUMNS};
use crate::table::registry::{FLOWS_TABLE, SERIES_TABLE};
pub use crate::table::registry::MATCHED_ID_COLUMNS;
use crate::table::schema_of;

/// Identity of a connection in one capture, as flows rows and the matcher's cv_/sv_ columns give it.
pub type ConnKey = (String, u64, String, u64, u64);
const KEY_COLUMNS: [&str; 5] = ["client_addr", "client_port", "server_addr", "server_port", "epoch"];

/// The schemas of a two-vantage run's tables that single-capture and matched rows share.
/// `flows` and `series` are the union of both schemas (single-capture rows null in the
/// two-vantage columns): the same tables the in-memory path (polars,
/// `how="diagonal_relaxed"`) built.
#[derive(Clone, Debug)]
pub struct PairSchemas {
    /// `flows` of a single capture.
    pub single_flows: SchemaRef,
    /// `flows` with the matcher's columns and [`MATCHED_ID_COLUMNS`].
    pub flows: SchemaRef,
    /// `series` with the matcher's loss series columns.
    pub series: SchemaRef,
}

impl Default for PairSchemas {
    fn default() -> Self {
        let single_flows = schema_of(&FLOWS_TABLE.parts.concat());
        let flows = union_schema(&single_flows, &[&schema_of(MATCH_COLUMNS), &schema_of(MATCHED_ID_COLUMNS)]);
        let single_series = schema_of(&SERIES_TABLE.parts.concat());
        let series = union_schema(&single_series, &[&schema_of(MATCH_SERIES_COLUMNS)]);
        PairSchemas { single_flows: Arc::new(single_flows), flows, series }
    }
}

/// `base`'s fields, then those of `extra` whose names `base` lacks.
fn union_schema(base: &Schema, extra: &[&Schema]) -> SchemaRef {
    let mut fields: Vec<FieldRef> = base.fields().iter().cloned().collect();
    for s in extra {
        for f in s.fields() {
            if !fields.iter().any(|g| g.name() == f.name()) {
                fields.push(f.clone());
            }
        }
    }
    Arc::new(Schema::new(fields))
}

/// `batch` with the columns of `schema`, taken by name; columns it lacks are null.
pub fn conform(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch, String> {
    let cols = schema
        .fields()
        .iter()
        .map(|f| match batch.column_by_name(f.name()) {
            Some(c) if c.data_type() == f.data_type() => Ok(c.clone()),
            Some(c) => Err(format!("column {}: {} where {} was expected", f.name(), c.data_type(), f.data_type())),
            None => Ok(new_null_array(f.data_type(), batch.num_rows())),
        })
        .collect::<Result<Vec<_>, _>>()?;
    RecordBatch::try_new(schema.clone(), cols).map_err(|e| e.to_string())
}

fn str_col<'a>(b: &'a RecordBatch, name: &str) -> Option<&'a StringArray> {
    b.column_by_name(name).and_then(|c| c.as_string_opt::<i32>())
}

fn u64_col<'a>(b: &'a RecordBatch, name: &str) -> Option<&'a UInt64Array> {
    b.column_by_name(name).and_then(|c| c.as_primitive_opt::<UInt64Type>())
}

/// The connection key of row `r` (columns `prefix` + KEY_COLUMNS); None if any part is null.
fn key_of(b: &RecordBatch, prefix: &str, r: usize) -> Option<ConnKey> {
    let s = |n: &str| str_col(b, &format!("{prefix}{n}")).filter(|c| c.is_valid(r)).map(|c| c.value(r).to_string());
    let u = |n: &str| u64_col(b, &format!("{prefix}{n}")).filter(|c| c.is_valid(r)).map(|c| c.value(r));
    Some((s(KEY_COLUMNS[0])?, u(KEY_COLUMNS[1])?, s(KEY_COLUMNS[2])?, u(KEY_COLUMNS[3])?, u(KEY_COLUMNS[4])?))
}

/// The pairing method of each row of a matcher batch; None if null or unknown.
fn pairings(m: &RecordBatch) -> Vec<Option<PairingMethod>> {
    let c = str_col(m, "pairing");
    (0..m.num_rows())
        .map(|r| c.filter(|c| c.is_valid(r)).and_then(|c| PairingMethod::parse(c.value(r))))
        .collect()
}

/// The server-side keys of the connections a matcher batch paired.
pub fn paired_server_keys(m: &RecordBatch, into: &mut HashSet<ConnKey>) {
    for (r, p) in pairings(m).into_iter().enumerate() {
        if p.is_some_and(PairingMethod::is_paired) {
            if let Some(k) = key_of(m, "sv_", r) {
                into.insert(k);
            }
        }
    }
}

/// `m` without its `server_only` rows of connections in `paired` (paired by another pair
/// of the same server capture: several phone paths of an MPTCP bundle share it).
pub fn drop_paired_elsewhere(m: &RecordBatch, paired: &HashSet<ConnKey>) -> Result<RecordBatch, String> {
    let keep: BooleanArray = pairings(m)
        .into_iter()
        .enumerate()
        .map(|(r, p)| {
            let server_only = p == Some(PairingMethod::ServerOnly);
            Some(!(server_only && key_of(m, "sv_", r).is_some_and(|k| paired.contains(&k))))
        })
        .collect();
    arrow_select::filter::filter_record_batch(m, &keep).map_err(|e| e.to_string())
}

/// Where each connection's single-capture row is: the client's batches, then the server's,
/// then one null row (for a matcher row with no single-capture row).
struct Sources {
    batches: Vec<RecordBatch>,
    index: [HashMap<ConnKey, (usize, usize)>; 2],
    null_at: (usize, usize),
}

impl Sources {
    fn new(sides: [&[RecordBatch]; 2], base_schema: &SchemaRef) -> Result<Self, String> {
        let mut batches: Vec<RecordBatch> = Vec::new();
        let mut index: [HashMap<ConnKey, (usize, usize)>; 2] = [HashMap::new(), HashMap::new()];
        for (s, side) in sides.iter().enumerate() {
            for b in side.iter() {
                let bi = batches.len();
                for r in 0..b.num_rows() {
                    if let Some(k) = key_of(b, "", r) {
                        index[s].entry(k).or_insert((bi, r));
                    }
                }
                batches.push(b.clone());
            }
        }
        let null_row = RecordBatch::try_new(
            base_schema.clone(),
            base_schema.fields().iter().map(|f| new_null_array(f.data_type(), 1)).collect(),
        )
        .map_err(|e| e.to_string())?;
        let null_at = (batches.len(), 0);
        batches.push(null_row);
        Ok(Sources { batches, index, null_at })
    }

    fn flow_ids(&self, at: &[Option<(usize, usize)>]) -> ArrayRef {
        let v: UInt64Array = at
            .iter()
            .map(|a| a.and_then(|(b, r)| u64_col(&self.batches[b], "flow_id").map(|c| c.value(r))))
            .collect();
        Arc::new(v)
    }

    /// Column `name` gathered from the rows at `base`.
    fn gather(&self, name: &str, base: &[(usize, usize)]) -> Result<ArrayRef, String> {
        let arrays = self
            .batches
            .iter()
            .map(|b| b.column_by_name(name).map(|c| c.as_ref()))
            .collect::<Option<Vec<&dyn Array>>>()
            .ok_or_else(|| format!("a flows batch without column {name}"))?;
        interleave(&arrays, base).map_err(|e| e.to_string())
    }
}

/// `capture` of the matched rows: "client capture + server capture".
fn capture_names(m: &RecordBatch) -> StringArray {
    let (c, s) = (str_col(m, "client_capture"), str_col(m, "server_capture"));
    (0..m.num_rows())
        .map(|r| match (c, s) {
            (Some(c), Some(s)) if c.is_valid(r) && s.is_valid(r) => Some(format!("{} + {}", c.value(r), s.value(r))),
            _ => None,
        })
        .collect()
}

/// The `flows` rows with vantage `matched` of one pair: each matcher row joined with the
/// single-capture row of its connection in each capture (by 4-tuple + epoch). The row
/// starts from the server-side row (the client-side one for a connection only the client
/// capture has), takes the matcher's values where both have a column, and points at the
/// single-capture rows (`client_flow_id`, `server_flow_id`).
pub fn matched_flows(m: &RecordBatch, sides: [&[RecordBatch]; 2], schemas: &PairSchemas) -> Result<RecordBatch, String> {
    let (base_schema, schema) = (&schemas.single_flows, &schemas.flows);
    let src = Sources::new(sides, base_schema)?;
    let n = m.num_rows();
    let mut at: [Vec<Option<(usize, usize)>>; 2] = [Vec::with_capacity(n), Vec::with_capacity(n)];
    for r in 0..n {
        for (s, prefix) in ["cv_", "sv_"].iter().enumerate() {
            at[s].push(key_of(m, prefix, r).and_then(|k| src.index[s].get(&k).copied()));
        }
    }
    let base: Vec<(usize, usize)> = (0..n).map(|r| at[1][r].or(at[0][r]).unwrap_or(src.null_at)).collect();
    let capture = capture_names(m);
    let mut cols: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    for f in schema.fields() {
        let name = f.name().as_str();
        let col: ArrayRef = match name {
            "vantage" => Arc::new(StringArray::from(vec!["matched"; n])),
            "capture" => Arc::new(capture.clone()),
            "client_flow_id" => src.flow_ids(&at[0]),
            "server_flow_id" => src.flow_ids(&at[1]),
            _ => match m.column_by_name(name) {
                Some(c) => c.clone(),
                None if base_schema.column_with_name(name).is_some() => src.gather(name, &base)?,
                None => new_null_array(f.data_type(), n),
            },
        };
        if col.data_type() != f.data_type() {
            return Err(format!("matched column {name}: {} where {} was expected", col.data_type(), f.data_type()));
        }
        cols.push(col);
    }
    RecordBatch::try_new(schema.clone(), cols).map_err(|e| e.to_string())
}
