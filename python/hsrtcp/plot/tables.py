"""Reading a results directory for the figures: Parquet in, checked, one flow at a time.

Figures come from the tables only (never the captures), so everything a figure shows can be
redrawn from a results directory alone. Each figure names the columns it needs; the tables
are opened through the one results reader (:mod:`hsrtcp.results`), which checks each
against its versioned schema (docs/formats/) and names the file and column of anything
wrong. A flow's rows are read with a filter pushed into the Parquet scan, so drawing one
flow of a long capture reads little.
"""

from __future__ import annotations

import polars as pl

from hsrtcp.errors import InputError
from hsrtcp.results import ResultsDir, no_nulls


def data_bytes_expr() -> pl.Expr:
    """Payload bytes of each flows row's data direction (s2c unless an upload)."""
    return (pl.when(pl.col("data_dir") == "c2s").then(pl.col("c2s_payload_bytes"))
            .otherwise(pl.col("s2c_payload_bytes")).fill_null(0))


class Results(ResultsDir):
    """A results directory of `hsrtcp analyze` (plus context/study tables when present)."""

    def flows(self, columns: list[str], optional: list[str] = ()) -> pl.DataFrame:
        base = ["flow_id", "vantage", "data_dir", "first_ts", "last_ts", "c2s_payload_bytes",
                "s2c_payload_bytes"]
        flows = self.read("flows", list(dict.fromkeys(base + columns)), optional=[*optional, "data_vantage", "capture"])
        no_nulls(flows, ["first_ts", "last_ts"], self.file("flows"))  # a figure's time axis starts at first_ts
        return flows

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


def flow_label(row: dict) -> str:
    """How a figure names a flow: "flow 1099511627776 (server, s2c)"; without a given
    vantage, the side the engine inferred ("at the sender")."""
    where = row.get("vantage") or (f"at the {row['data_vantage']}" if row.get("data_vantage") else "vantage ?")
    return f"flow {row['flow_id']} ({where}, {row.get('data_dir') or 'no data'})"
