"""Reference for the two-vantage tables: the in-memory implementation (polars joins) that
``hsrtcp analyze --client/--server`` used until the path streamed from Rust to Parquet
(``hsrtcp._native.PairOut``, :func:`hsrtcp.pair.analyze_pairs_to`). Kept here, unchanged
but for being sequential and without progress, as the witness that the streaming path
writes the same tables row for row (test_pair_stream.py): it joins the matcher's raw rows
(:func:`hsrtcp.pair.match_tables`) with the single-capture flows (:func:`hsrtcp.api.analyze_one`)
in polars, an independent implementation of the join done in Rust.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from hsrtcp.api import analyze_one
from hsrtcp.output import shown
from hsrtcp.pair import capture_files, match_tables
from hsrtcp.runner import TABLES

_SIDE_KEYS = ("client_addr", "client_port", "server_addr", "server_port", "epoch")


def _join_side(matched: pl.DataFrame, flows: pl.DataFrame, prefix: str, id_name: str) -> pl.DataFrame:
    """Attach the flow_id of the side's single-capture row (by 4-tuple + epoch)."""
    side = flows.select([pl.col(k).alias(f"{prefix}{k}") for k in _SIDE_KEYS]
                        + [pl.col("flow_id").alias(id_name)])
    return matched.join(side, on=[f"{prefix}{k}" for k in _SIDE_KEYS], how="left")


def matched_rows(matched: pl.DataFrame, client_flows: pl.DataFrame,
                 server_flows: pl.DataFrame) -> pl.DataFrame:
    """Build the ``flows`` rows with vantage ``matched``: the side's single-capture row
    (server side when present) with the two-vantage columns added and the identity replaced
    (``flow_id`` = matched id, ``vantage`` = "matched", ``client_flow_id`` /
    ``server_flow_id`` pointing at the single-capture rows)."""
    m = _join_side(matched, client_flows, "cv_", "client_flow_id")
    m = _join_side(m, server_flows, "sv_", "server_flow_id")
    base_id = pl.coalesce("server_flow_id", "client_flow_id")
    m = m.with_columns(base_id.alias("_base"))
    singles = pl.concat([client_flows, server_flows], how="vertical")
    own = [c for c in m.columns if c not in ("_base",)]
    keep = [c for c in singles.columns if c not in own or c == "flow_id"]
    base = singles.select(keep).rename({"flow_id": "_base"})
    out = m.join(base, on="_base", how="left").drop("_base")
    out = out.with_columns(pl.lit("matched").alias("vantage"),
                           (pl.col("client_capture") + pl.lit(" + ") + pl.col("server_capture")).alias("capture"))
    # Single-capture column order first, then the two-vantage columns.
    first = [c for c in singles.columns if c in out.columns]
    return out.select(first + [c for c in out.columns if c not in first])



def reference_tables(pairs, *, singles=(), single_vantage=None, window_s: float = 30.0) -> dict[str, pl.DataFrame]:
    """The tables (flows, events, rtt, series, captures, pair_stats) of the in-memory path."""
    pairs = [(Path(c), Path(s)) for c, s in pairs]
    # the files in flow-id order, as the streaming path numbers them (the join is what this
    # reference witnesses, not the order)
    files, slots = capture_files(pairs, [Path(p) for p in singles], single_vantage)
    single_r = [analyze_one(p, vantage=v, index=i) for i, (p, v) in enumerate(files)]
    match_r = [match_tables(c, s, index=k, window_s=window_s) for k, (c, s) in enumerate(pairs)]
    tables = {t: [r[t] for r in single_r] for t in TABLES}
    matched_frames, stats = [], []
    paired_server_keys: set[tuple] = set()
    for k, (c, s) in enumerate(pairs):
        m = match_r[k]["matched"]
        paired_server_keys |= set(m.filter(pl.col("pairing").is_in(["isn", "seq_proximity"]))
                                  .select([f"sv_{x}" for x in _SIDE_KEYS]).iter_rows())
    for k, (c, s) in enumerate(pairs):
        m = match_r[k]["matched"]
        if sum(1 for _ in pairs if _[1] == s) > 1:
            # Several phone paths share this server capture: a connection paired in another
            # path's run is not "server only".
            keys = m.select([f"sv_{x}" for x in _SIDE_KEYS]).iter_rows()
            drop = [m["pairing"][i] == "server_only" and key in paired_server_keys
                    for i, key in enumerate(keys)]
            m = m.filter(~pl.Series(drop, dtype=pl.Boolean))
        rows = matched_rows(m, single_r[slots[c]]["flows"], single_r[slots[s]]["flows"])
        matched_frames.append(rows)
        ev = match_r[k]["events"]
        if not ev.is_empty():
            tables["events"].append(ev)
        se = match_r[k]["series"]
        if not se.is_empty():
            tables["series"].append(se)
        st = dict(match_r[k]["stats"], client_capture=shown(c), server_capture=shown(s))
        stats.append(st)
    flows = pl.concat(tables["flows"] + matched_frames, how="diagonal_relaxed")
    out = {t: pl.concat(tables[t], how="diagonal_relaxed") for t in TABLES if t != "flows"}
    return {"flows": flows, **out, "pair_stats": pl.DataFrame(stats)}

