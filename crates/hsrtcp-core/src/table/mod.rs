//! Columnar table builders: results leave the core as Arrow record batches.
//!
//! Every table has a declared schema (a list of [`ColumnDef`] with a one-line doc), so the
//! column set never depends on the data, and `docs/formats/` can be generated from the same
//! list. Rows are written by column name; a column a row does not set is null ("missing is
//! null, never 0 or -1").

mod column;
pub mod parquet;
pub mod registry;

use std::sync::Arc;

pub(crate) use column::str_column;
use column::Column;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use rustc_hash::FxHashMap;

/// Column value types. All columns are nullable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColType {
    U64,
    /// For the per-packet table: header fields of 32 bits or fewer take half the bytes.
    U32,
    I64,
    F64,
    Bool,
    Str,
}

impl ColType {
    pub fn name(self) -> &'static str {
        match self {
            ColType::U64 => "uint64",
            ColType::U32 => "uint32",
            ColType::I64 => "int64",
            ColType::F64 => "float64",
            ColType::Bool => "bool",
            ColType::Str => "string",
        }
    }
    fn arrow(self) -> DataType {
        match self {
            ColType::U64 => DataType::UInt64,
            ColType::U32 => DataType::UInt32,
            ColType::I64 => DataType::Int64,
            ColType::F64 => DataType::Float64,
            ColType::Bool => DataType::Boolean,
            ColType::Str => DataType::Utf8,
        }
    }
}

/// One declared column: name, type and a one-line meaning (with unit and metric id).
#[derive(Clone, Copy, Debug)]
pub struct ColumnDef {
    pub name: &'static str,
    pub ty: ColType,
    pub doc: &'static str,
    /// Never null, by construction of the table (declared with [`required`]).
    pub required: bool,
}

/// Shorthand for declaring schemas in the modules that own the columns.
pub const fn col(name: &'static str, ty: ColType, doc: &'static str) -> ColumnDef {
    ColumnDef { name, ty, doc, required: false }
}

/// A column that is never null. Only for tables whose rows cannot lack a value (`rtt`):
/// Parquet then stores no definition levels, which was an eighth of writing that table.
pub const fn required(name: &'static str, ty: ColType, doc: &'static str) -> ColumnDef {
    ColumnDef { name, ty, doc, required: true }
}

/// The Arrow schema of declared columns (each column's doc as field metadata "doc"; every
/// field nullable unless declared [`required`], so a table's schema never depends on its
/// data).
pub fn schema_of(defs: &[ColumnDef]) -> Schema {
    Schema::new(
        defs.iter()
            .map(|d| Field::new(d.name, d.ty.arrow(), !d.required).with_metadata([("doc".to_string(), d.doc.to_string())].into()))
            .collect::<Vec<_>>(),
    )
}

/// Builds one table row by row.
pub struct TableBuilder {
    defs: Vec<ColumnDef>,
    index: FxHashMap<&'static str, usize>,
    data: Vec<Column>,
    set: Vec<bool>,
    rows: usize,
    /// Index of the column after the last one set in the current row.
    next: usize,
    /// Rows each fresh set of columns has room for: growing them by doubling (realloc +
    /// copy, batch after batch) was a quarter of writing the events.
    capacity: usize,
}

impl TableBuilder {
    /// A builder for the concatenation of the given schema parts, in order.
    pub fn new(parts: &[&[ColumnDef]]) -> Self {
        Self::with_capacity(parts, 0)
    }

    /// A builder whose columns have room for `rows` rows, again after each [`Self::take_batch`].
    pub fn with_capacity(parts: &[&[ColumnDef]], rows: usize) -> Self {
        let defs: Vec<ColumnDef> = parts.iter().flat_map(|p| p.iter().copied()).collect();
        let mut index = FxHashMap::default();
        for (i, d) in defs.iter().enumerate() {
            let previous = index.insert(d.name, i);
            assert!(previous.is_none(), "column {} declared twice", d.name);
        }
        let data = defs.iter().map(|d| Column::new(d.ty, rows)).collect();
        let set = vec![false; defs.len()];
        TableBuilder { defs, index, data, set, rows: 0, next: 0, capacity: rows }
    }

    pub fn defs(&self) -> &[ColumnDef] {
        &self.defs
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Start a row; it is completed (unset columns null) when the writer is dropped.
    pub fn row(&mut self) -> Row<'_> {
        Row { t: self }
    }

    fn slot(&mut self, name: &'static str, ty: ColType) -> &mut Column {
        // Writers mostly follow the schema's order: try the column after the last one set
        // before hashing the name (the lookup was 7% of a full analysis).
        let i = match self.defs.get(self.next) {
            // The same literal is mostly the same pointer: skip comparing the bytes then.
            Some(d) if std::ptr::eq(d.name, name) || d.name == name => self.next,
            _ => match self.index.get(name) {
                Some(&i) => i,
                None => panic!("column {name} is not declared in this table's schema"),
            },
        };
        self.next = i + 1;
        assert_eq!(self.defs[i].ty, ty, "column {name} declared as {:?}", self.defs[i].ty);
        assert!(!self.set[i], "column {name} set twice in one row");
        self.set[i] = true;
        &mut self.data[i]
    }

    fn end_row(&mut self) {
        for (i, was_set) in self.set.iter_mut().enumerate() {
            if !*was_set {
                self.data[i].push_null();
            }
            *was_set = false;
        }
        self.next = 0;
        self.rows += 1;
    }

    /// Append one row given as every column's value, in schema order: the fast path for
    /// long tables (no lookup by name, no bookkeeping of unset columns). Panics, naming the
    /// column, if a cell's type does not match.
    pub fn append_row(&mut self, cells: &[Cell<'_>]) {
        assert_eq!(cells.len(), self.data.len(), "a full row has one cell per column");
        for (i, (d, c)) in self.data.iter_mut().zip(cells).enumerate() {
            match (d, c) {
                (Column::U64(b), Cell::U64(v)) => b.push(*v),
                (Column::U32(b), Cell::U32(v)) => b.push(*v),
                (Column::I64(b), Cell::I64(v)) => b.push(*v),
                (Column::F64(b), Cell::F64(v)) => b.push(v.filter(|x| x.is_finite())),
                (Column::Bool(b), Cell::Bool(v)) => b.push(*v),
                (Column::Str(b), Cell::Str(v)) => b.push(*v),
                _ => panic!("column {} is declared as {:?}", self.defs[i].name, self.defs[i].ty),
            }
        }
        self.rows += 1;
    }

    /// The Arrow schema (with each column's doc as field metadata "doc").
    pub fn schema(&self) -> Schema {
        schema_of(&self.defs)
    }

    pub fn finish(mut self) -> RecordBatch {
        self.take_batch()
    }

    /// The rows written so far as one batch; the builder starts over empty (same schema),
    /// so a long analysis can hand its tables on in pieces instead of holding them whole.
    pub fn take_batch(&mut self) -> RecordBatch {
        let schema = Arc::new(self.schema());
        let cap = self.capacity;
        let cols: Vec<ArrayRef> = (self.data.iter_mut().zip(&self.defs))
            .map(|(d, def)| std::mem::replace(d, Column::new(def.ty, cap)).finish())
            .collect();
        self.rows = 0;
        RecordBatch::try_new(schema, cols).expect("columns have equal length by construction")
    }
}

/// One value of a row written whole with [`TableBuilder::append_row`] (None = null; a
/// float that is NaN or infinite becomes null too).
#[derive(Clone, Copy, Debug)]
pub enum Cell<'a> {
    U64(Option<u64>),
    U32(Option<u32>),
    I64(Option<i64>),
    F64(Option<f64>),
    Bool(Option<bool>),
    Str(Option<&'a str>),
}

/// A row being written. Setters accept plain values or `Option`s (None = null).
pub struct Row<'a> {
    t: &'a mut TableBuilder,
}

macro_rules! setter {
    ($fn:ident, $ty:ty, $ct:expr, $variant:ident) => {
        pub fn $fn(&mut self, name: &'static str, v: impl Into<Option<$ty>>) -> &mut Self {
            match self.t.slot(name, $ct) {
                Column::$variant(b) => b.push(v.into()),
                _ => unreachable!(),
            }
            self
        }
    };
}

impl Row<'_> {
    setter!(u64, u64, ColType::U64, U64);
    setter!(u32, u32, ColType::U32, U32);
    setter!(i64, i64, ColType::I64, I64);
    setter!(f64, f64, ColType::F64, F64);
    setter!(bool, bool, ColType::Bool, Bool);

    pub fn str(&mut self, name: &'static str, v: Option<&str>) -> &mut Self {
        match self.t.slot(name, ColType::Str) {
            Column::Str(b) => b.push(v),
            _ => unreachable!(),
        }
        self
    }

    /// A float column from an optional value; NaN and infinities become null.
    pub fn f64_finite(&mut self, name: &'static str, v: Option<f64>) -> &mut Self {
        self.f64(name, v.filter(|x| x.is_finite()))
    }
}

impl Drop for Row<'_> {
    fn drop(&mut self) {
        self.t.end_row();
    }
}

/// Serialize a batch as an Arrow IPC stream (what crosses into Python: polars reads it
/// without per-row objects).
pub fn to_ipc(batch: &RecordBatch) -> Vec<u8> {
    to_ipc_stream(&batch.schema(), std::slice::from_ref(batch))
}

/// Serialize several batches of one schema as one Arrow IPC stream.
pub fn to_ipc_stream(schema: &Schema, batches: &[RecordBatch]) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut w = arrow_ipc::writer::StreamWriter::try_new(&mut out, schema).expect("in-memory writer");
        for b in batches {
            w.write(b).expect("in-memory write");
        }
        w.finish().expect("in-memory finish");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &[ColumnDef] = &[col("a", ColType::U64, "a"), col("s", ColType::Str, "s")];
    const B: &[ColumnDef] = &[col("x", ColType::F64, "x")];

    #[test]
    fn unset_columns_are_null_and_schema_is_stable() {
        let mut t = TableBuilder::new(&[A, B]);
        t.row().u64("a", 1).str("s", Some("one"));
        t.row().f64("x", 2.5).u64("a", None);
        t.row().f64_finite("x", Some(f64::NAN));
        let b = t.finish();
        assert_eq!(b.num_rows(), 3);
        assert_eq!(b.num_columns(), 3);
        assert_eq!(b.column(0).null_count(), 2);
        assert_eq!(b.column(1).null_count(), 2);
        assert_eq!(b.column(2).null_count(), 2);
        assert!(!to_ipc(&b).is_empty());
    }

    #[test]
    fn take_batch_starts_over_with_the_same_schema() {
        let mut t = TableBuilder::new(&[A]);
        t.row().u64("a", 1);
        t.row().u64("a", 2);
        let first = t.take_batch();
        assert_eq!((first.num_rows(), t.rows()), (2, 0));
        t.row().str("s", Some("x"));
        let second = t.take_batch();
        assert_eq!(second.num_rows(), 1);
        assert_eq!(first.schema(), second.schema());
        assert_eq!(second.column(0).null_count(), 1);
        let ipc = to_ipc_stream(&first.schema(), &[first, second]);
        let rows: usize = arrow_ipc::reader::StreamReader::try_new(&ipc[..], None)
            .unwrap()
            .map(|b| b.unwrap().num_rows())
            .sum();
        assert_eq!(rows, 3);
    }

    #[test]
    fn append_row_equals_the_row_writer() {
        let mut by_name = TableBuilder::new(&[A, B]);
        by_name.row().u64("a", 7).str("s", Some("x")).f64("x", 1.5);
        by_name.row().u64("a", None).f64_finite("x", Some(f64::INFINITY));
        let mut whole = TableBuilder::new(&[A, B]);
        whole.append_row(&[Cell::U64(Some(7)), Cell::Str(Some("x")), Cell::F64(Some(1.5))]);
        whole.append_row(&[Cell::U64(None), Cell::Str(None), Cell::F64(Some(f64::INFINITY))]);
        assert_eq!(whole.finish(), by_name.finish());
    }

    #[test]
    #[should_panic(expected = "column s is declared as Str")]
    fn append_row_checks_types() {
        let mut t = TableBuilder::new(&[A]);
        t.append_row(&[Cell::U64(Some(1)), Cell::U64(Some(2))]);
    }

    #[test]
    fn values_nulls_and_empty_strings_come_out_as_written() {
        use arrow_array::{Array, BooleanArray, Float64Array, Int64Array, StringArray};
        const C: &[ColumnDef] = &[
            col("b", ColType::Bool, "b"),
            col("i", ColType::I64, "i"),
            col("f", ColType::F64, "f"),
            col("s", ColType::Str, "s"),
        ];
        let mut t = TableBuilder::with_capacity(&[C], 1); // grows past its capacity
        t.row().bool("b", true).i64("i", -3).f64("f", 0.5).str("s", Some(""));
        t.row().str("s", Some("zwölf"));
        t.append_row(&[Cell::Bool(Some(false)), Cell::I64(None), Cell::F64(Some(f64::NAN)), Cell::Str(None)]);
        let b = t.finish();
        let bools = b.column(0).as_any().downcast_ref::<BooleanArray>().unwrap();
        assert_eq!(bools.iter().collect::<Vec<_>>(), [Some(true), None, Some(false)]);
        let ints = b.column(1).as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(ints.iter().collect::<Vec<_>>(), [Some(-3), None, None]);
        let floats = b.column(2).as_any().downcast_ref::<Float64Array>().unwrap();
        assert_eq!(floats.iter().collect::<Vec<_>>(), [Some(0.5), None, None]);
        let strs = b.column(3).as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(strs.iter().collect::<Vec<_>>(), [Some(""), Some("zwölf"), None]);
        assert_eq!(strs.null_count(), 1);
    }

    #[test]
    #[should_panic(expected = "not declared")]
    fn undeclared_column_panics() {
        let mut t = TableBuilder::new(&[A]);
        t.row().u64("nope", 1);
    }
}
