//! The registry of tables: every table's columns and schema version, declared once in
//! registry.tsv (one line a column: name, type, doc) and turned into these constants by the
//! crate's build.rs, with [`TABLES`], every table the core writes. The modules that write a
//! table name its columns in their writers and re-export the constants where callers looked
//! for them before.

use super::{ColType, ColumnDef};

include!(concat!(env!("OUT_DIR"), "/registry.rs"));

/// A table the core writes: its name, schema version and columns (the parts end to end).
#[derive(Clone, Copy, Debug)]
pub struct Table {
    pub name: &'static str,
    pub version: u32,
    pub parts: &'static [&'static [ColumnDef]],
}

impl Table {
    /// The table's columns in order.
    pub fn columns(&self) -> impl Iterator<Item = &'static ColumnDef> {
        self.parts.iter().flat_map(|p| p.iter())
    }
}
