"""Reading a results directory for the figures: Parquet in, checked, one flow at a time.

Figures come from the tables only (never the captures), so everything a figure shows can be
redrawn from a results directory alone. Each figure names the columns it needs; a table
without one of them was written by an older hsrtcp (each table's schema version is in
its docs/formats/ page) and is reported as such, naming the file. A flow's rows are read with a
filter pushed into the Parquet scan, so drawing one flow of a long capture reads little.
"""

from __future__ import annotations

import os

import polars as pl

from hsrtcp.errors import InputError

# The tables `hsrtcp analyze` writes, and their format pages.
CORE = ("flows", "events", "rtt", "series", "captures")


def data_bytes_expr() -> pl.Expr:
    """Payload bytes of each flows row's data direction (s2c unless an upload)."""
    return (pl.when(pl.col("data_dir") == "c2s").then(pl.col("c2s_payload_bytes"))
            .otherwise(pl.col("s2c_payload_bytes")).fill_null(0))


class Results:
    """A results directory of `hsrtcp analyze` (plus context/study tables when present)."""

    def __init__(self, path: str | os.PathLike, frames: dict[str, pl.DataFrame] | None = None):
        """``frames``: tables already in memory (name -> DataFrame), used instead of files
        (``path`` then only names them in messages)."""
        self.path = os.fspath(path)
        self.frames = frames
        if frames is None and not os.path.isdir(self.path):
            what = "is a file, not" if os.path.exists(self.path) else "no such"
            raise InputError(f"{self.path}: {what} results directory (the -o of hsrtcp analyze)")
        self._schemas: dict[str, pl.Schema] = {}

    def file(self, table: str) -> str:
        return os.path.join(self.path, f"{table}.parquet")

    def has(self, table: str) -> bool:
        if self.frames is not None:
            return table in self.frames
        return os.path.isfile(self.file(table))

    def schema(self, table: str) -> pl.Schema:
        if self.frames is not None:
            if table not in self.frames:
                raise InputError(f"{self.file(table)}: missing table {table!r}")
            return self.frames[table].schema
        if table not in self._schemas:
            f = self.file(table)
            if not os.path.isfile(f):
                hint = (" (is it a results directory of hsrtcp analyze?)" if table in CORE else "")
                raise InputError(f"{f}: missing table {table!r}{hint}")
            try:
                self._schemas[table] = pl.read_parquet_schema(f)
            except Exception as exc:  # noqa: BLE001 - polars raises several types for bad files
                raise InputError(f"{f}: not a readable Parquet file ({type(exc).__name__}: "
                                 f"{str(exc).splitlines()[0] if str(exc) else ''})") from None
        return self._schemas[table]

    def require(self, table: str, columns: list[str]) -> None:
        """InputError naming the file if ``table`` lacks one of ``columns`` (older schema)."""
        missing = [c for c in columns if c not in self.schema(table)]
        if missing:
            doc = f"docs/formats/{table}.md"
            raise InputError(f"{self.file(table)}: no column(s) {', '.join(missing)}: the table was "
                             f"written by an older or different hsrtcp (the current schema has them, {doc}); "
                             f"re-run hsrtcp analyze")

    def read(self, table: str, columns: list[str], flow_id: int | None = None,
             optional: list[str] = ()) -> pl.DataFrame:
        """``columns`` (required) and ``optional`` columns (when present) of ``table``,
        only the rows of ``flow_id`` when given."""
        self.require(table, columns)
        cols = list(dict.fromkeys([*columns, *(c for c in optional if c in self.schema(table))]))
        try:
            lf = pl.scan_parquet(self.file(table)) if self.frames is None else self.frames[table].lazy()
            if flow_id is not None:
                lf = lf.filter(pl.col("flow_id") == flow_id)
            return lf.select(cols).collect()
        except Exception as exc:  # noqa: BLE001 - a file cut short, a bad page ...
            raise InputError(f"{self.file(table)}: cannot read ({type(exc).__name__}: "
                             f"{str(exc).splitlines()[0] if str(exc) else ''})") from None

    def flows(self, columns: list[str], optional: list[str] = ()) -> pl.DataFrame:
        base = ["flow_id", "vantage", "data_dir", "first_ts", "last_ts", "c2s_payload_bytes",
                "s2c_payload_bytes"]
        return self.read("flows", list(dict.fromkeys(base + columns)),
                         optional=[*optional, "data_vantage", "capture"])

    def flow(self, flow_id: int | None, columns: list[str] = (), optional: list[str] = (),
             need_data: bool = True) -> dict:
        """The flows row of ``flow_id``; without an id, the single-capture row with the most
        data bytes. Unknown ids and (with ``need_data``) flows without payload are input errors."""
        flows = self.flows(list(columns), optional)
        if flows.is_empty():
            raise InputError(f"{self.file('flows')}: no flows (nothing to draw)")
        if flow_id is None:
            single = flows.filter(pl.col("vantage").fill_null("") != "matched")
            pick = (single if not single.is_empty() else flows).with_columns(_b=data_bytes_expr())
            row = pick.sort(["_b", "flow_id"], descending=[True, False]).row(0, named=True)
            row.pop("_b")
        else:
            sel = flows.filter(pl.col("flow_id") == flow_id)
            if sel.is_empty():
                ids = flows["flow_id"].sort().to_list()
                shown = ", ".join(str(i) for i in ids[:8]) + (", ..." if len(ids) > 8 else "")
                raise InputError(f"{self.file('flows')}: no flow with flow_id {flow_id} "
                                 f"(the {len(ids)} flow ids: {shown})")
            row = sel.row(0, named=True)
        if need_data and not row.get("data_dir"):
            raise InputError(f"{self.file('flows')}: flow {row['flow_id']} carries no payload "
                             f"(an empty flow: nothing to draw)")
        return row

    def optional(self, table: str, columns: list[str], flow_id: int | None = None) -> pl.DataFrame | None:
        """Like :meth:`read` for a context table that may be absent (None then); a present
        table without the columns is still an error."""
        if not self.has(table):
            return None
        return self.read(table, columns, flow_id)


def flow_label(row: dict) -> str:
    """How a figure names a flow: "flow 1099511627776 (server, s2c)"; without a given
    vantage, the side the engine inferred ("at the sender")."""
    where = row.get("vantage") or (f"at the {row['data_vantage']}" if row.get("data_vantage") else "vantage ?")
    return f"flow {row['flow_id']} ({where}, {row.get('data_dir') or 'no data'})"
