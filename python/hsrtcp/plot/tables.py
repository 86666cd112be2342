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

from hsrtcp import results
from hsrtcp.errors import InputError
from hsrtcp.results import ResultsDir, flow_names, no_nulls, select_flow

#: flows columns a ``--flow`` value may need (names, links, 4-tuple, epoch)
SELECT_COLUMNS = ["client_addr", "client_port", "server_addr", "server_port", "epoch", "client_flow_id",
                  "server_flow_id"]


def data_bytes_expr() -> pl.Expr:
    """Payload bytes of each flows row's data direction (s2c unless an upload)."""
    return (pl.when(pl.col("data_dir") == "c2s").then(pl.col("c2s_payload_bytes"))
            .otherwise(pl.col("s2c_payload_bytes")).fill_null(0))


class Results(ResultsDir):
    """A results directory of `hsrtcp analyze` (plus context/study tables when present)."""

    def flows(self, columns: list[str], optional: list[str] = ()) -> pl.DataFrame:
        base = ["flow_id", "vantage", "data_dir", "first_ts", "last_ts", "c2s_payload_bytes",
                "s2c_payload_bytes"]
        flows = self.read("flows", list(dict.fromkeys(base + columns)),
                          optional=[*optional, "data_vantage", "capture", *SELECT_COLUMNS])
        no_nulls(flows, ["first_ts", "last_ts"], self.file("flows"))  # a figure's time axis starts at first_ts
        return flows

    #: the names of this directory's rows (flow_id, short_id, connection); a corpus partition's
    #: are set by its reader to the corpus-wide names (hsrtcp.plot.figure)
    names: pl.DataFrame | None = None

    def named(self, flows: pl.DataFrame) -> pl.DataFrame:
        names = self.names if self.names is not None else flow_names(flows)
        keys = [k for k in row_key(names) if k in flows.columns]
        return flows.drop([c for c in ("short_id", "connection") if c in flows.columns]).join(
            names.select(*keys, "short_id", "connection"), on=keys, how="left")

    def flow(self, flow_id: int | str | None, columns: list[str] = (), optional: list[str] = (),
             need_data: bool = True, matched: str = "data") -> dict:
        """The flows row ``flow_id`` names (a short id, a 4-tuple or a flow_id:
        :func:`hsrtcp.results.select_flow`); without one, the single-capture row with the most
        data bytes. A matched row (which holds the two-capture metrics, not the packets) is
        ``matched="row"`` itself; by default the single-capture row it links (the server's,
        else the phone's), with ``via`` = the matched row's short id. Unknown names and (with
        ``need_data``) flows without payload are input errors."""
        flows = self.named(self.flows(list(columns), optional))
        if flows.is_empty():
            raise InputError(f"{self.file('flows')}: no flows (nothing to draw)")
        if flow_id is None:
            single = flows.filter(pl.col("vantage").fill_null("") != "matched")
            pick = (single if not single.is_empty() else flows).with_columns(_b=data_bytes_expr())
            row = pick.sort(["_b", "flow_id"], descending=[True, False]).row(0, named=True)
            row.pop("_b")
        else:
            row = select_flow(flows, flow_id, self.file("flows"))
        if row.get("vantage") == "matched" and matched == "data":
            linked = row.get("server_flow_id")
            linked = linked if linked is not None else row.get("client_flow_id")
            sel = flows.filter(pl.col("flow_id") == linked) if linked is not None else flows.clear()
            if sel.is_empty():
                raise InputError(f"{self.file('flows')}: matched flow {row['short_id']} (flow_id {row['flow_id']}) "
                                 f"links no single-capture row in this table (server_flow_id, client_flow_id): "
                                 f"its packets are not here to draw")
            via, row_id = row["short_id"], row["flow_id"]
            row = sel.row(0, named=True)
            row["via"], row["via_flow_id"] = via, row_id
        if need_data and not row.get("data_dir"):
            raise InputError(f"{self.file('flows')}: flow {row['flow_id']} carries no payload "
                             f"(an empty flow: nothing to draw)")
        return row


def row_key(df: pl.DataFrame) -> list[str]:
    """The columns naming a row's flow: ``flow_id``, with ``input`` in a corpus."""
    return [k for k in ("input", "flow_id") if k in df.columns]


class Corpus(results.Corpus, Results):
    """A corpus results directory read as one (:class:`hsrtcp.results.Corpus`) for the figures
    over many flows (cdf, model, throughput's largest flows), named as the corpus names them."""

    def __init__(self, path, parts: list[str]):
        super().__init__(path, parts)
        self.names = self.read_names()


def flow_label(row: dict) -> str:
    """How a figure names a flow: "f1s: flow 1099511627776 (server, s2c)"; without a given
    vantage, the side the engine inferred ("at the sender")."""
    where = row.get("vantage") or (f"at the {row['data_vantage']}" if row.get("data_vantage") else "vantage ?")
    data = row.get("data_dir") or "no data"
    if row.get("via"):  # a matched row drawn from the single-capture row it links
        return f"{row['via']} (matched): packets of {row.get('short_id')} ({where}, {data})"
    name = f"{row['short_id']}: " if row.get("short_id") else ""
    source = f", input {row['input']}" if row.get("input") else ""  # a corpus's flow_id is its input's own
    return f"{name}flow {row['flow_id']} ({where}, {data}{source})"
