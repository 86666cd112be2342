//! Turns the table registry (src/table/registry.tsv: every table's columns and schema
//! version, and the list of tables, declared once) into Rust constants, OUT_DIR/registry.rs, included by
//! src/table/registry.rs. Why a data file: the declarations are data (a name, a type and a
//! line of documentation each), and as Rust they were the same call written 319 times in
//! ten files.

use std::fmt::Write;

const REGISTRY: &str = "src/table/registry.tsv";
/// The registry's type names (those of `ColType::name`, what docs/formats/ show) and their
/// `ColType` variants.
const TYPES: [(&str, &str); 6] =
    [("uint64", "U64"), ("uint32", "U32"), ("int64", "I64"), ("float64", "F64"), ("bool", "Bool"), ("string", "Str")];

fn main() {
    println!("cargo:rerun-if-changed={REGISTRY}");
    let text = std::fs::read_to_string(REGISTRY).expect("the table registry is readable");
    let mut out = String::new();
    let mut in_list = false;
    let mut tables = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let at = format!("{REGISTRY}:{}", i + 1);
        if let Some(directive) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            close_list(&mut out, &mut in_list);
            match directive.split_whitespace().collect::<Vec<_>>().as_slice() {
                ["version", name, n] => {
                    let n: u32 = n.parse().unwrap_or_else(|_| panic!("{at}: a version is a whole number"));
                    writeln!(out, "pub const {name}: u32 = {n};").unwrap();
                }
                ["columns", name] => {
                    writeln!(out, "pub const {name}: &[ColumnDef] = &[").unwrap();
                    in_list = true;
                }
                ["table", name, version, parts @ ..] if !parts.is_empty() => {
                    let id = format!("{}_TABLE", name.to_uppercase());
                    let parts = parts.join(", ");
                    writeln!(out, "pub const {id}: Table = Table {{ name: {name:?}, version: {version}, parts: &[{parts}] }};")
                        .unwrap();
                    tables.push(id);
                }
                _ => panic!("{at}: not [version NAME N], [columns NAME] or [table NAME VERSION PARTS...]"),
            }
            continue;
        }
        match line.split('\t').collect::<Vec<_>>().as_slice() {
            [name, ty, doc] => {
                assert!(in_list, "{at}: a column before any 'columns' line");
                let (ty, required) = ty.strip_suffix(" not null").map_or((*ty, false), |t| (t, true));
                let variant = TYPES
                    .iter()
                    .find(|(n, _)| *n == ty)
                    .unwrap_or_else(|| panic!("{at}: unknown type {ty}"))
                    .1;
                writeln!(out, "    ColumnDef {{ name: {name:?}, ty: ColType::{variant}, doc: {doc:?}, required: {required} }},")
                    .unwrap();
            }
            _ => panic!("{at}: not name<TAB>type<TAB>doc"),
        }
    }
    close_list(&mut out, &mut in_list);
    writeln!(out, "pub const TABLES: &[Table] = &[{}];", tables.join(", ")).unwrap();
    let dest = std::path::Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("registry.rs");
    std::fs::write(dest, out).expect("OUT_DIR is writable");
}

fn close_list(out: &mut String, in_list: &mut bool) {
    if std::mem::take(in_list) {
        out.push_str("];\n");
    }
}
