//! The registry of tables: every table's columns and schema version, declared once in
//! registry.tsv (one line a column: name, type, doc) and turned into these constants by the
//! crate's build.rs. The modules that write a table name its columns in their writers and
//! re-export the constants where callers looked for them before.

use super::{ColType, ColumnDef};

include!(concat!(env!("OUT_DIR"), "/registry.rs"));
