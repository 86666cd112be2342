"""`hsrtcp report`: one self-contained HTML file from a results directory (and a study).

:func:`build_report` reads the tables (:mod:`hsrtcp.report.inputs`), turns them into
section HTML (small static tables, escaped here) and one JSON document of chart
specifications and the flow table (:mod:`hsrtcp.report.charts`), and fills the page
template with both and with the inlined uPlot library and the report's own script and
stylesheet (:mod:`hsrtcp.report.assets`). Nothing is fetched when the file is opened.

Size and time bounds: the flow table holds every flow; the per-flow drill-down (charts) is
embedded for the ``top`` flows by data bytes only, and long series are downsampled per pixel
column (:mod:`hsrtcp.report.downsample`), never the retransmission marks. docs/report.md.
"""

from __future__ import annotations

import datetime as _dt
import html
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from hsrtcp.atomic import check_output, write_file
from hsrtcp.bundle import has_manifest, manifest
from hsrtcp.errors import InputError
from hsrtcp.report import assets
from hsrtcp.report.charts import PALETTE, chart, clean, colour, ecdf, series, sig
from hsrtcp.report.flow_detail import (EMBED_MAX, PACKET_COLUMNS, PACKET_OPTIONAL, PACKETS_HINT, flow_charts,
                                       phone_lost_acks)
from hsrtcp.report.inputs import ResultsData, StudyData, load_results, load_study
from hsrtcp.report.wireshark import display_filters
from hsrtcp.results import no_nulls, with_names
from hsrtcp.schemas import class_rank
from hsrtcp.units import axis_scale, human, plain, unit_of

DEFAULT_TOP = 50
#: rows of the interactive flow table at most (the HTML budget: ~200 bytes a row): the largest
#: flows by data bytes, every drilled-down flow among them; the scope note gives the query
#: that writes all of them
FLOW_TABLE_ROWS = 5000
DEFAULT_WIDTH = 1200
#: rows of the connections table at most (the first connections by first packet)
CONNECTION_ROWS = 2000

#: flows columns of the interactive flow table: (column or derived key, header, kind, base unit).
#: A column with a unit shows its values in one human unit chosen from its values (ms, Mbit/s,
#: %: :func:`_display_unit`) named in its header; the JSON keeps the base (SI) values.
FLOW_TABLE = [
    ("flow_id", "flow", "id", None), ("short_id", "name", "str", None), ("input", "input", "str", None),
    ("input_flow_id", "flow_id in input", "id", None), ("capture", "capture", "str", None), ("vantage", "vantage", "str", None),
    ("endpoints", "client → server", "str", None), ("data_dir", "data", "str", None),
    ("flow_class", "class", "str", None), ("handoffs", "handoffs", "int", None),
    ("duration_s", "duration", "num", "s"), ("data_bytes", "data (bytes)", "int", None),
    ("rate_bps", "mean rate", "num", "bit/s"), ("goodput_bytes", "goodput (bytes)", "int", None),
    ("retransmissions", "retx", "int", None), ("timeouts", "RTOs", "int", None),
    ("spurious_timeouts", "spurious RTOs", "int", None), ("rtt_mean", "RTT mean", "num", "s"),
    ("p_d", "data loss p_d", "num", "share"), ("end_reason", "end", "str", None), ("mptcp", "MPTCP", "bool", None),
    ("truncated", "truncated", "bool", None), ("detail", "detail", "bool", None),
]
#: the columns of the study's long tables whose values are in the row's ``unit``
STUDY_VALUE_COLUMNS = ("value", "value_lo", "value_hi", "median", "median_lo", "median_hi")
STUDY_SUMMARY_TABLES = ("performance", "spurious_rto", "dupack", "handshake", "failure", "timeout_recovery",
                        "suspensions", "handoff_intervals", "u_rate")


@dataclass
class ReportInfo:
    path: Path
    flows: int
    detailed: int
    bytes: int
    seconds: float


def _esc(v, unit: str | None = None) -> str:
    """A cell: null/NaN as a dash; a float, or an integer with a unit (bytes), in the human
    format of ``unit`` (hsrtcp.units: ms, Mbit/s, %, MB, never exponent notation); anything
    else as text."""
    if v is None:
        return '<span class="null">—</span>'
    if isinstance(v, float):
        if np.isnan(v):
            return '<span class="null">—</span>'
        return html.escape(human(v, unit, digits=4 if unit else 6))
    if unit is not None and isinstance(v, int) and not isinstance(v, bool):
        return html.escape(human(v, unit, digits=4))
    return html.escape(str(v))


def html_table(df: pl.DataFrame, cls: str = "static", max_rows: int = 2000,
               units: dict[str, str | None] | None = None) -> str:
    """A small polars table as escaped HTML (nulls as a dash). Numbers are humanized by the
    unit their column's name says (``*_s``, ``*_bps``, shares: :func:`hsrtcp.units.unit_of`),
    or by ``units`` where a name says none of it; in the study's long tables, ``value`` and
    its intervals by the row's ``unit``."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in df.columns)
    units = [(units or {}).get(c) or unit_of(c) for c in df.columns]
    row_unit = df.columns.index("unit") if "unit" in df.columns else None
    rows = []
    for row in df.head(max_rows).iter_rows():
        cells = []
        for i, v in enumerate(row):
            unit = units[i]
            if row_unit is not None and df.columns[i] in STUDY_VALUE_COLUMNS:
                unit = row[row_unit]
            cells.append(f"<td>{_esc(v, unit)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    more = f'<p class="note">{df.height - max_rows} more rows not shown.</p>' if df.height > max_rows else ""
    return (f'<div class="wide"><table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody>'
            f"</table></div>{more}")


def _num(df: pl.DataFrame, name: str) -> np.ndarray:
    if name not in df.columns:
        return np.full(df.height, np.nan)
    return df.get_column(name).cast(pl.Float64).fill_null(np.nan).to_numpy()


# ---------------------------------------------------------------- flows

def _flow_frame(res: ResultsData) -> pl.DataFrame:
    f = res.flows
    data_bytes = (pl.when(pl.col("data_dir") == "c2s").then(pl.col("c2s_payload_bytes"))
                  .when(pl.col("data_dir") == "s2c").then(pl.col("s2c_payload_bytes"))
                  .otherwise(pl.max_horizontal("c2s_payload_bytes", "s2c_payload_bytes")))
    f = f.with_columns(
        data_bytes.alias("data_bytes"),
        pl.format("{}:{} → {}:{}", "client_addr", "client_port", "server_addr", "server_port").alias("endpoints"),
    ).with_columns(
        pl.when(pl.col("duration_s") > 0).then(pl.col("data_bytes") * 8 / pl.col("duration_s"))
        .otherwise(None).alias("rate_bps"))
    if res.context is not None:
        ctx_cols = [c for c in ("flow_class", "handoffs", "class_reason", "carrier") if c in res.context.columns]
        ctx = res.context.select("flow_id", *ctx_cols).unique("flow_id")
        f = f.join(ctx.with_columns(pl.col("flow_id").cast(f.schema["flow_id"])), on="flow_id", how="left")
    if "short_id" not in f.columns:
        # names from the columns they need, put beside f's columns (not a copy of every one)
        keys = [c for c in ("input", "flow_id", "vantage", "first_ts", "client_flow_id", "server_flow_id")
                if c in f.columns]
        f = pl.concat([with_names(f.select(keys)).select("short_id", "connection"), f], how="horizontal")
    return f


def _top_flows(f: pl.DataFrame, top: int) -> list[int]:
    # (two columns sorted, not every column of every flow)
    ranked = f.select("flow_id", "data_bytes").filter(pl.col("data_bytes") > 0)
    return ranked.sort(["data_bytes", "flow_id"], descending=[True, False]).get_column("flow_id").head(top).to_list()


def _table_rows(f: pl.DataFrame, detailed: list[int]) -> pl.DataFrame:
    """The rows of the flow table: all of ``f`` up to FLOW_TABLE_ROWS, else the flows with a
    drill-down and the largest others by data bytes, in the order of ``f``."""
    if f.height <= FLOW_TABLE_ROWS:
        return f
    ranked = (f.select("flow_id", "data_bytes").with_row_index("_row")
              .with_columns(pl.col("flow_id").is_in(detailed).alias("_detail"))
              .sort(["_detail", "data_bytes", "flow_id"], descending=[True, True, False], nulls_last=True)
              .head(FLOW_TABLE_ROWS))
    return f[np.sort(ranked.get_column("_row").to_numpy())]


def _display_unit(values: list, unit: str) -> tuple[float, str]:
    """The shown unit of a flow-table column: the scale of its median magnitude (a column of
    RTTs around 40 ms shows ms; one of rates around 3 Mbit/s, Mbit/s; shares are in %)."""
    mags = sorted(abs(v) for v in values if v is not None and np.isfinite(v) and v != 0)
    return axis_scale(mags[len(mags) // 2] if mags else 0.0, unit)


def _flow_table(f: pl.DataFrame, detailed: set[int]) -> dict:
    cols = []
    for key, header, kind, unit in FLOW_TABLE:
        if key in ("input", "input_flow_id") and key not in f.columns:
            continue  # a corpus's columns
        if key == "detail":
            vals = [fid in detailed for fid in f.get_column("flow_id").to_list()]
        elif key not in f.columns:
            vals = [None] * f.height
        elif kind == "num":
            vals = sig(_num(f, key), 6)
        elif kind == "id":  # uint64 ids (matched rows use the high bits) exceed JavaScript's 2^53
            vals = [str(v) for v in f.get_column(key).to_list()]
        else:
            vals = f.get_column(key).to_list()
        col = {"key": key, "header": header, "kind": kind, "values": vals}
        if unit is not None:  # values stay in the base unit; shown divided by scale, in shown
            scale, shown = _display_unit(vals, unit)
            col.update(header=f"{header} ({shown})", name=header, unit=unit, scale=scale, shown=shown)
        cols.append(col)
    return {"columns": cols, "rows": f.height}


def _linked(f: pl.DataFrame, top_ids: list[int]) -> dict[int, int]:
    """Matched row -> the single-capture row whose packets its drill-down shows (the
    server's, else the phone's): the matched row holds metrics, not packets."""
    if "server_flow_id" not in f.columns or "client_flow_id" not in f.columns:
        return {}
    m = f.filter((pl.col("vantage") == "matched") & pl.col("flow_id").is_in(top_ids))
    have = set(f.get_column("flow_id").to_list())
    out = {}
    for fid, srv, cli in zip(*m.select("flow_id", "server_flow_id", "client_flow_id").get_columns()):
        src = srv if srv in have else cli if cli in have else None
        if src is not None:
            out[fid] = src
    return out


def _detail_packets(res: ResultsData, f: pl.DataFrame, ids: pl.Series, parts, extra=()) -> tuple[dict, str | None]:
    """The drilled-down flows' rows of the packets table (``hsrtcp analyze --packets``), by
    flow_id, and why there are none (None when there are)."""
    path = Path(res.path) / "packets.parquet"
    if "input" in f.columns:  # a corpus renumbers its flows: their packets stay in each input's results
        return {}, f"a corpus of results; `hsrtcp report` of one results directory with a packets table ({PACKETS_HINT})"
    if not path.exists():
        return {}, f"no packets table in the results; {PACKETS_HINT}"
    from hsrtcp.results import ResultsDir

    # through the results reader: a packets table of a newer version or without a column is refused
    return parts(ResultsDir(res.path).scan("packets", PACKET_COLUMNS, optional=PACKET_OPTIONAL),
                 PACKET_COLUMNS + PACKET_OPTIONAL, extra), None


def _details(res: ResultsData, f: pl.DataFrame, top_ids: list[int], width: int) -> list[dict]:
    if not top_ids:
        return []
    linked = _linked(f, top_ids)
    ids = pl.Series(list(dict.fromkeys([*top_ids, *linked.values()])), dtype=res.flows.schema["flow_id"])

    # a matched row's phone row: its lost ACKs (packets only)
    phones = {fid: rows_cli for fid, rows_cli in zip(*f.filter(pl.col("flow_id").is_in(list(linked))).select(
        "flow_id", "client_flow_id").get_columns()) if rows_cli is not None and rows_cli != linked[fid]} if linked else {}

    def parts(lf: pl.LazyFrame, columns: list[str], extra=()) -> dict:
        have = lf.collect_schema().names()
        want = ids.to_list() + list(extra)
        df = lf.select([c for c in columns if c in have]).filter(pl.col("flow_id").is_in(want)).collect()
        return {k[0] if isinstance(k, tuple) else k: v for k, v in df.partition_by("flow_id", as_dict=True).items()}

    series_by = parts(res.series, ["flow_id", "bin", "t_rel", "bytes", "goodput_bytes", "retransmissions", "bif_max",
                                   "bif_mean", "awnd_min", "awnd_mean", "rtt_mean", "backoff", "data_sent", "data_lost"])
    events_by = parts(res.events.filter(pl.col("kind").is_in(
        ["retransmission", "spurious_retransmission", "timeout_sequence", "spurious_timeout", "zero_window",
         "suspension", "gap", "sack_block"])), ["flow_id", "kind", "class", "ts", "ts_end", "dir", "seq_start", "seq_end",
                                                   "frame"])
    for ev in events_by.values():
        no_nulls(ev, ["ts"], str(res.path / "events.parquet"))  # every event has a time
    rtt_by = parts(res.rtt, ["flow_id", "ts", "dir", "method", "rtt_s"])
    packets_by, packets_note = _detail_packets(res, f, ids, parts, phones.values())
    outages_by = {}
    if res.suspensions is not None:
        s = res.suspensions.with_columns(pl.col("flow_id").cast(res.flows.schema["flow_id"]))
        outages_by = {k[0]: v for k, v in s.filter(pl.col("flow_id").is_in(ids.to_list()))
                      .partition_by("flow_id", as_dict=True).items()}
    handoff_ts = np.sort(_num(res.handoffs, "ts")) if res.handoffs is not None else np.array([])
    carriers = {}
    if res.handoffs is not None and "carrier" in res.handoffs.columns and "carrier" in f.columns:
        carriers = dict(zip(f.get_column("flow_id").to_list(), f.get_column("carrier").to_list()))
    # every flows column for these rows (f holds the columns drawn for all flows)
    rows = {r["flow_id"]: r for r in res.detail_rows(f, ids.to_list()).iter_rows(named=True)}
    truth_ev, truth_cap = _truth_tables(res)
    runs = {}
    if truth_ev is not None and res.context is not None and "run_id" in res.context.columns:
        ctx = res.context.with_columns(pl.col("flow_id").cast(res.flows.schema["flow_id"]))
        runs = dict(ctx.filter(pl.col("flow_id").is_in(ids.to_list())).select("flow_id", "run_id").iter_rows())
    out = []
    for fid in top_ids:
        row = rows[fid]
        src = linked.get(fid, fid)  # a matched row: its server row's packets, its own verdicts
        hts = handoff_ts
        if carriers.get(fid) is not None:
            h = res.handoffs.filter(pl.col("carrier") == carriers[fid])
            hts = np.sort(_num(h, "ts"))
        hts = hts[(hts >= row["first_ts"]) & (hts <= row["last_ts"])]
        events, verdicts = events_by.get(src), None
        if src != fid:
            own = events_by.get(fid)
            if own is not None:  # the matcher's spurious timeouts (M12, with their cause)
                events = own if events is None else pl.concat([events, own], how="diagonal_relaxed")
            verdicts = series_by.get(fid)
        truth = None
        if truth_ev is not None:  # the lab's ground truth of the flow's own run and path
            from hsrtcp.lab.truth import flow_truth

            r = rows[src]
            direction = "up" if r.get("data_dir") == "c2s" else "down"
            tev, tcap = flow_truth(truth_ev, truth_cap, runs.get(src), r.get("carrier"), r["first_ts"],
                                   r["last_ts"], direction)
            truth = {"events": tev, "capacity": tcap, "direction": direction}
        pk = packets_by.get(src)
        note = packets_note
        if pk is not None and pk.height > EMBED_MAX:  # the report's size: `hsrtcp plot tsg` draws it
            pk, note = None, (f"{pk.height:,} packets, more than the report embeds ({EMBED_MAX:,}); "
                              f"`hsrtcp plot tsg --flow {src}` draws every segment")
        other = None
        if fid in phones and pk is not None:
            phone = res.detail_rows(f, [phones[fid]]).row(0, named=True) if phones[fid] not in rows else rows[phones[fid]]
            other = phone_lost_acks(row, phone, packets_by.get(phones[fid]))
        d = flow_charts(rows[src], series_by.get(src), events, rtt_by.get(src), hts, outages_by.get(fid), width,
                        fates=verdicts, key=fid, truth=truth, packets=pk, packets_note=note, other_lost_acks=other)
        # the display filters of the row whose packets are drawn (a matched row's own events
        # name no one capture's frames)
        d["notes"] += display_filters(events_by.get(src), rows[src].get("capture"),
                                      rows[src].get("input_flow_id", src), rows[src].get("input"))
        name = row.get("short_id") or f"flow {fid}"
        if src != fid:
            d["notes"].insert(0, f"{name} is a matched row (both captures): the charts show the packets of "
                                 f"{rows[src].get('short_id')} ({rows[src].get('vantage')} capture, flow {src}) with the "
                                 f"matcher's verdicts: {_lost_text(row)}")
        where = (f"flow {row['input_flow_id']} of input {row['input']}" if row.get("input") is not None
                 else f"flow {fid}")
        d["title"] = (f"{name} ({where}): {row['endpoints']} ({row.get('capture')}, "
                      f"{row.get('vantage') or 'vantage unknown'}, data {row.get('data_dir') or '?'}, "
                      f"{row.get('data_vantage') or 'sender/receiver ?'} side)")
        d["flow_id"] = str(fid)
        d["name"] = name
        out.append(d)
    return out


def _truth_tables(res: ResultsData) -> tuple[pl.DataFrame | None, pl.DataFrame | None]:
    """truth_events and truth_capacity of the results (of every input of a corpus), or
    (None, None) when they hold none: results not made from a lab bundle."""
    from hsrtcp.results import ResultsDir, partitions

    frames: dict[str, list[pl.DataFrame]] = {"truth_events": [], "truth_capacity": []}
    for part in partitions(res.path):
        rd = ResultsDir(part)
        for name in frames:
            if rd.has(name):
                frames[name].append(rd.read(name))
    ev = pl.concat(frames["truth_events"], how="diagonal_relaxed") if frames["truth_events"] else None
    cap = pl.concat(frames["truth_capacity"], how="diagonal_relaxed") if frames["truth_capacity"] else None
    if ev is None or (ev.is_empty() and (cap is None or cap.is_empty())):
        return None, None
    return ev, cap


def _gallery_html(res: ResultsData, st: StudyData | None, wanted: bool) -> str:
    if not wanted:
        return '<p class="note" id="gallery-origin">Left out (--no-gallery).</p>'
    from hsrtcp.report.gallery import gallery_html

    return gallery_html(res.path, st.path if st else None)


def _lost_text(row: dict) -> str:
    def n(v):
        return "?" if v is None else f"{v:,}"

    return (f"{n(row.get('lost_data_packets'))} of {n(row.get('data_packets_sent'))} data packets lost in the network "
            f"(p_d), {n(row.get('lost_ack_packets'))} of {n(row.get('ack_packets_sent'))} pure ACKs (p_a), "
            f"{n(row.get('spurious_timeouts_2v'))} spurious timeouts from both captures")


def _connections_html(res: ResultsData, f: pl.DataFrame) -> str:
    """The connections view (docs/query.md): one row per connection, both vantages and the
    matched metrics side by side. The table shows the first CONNECTION_ROWS connections:
    beyond them (one results directory) only their rows go through the view."""
    from hsrtcp.dataset import connections

    flows, n_conn = res.flows, None
    if "input" not in f.columns and "connection" in f.columns:
        # names number the connections in the view's order (f1, f2, ...): the first ones
        # keep their numbers when the view sees only their rows
        no = f.get_column("connection").str.slice(1).cast(pl.Int64, strict=False)
        n_conn = no.n_unique()
        if n_conn > CONNECTION_ROWS:
            keep_ids = f.filter(no <= CONNECTION_ROWS).get_column("flow_id")
            flows = flows.filter(pl.col("flow_id").is_in(keep_ids.implode()))
    c = connections(flows)
    keep = ["connection", "client_addr", "client_port", "server_addr", "server_port",
            "client_short_id", "client_retransmissions", "client_rtt_mean", "client_goodput_bytes",
            "server_short_id", "server_retransmissions", "server_timeouts", "server_rtt_mean", "server_goodput_bytes",
            "unknown_short_id", "unknown_retransmissions", "matched_short_id", "matched_p_d", "matched_p_a",
            "matched_ack_burst_loss", "matched_q", "matched_spurious_timeouts_2v", "matched_clock_offset_s"]
    if flows is res.flows:
        c = c.select([k for k in keep if k in c.columns and not c.get_column(k).is_null().all()])
    else:  # a column is left out when null in every connection, not only in those shown
        c = c.select([k for k in keep if k in c.columns and _in_any_connection(f, k)])
    total = c.height if n_conn is None or n_conn <= CONNECTION_ROWS else n_conn
    more = f'<p class="note">{total - c.height} more rows not shown.</p>' if total > c.height else ""
    return (f'<p class="note" id="connections">{total} connection(s): a matched row with the client and server '
            "rows it links, else one row; named by first packet (f1, ...; their rows f1c, f1s, f1m). "
            '<code>hsrtcp query RESULTS "from connections"</code> has every column.</p>'
            + html_table(c, "static", CONNECTION_ROWS, _connection_units(c.columns)) + more)


def _connection_units(columns: list[str]) -> dict[str, str | None]:
    """The unit of each side's metric in the connections view (``server_rtt_mean`` is an
    RTT, ``matched_p_d`` a share): its metric's unit, the side prefix left off."""
    sides = ("client_", "server_", "unknown_", "matched_")
    return {c: unit_of(c.split("_", 1)[1]) for c in columns if c.startswith(sides)}


def _in_any_connection(f: pl.DataFrame, key: str) -> bool:
    """Whether the connections view's column ``key`` has a value in some connection, from the
    flows ``f``: ``client_retransmissions`` when a client row (its side as the view takes it,
    query.connections_sql) has retransmissions; any other column when a row has it."""
    from hsrtcp.query import MATCHED_METRICS, SIDE_METRICS

    near = pl.col("capture_near").cast(pl.String) if "capture_near" in f.columns else pl.lit(None, pl.String)
    vantage = pl.col("vantage").cast(pl.String)
    side = pl.when(vantage.is_in(["client", "server", "matched"])).then(vantage).otherwise(
        pl.coalesce(near, pl.lit("unknown")))
    for name, metrics in (("client", SIDE_METRICS), ("server", SIDE_METRICS), ("unknown", SIDE_METRICS),
                          ("matched", MATCHED_METRICS)):
        metric = key[len(name) + 1:]
        if key.startswith(name + "_") and metric in metrics:
            if metric not in f.columns:
                return False
            return bool(f.select(((side == name) & pl.col(metric).is_not_null()).any()).item())
    return key not in f.columns or bool(f.get_column(key).is_not_null().any())


# ---------------------------------------------------------------- captures, MPTCP, provenance

def _captures_html(res: ResultsData) -> str:
    c = res.captures
    cols = [x for x in ("capture", "vantage", "packets", "tcp_packets", "other_packets", "malformed_packets",
                        "malformed_reasons", "flows", "truncated", "error") if x in c.columns]
    bad = c.filter(pl.col("truncated") | pl.col("error").is_not_null() | (pl.col("malformed_packets") > 0))
    lines = [html_table(c.select(cols), "static captures")]
    if bad.height:
        items = "".join(f"<li><b>{html.escape(str(r['capture']))}</b>: "
                        f"{html.escape(str(r['error'] or ''))} {'(truncated) ' if r['truncated'] else ''}"
                        f"{r['malformed_packets']} malformed record(s)"
                        f"{' — ' + html.escape(r['malformed_reasons']) if r['malformed_reasons'] else ''}</li>"
                        for r in bad.iter_rows(named=True))
        lines.insert(0, f'<div class="warn" id="read-errors"><b>Read problems in {bad.height} capture(s):</b>'
                        f"<ul>{items}</ul></div>")
    else:
        lines.insert(0, '<p id="read-errors" class="ok">Every capture was read to its end without error.</p>')
    n_trunc = int(res.flows.get_column("truncated").sum() or 0) if "truncated" in res.flows.columns else 0
    if n_trunc:
        lines.append(f'<p class="note">{n_trunc} flow(s) were open when their capture ended with an error '
                     "(flows.truncated): their numbers cover what was read.</p>")
    return "".join(lines)


def mptcp_section(root, table) -> str:
    from hsrtcp.report.mptcp_section import mptcp_section as section

    return section(Path(root), table)


def _mptcp_html(f: pl.DataFrame) -> str:
    if "mptcp" not in f.columns:
        return '<p class="note">The flows table has no mptcp column.</p>'
    m = f.filter(pl.col("mptcp").fill_null(False))
    if m.height == 0:
        return '<p class="note">No flow carried an MPTCP option (flows.mptcp is false for every flow).</p>'
    cols = [c for c in ("flow_id", "capture", "endpoints", "data_dir", "first_ts", "duration_s", "data_bytes",
                        "rate_bps", "retransmissions", "timeouts", "rtt_mean", "end_reason") if c in m.columns]
    by_cap = m.group_by("capture").agg(pl.len().alias("subflows"), pl.col("data_bytes").sum().alias("data_bytes"),
                                       pl.col("first_ts").min().alias("first_ts"),
                                       pl.col("last_ts").max().alias("last_ts")).sort("capture")
    return (f"<p>{m.height} TCP connection(s) carried an MPTCP option (kind 30). Today the tables hold them as "
            "separate TCP subflows: the MPTCP connection they belong to (token, data sequence) is not "
            "decoded yet, so the subflows are listed per capture.</p>"
            + html_table(by_cap, "static") + html_table(m.select(cols), "static"))


def _bundle_manifests(res: ResultsData) -> list[tuple[str, dict]]:
    """manifest.json of every bundle the results come from (labels.source, else next to a capture)."""
    candidates: list[Path] = []
    if res.labels is not None and "source" in res.labels.columns:
        candidates += [Path(s) for s in res.labels.get_column("source").drop_nulls().to_list()]
    for cap in res.captures.get_column("capture").drop_nulls().to_list():
        p = Path(cap).resolve().parent
        candidates += [p, p.parent]
    seen, out = set(), []
    for c in candidates:
        key = c.resolve()
        if not has_manifest(c) or key in seen:
            continue
        seen.add(key)
        try:
            out.append((str(c), manifest(c)))
        except InputError as exc:  # shown in the page, the rest of the report still made
            out.append((str(c), {"error": str(exc)}))
    return out


def _provenance_html(res: ResultsData) -> str:
    parts = []
    if res.labels is not None and res.labels.height:
        keep = [c for c in res.labels.columns if not res.labels.get_column(c).is_null().all()]
        parts.append("<h3>Labels (labels.parquet)</h3>" + html_table(res.labels.select(keep) if keep else res.labels))
    manifests = _bundle_manifests(res)
    for src, m in manifests:
        if "error" in m:
            parts.append(f'<p class="warn">{html.escape(src)}: {html.escape(m["error"])}</p>')
            continue
        scen = m.get("scenario") or {}
        flow = m.get("flow") or {}
        rows = [("run", m.get("run_id")), ("status", m.get("status")),
                ("scenario", f"{scen.get('name')} ({scen.get('source')}, sha256 {str(scen.get('sha256'))[:12]}…)"),
                ("congestion control", m.get("cc")), ("flow", json.dumps(flow, sort_keys=True)),
                ("MPTCP", m.get("mptcp")), ("repetition / campaign", f"{m.get('repetition')} / {m.get('campaign')}"),
                ("seeds", json.dumps(m.get("seeds"), sort_keys=True)),
                ("versions", json.dumps(m.get("versions"), sort_keys=True)),
                ("errors", "; ".join(m.get("errors") or []) or None)]
        body = "".join(f"<tr><th>{html.escape(k)}</th><td>{_esc(v)}</td></tr>" for k, v in rows)
        parts.append(f"<h3>Bundle {html.escape(src)}</h3><table class=\"static kv\">{body}</table>")
    if not parts:
        return ('<p class="note">No lab provenance: the results come from captures, not from a lab bundle '
                "(no labels.parquet, no manifest.json next to the captures).</p>")
    return "".join(parts)


# ---------------------------------------------------------------- per-class (study) and models

def _class_key(c: str) -> tuple:
    return (class_rank(c), c)


def _cdf_chart(cid: str, title: str, x_label: str, groups: dict[str, np.ndarray], x_log: bool = False) -> dict:
    ss = []
    for i, (name, vals) in enumerate(sorted(groups.items(), key=lambda kv: _class_key(kv[0]))):
        x, y = ecdf(vals)
        if x:
            ss.append(series(f"{name} (n={int(np.sum(~np.isnan(vals)))})", x, y, colour(i), "step", 2))
    return chart(cid, title, x_label, "CDF (share ≤ x)", ss, x_log=x_log, y_range=[0, 1])


def _study_section(study: StudyData | None, f: pl.DataFrame) -> tuple[str, list[dict]]:
    charts: list[dict] = []
    if study is None:
        # Without a study: per-flow CDFs by the context class when the analysis had one.
        by = f.get_column("flow_class").fill_null("unknown") if "flow_class" in f.columns else pl.Series(["all"] * f.height)
        groups_rate, groups_rtt = {}, {}
        rate, rtt = _num(f, "rate_bps"), _num(f, "rtt_mean")
        labels = np.array(by.to_list(), dtype=object)
        for cls in sorted(set(labels.tolist()), key=_class_key):
            sel = labels == cls
            groups_rate[cls], groups_rtt[cls] = rate[sel], rtt[sel]
        charts.append(_cdf_chart("cdf-flow-rate", "Mean rate per flow (data bytes × 8 / duration)", "bit/s",
                                 groups_rate, x_log=True))
        charts.append(_cdf_chart("cdf-flow-rtt", "Mean RTT per flow (M7)", "s", groups_rtt))
        text = ('<p class="note">No study directory given: the per-class tables of the seed papers come from '
                "<code>hsrtcp study RESULTS -o STUDY</code>, then <code>hsrtcp report RESULTS STUDY</code>. Below, "
                "per-flow CDFs of this results directory"
                + (" by the context class (context.parquet)." if "flow_class" in f.columns else
                   " (no context.parquet: all flows in one group).") + "</p>")
        return text, charts

    t = study.tables
    parts = [f"<p>Study <code>{html.escape(str(study.path))}</code>: inputs "
             f"{html.escape(', '.join(map(str, study.manifest.get('inputs', []))))}; grouped by "
             f"{html.escape(str(study.manifest.get('options', {}).get('by') or 'class only'))}.</p>"]
    notes = study.manifest.get("notes") or []
    if notes:
        parts.append('<ul class="note">' + "".join(f"<li>{html.escape(str(n))}</li>" for n in notes) + "</ul>")
    if "classes" in t:
        parts.append("<h3>Classes</h3>" + html_table(t["classes"]))
    for name in STUDY_SUMMARY_TABLES:
        if name not in t or t[name].height == 0:
            continue
        df = t[name]
        show = [c for c in df.columns if c not in ("table",)]
        parts.append(f'<details id="study-{name}"{" open" if name == "performance" else ""}><summary>'
                     f'{html.escape(name.replace("_", " "))} ({df.height} rows)</summary>'
                     + html_table(df.select(show)) + "</details>")
    if "coverage" in t and t["coverage"].height:
        parts.append("<h3>LTE coverage (M28)</h3>" + html_table(t["coverage"]))

    if "throughput_samples" in t and t["throughput_samples"].height:
        ts = t["throughput_samples"]
        groups = {cls: _num(ts.filter(pl.col("flow_class") == cls), "throughput_bps")
                  for cls in ts.get_column("flow_class").unique().to_list()}
        h = ts.filter(pl.col("flow_class").is_in(["high_1_8", "high_9_16"]))
        if h.height:
            groups["high_1_16"] = _num(h, "throughput_bps")
        charts.append(_cdf_chart("cdf-throughput", "Throughput per 1-s sample by class (M3, A3; seed 000 Fig. 1)",
                                 "bit/s", groups))
    if "study_flows" in t and t["study_flows"].height:
        sf = t["study_flows"]
        for metric, title, unit in (("rtt_mean_s", "Mean RTT per flow by class (M7)", "s"),
                                    ("spurious_rto_rate", "Spurious RTO rate per flow by class (M13)", "share"),
                                    ("dupack_rate", "DupACK rate per flow by class (M15)", "share"),
                                    ("throughput_mean_bps", "Mean throughput per flow by class", "bit/s")):
            if metric in sf.columns and sf.get_column(metric).is_not_null().any():
                groups = {cls: _num(sf.filter(pl.col("flow_class") == cls), metric)
                          for cls in sf.get_column("flow_class").fill_null("unknown").unique().to_list()}
                charts.append(_cdf_chart(f"cdf-{metric}", title, unit, groups))
    return "".join(parts), charts


def _models_section(res: ResultsData) -> tuple[str, list[dict]]:
    from hsrtcp.models.evaluate import MODEL_KEYS, MODEL_LABELS
    from hsrtcp.models.fitting import PLOT_POINTS, fit_flows

    fit = fit_flows(res.flows)
    n = fit.flows.height
    # the flows a point can be drawn for; beyond PLOT_POINTS of them a seeded sample (as model
    # fit's figure): the chart's budget, while the D table is over all flows
    # (row positions first, then only the drawn rows copied: no second table of every flow)
    rows = np.flatnonzero(fit.flows.select((pl.col("throughput_pkts") > 0) & pl.any_horizontal(
        [pl.col(f"pred_{k}") > 0 for k in MODEL_KEYS])).to_series().fill_null(False).to_numpy())
    drawable = len(rows)
    if drawable > PLOT_POINTS:
        rows = rows[np.sort(np.random.default_rng(0).choice(drawable, PLOT_POINTS, replace=False))]
    fl = fit.flows[rows]
    measured = _num(fl, "throughput_pkts")
    have_any = False
    ss = []
    order = np.argsort(np.where(np.isnan(measured), np.inf, measured), kind="stable")
    x = measured[order]
    ok = ~np.isnan(x) & (x > 0)
    for i, key in enumerate(MODEL_KEYS):
        y = _num(fl, f"pred_{key}")[order]
        sel = ok & ~np.isnan(y) & (y > 0)
        if sel.any():
            have_any = True
            ss.append(series(MODEL_LABELS[key], sig(x[sel], 6), sig(y[sel], 6), colour(i), "points"))
    intro = ("<p>Measured throughput (flows.throughput_pkts, M4) against the models' predictions from each flow's "
             "own inputs (p_d, P_a, q, RTT, T, W_m, b; <code>hsrtcp model fit</code>, docs/models.md). "
             "D = |predicted − measured| / measured (seed 001 eq. 22, M35, A20)."
             + (f" The chart shows {PLOT_POINTS:,} of the {drawable:,} flows with a measurement and a prediction, "
                f"drawn at random; the table is over all {n:,} flows." if drawable > PLOT_POINTS else "") + "</p>")
    if not have_any:
        n_missing = fit.flows.filter(pl.col("missing_inputs").list.len() > 0).height
        return (intro + f'<p class="note">No flow has every model input ({n_missing} of {n} lack some: '
                "p_d and q come from two-vantage (matched) rows, T needs a timeout). Nothing to compare.</p>"), []
    # the identity line across every measured and predicted value drawn
    drawn = np.concatenate([np.asarray(sr["x"] + sr["y"], dtype=np.float64) for sr in ss])
    ends = sig([float(np.nanmin(drawn)), float(np.nanmax(drawn))], 6)
    ss.append(series("measured = predicted", ends, ends, PALETTE["grey"], "line", 1))
    ch = chart("model-fit", "Measured vs predicted throughput", "measured (packets/s)", "predicted (packets/s)", ss,
               x_log=True, y_log=True)
    # D is a relative error: in % as the other shares; throughputs in packets/s, named so in
    # the header (a name that says no unit) and with the 4 digits of the other units' cells
    pkts = {c: f"{c.removesuffix('_pkts')} (packets/s)" for c in fit.summary.columns if c.endswith("_pkts")}
    summary = fit.summary.with_columns(pl.col(c).map_elements(lambda v: plain(v, 4), return_dtype=pl.String)
                                       for c in pkts).rename(pkts)
    return intro + html_table(summary, units={"mean_d": "share", "median_d": "share"}), [ch]


# ---------------------------------------------------------------- page

def _finite(obj):
    """``obj`` with NaN and ±inf floats as None (JSON has neither)."""
    if isinstance(obj, float):
        return obj if np.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def _json_for_html(obj) -> str:
    try:
        text = json.dumps(obj, separators=(",", ":"), allow_nan=False)
    except ValueError:  # a NaN or inf derived from the tables: shown as missing, like a null
        text = json.dumps(_finite(obj), separators=(",", ":"), allow_nan=False)
    # inside <script>: no "</" (would end the element) and no "<!--"
    return text.replace("</", "<\\/").replace("<!--", "<\\!--")


def build_report(results: str | os.PathLike, study: str | os.PathLike | None = None,
                 out: str | os.PathLike = "report.html", *, top: int = DEFAULT_TOP,
                 width: int = DEFAULT_WIDTH, gallery: bool = True, progress: bool = False) -> ReportInfo:
    """Write the report of ``results`` (and ``study``) to ``out``; input errors name the file.
    ``gallery``: the studies' gallery section (:mod:`hsrtcp.report.gallery`). ``progress``:
    its phases on stderr (:class:`hsrtcp.progress.Steps`: a bar on a terminal, else a line
    per phase)."""
    from hsrtcp.progress import Steps

    with Steps("report", 5, enabled=progress) as steps:
        return _build(results, study, out, top=top, width=width, gallery=gallery, steps=steps)


def _build(results, study, out, *, top: int, width: int, gallery: bool, steps) -> ReportInfo:
    import time

    from hsrtcp import __version__

    start = time.perf_counter()
    # an output the end would refuse (a table of a directory read) is refused before the work
    check_output(out, reads=[results] + ([study] if study is not None else []))
    uplot_js, uplot_css = assets.uplot()  # fail early (clear message) when npm ci was not run
    steps.step(f"reading flows: {results}" + (f", study {study}" if study is not None else ""))
    res = load_results(results)
    st = load_study(study) if study is not None else None
    # the model fit first, while only the flows as read are held (the peak of 1 M flows)
    steps.step(f"model fit: {res.flows.height:,} flow(s)")
    models_html, model_charts = _models_section(res)
    steps.step("tables: flows, top flows")
    f = _flow_frame(res)
    if f.get_column("flow_id").equals(res.flows.get_column("flow_id")):
        res.flows = f.select(res.flows.columns)  # the same columns, held once (issue 32)
    top_ids = _top_flows(f, top)
    steps.step(f"figures: drill-downs of {len(top_ids)} flow(s), per-class tables and CDFs"
               + (", the studies' gallery" if gallery else ""))
    details = _details(res, f, top_ids, width)
    class_html, class_charts = _study_section(st, f)
    gallery_html = _gallery_html(res, st, gallery)
    steps.step(f"writing HTML: {out}")
    n_flows = f.height
    scope = (f"Drill-down charts are embedded for the {len(top_ids)} largest flow(s) by data bytes"
             + (f" of {n_flows}" if n_flows > len(top_ids) else "")
             + f" (option --top, now {top}); the flow table lists "
             + (f"all {n_flows} flows" if n_flows <= FLOW_TABLE_ROWS else
                f"the {FLOW_TABLE_ROWS:,} largest of the {n_flows:,} flows by data bytes; every flow: "
                f"hsrtcp query {res.path} \"select * from flows\" -f csv -o flows.csv")
             + ". Long series are "
             f"downsampled per pixel column for a {width}-pixel-wide chart; every retransmission mark is kept.")
    data = {
        "generated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "hsrtcp_version": __version__, "uplot_version": assets.uplot_version(),
        "results": str(res.path), "study": str(st.path) if st else None,
        "flow_table": _flow_table(_table_rows(f, top_ids), set(top_ids)),
        "details": details,
        "class_charts": class_charts, "model_charts": model_charts,
    }
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in res.notes)
    subs = {
        "TITLE": html.escape(f"hsrtcp report: {res.path.name or res.path}"),
        "UPLOT_CSS": uplot_css, "REPORT_CSS": assets.static("report.css"),
        "UPLOT_JS": uplot_js, "REPORT_JS": assets.static("report.js"),
        "DATA": _json_for_html(data),
        "HEADER": (f"<p>Results <code>{html.escape(str(res.path))}</code>"
                   + (f", study <code>{html.escape(str(st.path))}</code>" if st else "")
                   + f"; {n_flows} flow(s) in {res.captures.height} capture(s). Generated "
                   f"{html.escape(data['generated'])} by hsrtcp {html.escape(__version__)} "
                   f"(uPlot {html.escape(str(data['uplot_version']))}).</p><p class=\"note\" id=\"scope\">"
                   f"{html.escape(scope)}</p>" + (f'<ul class="note">{notes}</ul>' if notes else "")),
        "CAPTURES": _captures_html(res) + "<h3>Connections</h3>" + _connections_html(res, f),
        "CLASSES": class_html, "MODELS": models_html,
        "MPTCP": mptcp_section(res.path, html_table) or _mptcp_html(f), "PROVENANCE": _provenance_html(res),
        "GALLERY": gallery_html,
    }
    page = assets.static("template.html")
    # one pass: text put in (file names, labels) is never searched for placeholders again
    page = re.sub(r"\{\{([A-Z_]+)\}\}", lambda m: subs[m.group(1)], page)
    out_path = Path(out)
    body = page.encode("utf-8")
    # (never over a table of the directories read; a device or pipe is written through)
    write_file(out_path, lambda tmp: Path(tmp).write_bytes(body), reads=[res.path] + ([st.path] if st else []))
    return ReportInfo(out_path, n_flows, len(top_ids), len(body), time.perf_counter() - start)
