"""Hand-made results directories for the study tests.

Each helper writes tables that follow docs/formats/ (flows, series, events) and the
context tables of docs/formats/ (context, labels, handoffs, suspensions,
coverage) with only the columns the study reads, so every expected number in the tests
can be worked out by hand from the rows given here.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

# every column load.REQUIRED_COLUMNS["flows"] asks for, null unless a row sets it
FLOW_DEFAULTS = {
    "flow_id": None, "capture": "x.pcap", "vantage": "server", "data_dir": "s2c", "first_ts": 0.0,
    "last_ts": 10.0, "duration_s": 10.0, "rtt_mean": None, "spurious_rto_rate": None, "dupack_rate": None,
    "establishment_s": None, "closure_s": None, "interrupted": False, "goodput_bytes": None,
    "timeout_duration_mean": None, "timeout_sequences": 0, "capture_near": None,
    "client_flow_id": None, "server_flow_id": None, "p_d": None, "q": None, "q_estimate": None,
    "spurious_timeout_share": None, "spurious_timeouts_ack_loss": None,
    "spurious_timeouts_rto_estimation": None, "establishment_time_s": None,
    "spurious_timeouts_2v": None, "rto_sequences": None,
}
FLOW_TYPES = {"flow_id": pl.UInt64, "client_flow_id": pl.UInt64, "server_flow_id": pl.UInt64,
              "goodput_bytes": pl.UInt64, "timeout_sequences": pl.UInt64, "interrupted": pl.Boolean,
              "spurious_timeouts_ack_loss": pl.UInt64, "spurious_timeouts_rto_estimation": pl.UInt64,
              "spurious_timeouts_2v": pl.UInt64, "rto_sequences": pl.UInt64,
              "capture": pl.String, "vantage": pl.String, "data_dir": pl.String, "capture_near": pl.String}


def flows(rows: list[dict]) -> pl.DataFrame:
    full = [{**FLOW_DEFAULTS, **r} for r in rows]
    schema = {k: FLOW_TYPES.get(k, pl.Float64) for k in FLOW_DEFAULTS}
    return pl.DataFrame(full, schema=schema, orient="row")


def series(rows: list[tuple]) -> pl.DataFrame:
    """rows: (flow_id, bin, bytes) or (flow_id, bin, bytes, bin_s)."""
    with_bin_s = any(len(r) == 4 for r in rows)
    data = {"flow_id": [r[0] for r in rows], "bin": [r[1] for r in rows], "t_rel": [float(r[1]) for r in rows],
            "bytes": [r[2] for r in rows]}
    schema = {"flow_id": pl.UInt64, "bin": pl.UInt64, "t_rel": pl.Float64, "bytes": pl.UInt64}
    if with_bin_s:
        data["bin_s"] = [r[3] if len(r) == 4 else 1.0 for r in rows]
        schema["bin_s"] = pl.Float64
    return pl.DataFrame(data, schema=schema)


def events(rows: list[dict]) -> pl.DataFrame:
    schema = {"flow_id": pl.UInt64, "kind": pl.String, "class": pl.String, "ts": pl.Float64,
              "duration_s": pl.Float64}
    return pl.DataFrame([{k: r.get(k) for k in schema} for r in rows], schema=schema, orient="row")


def context(rows: list[dict]) -> pl.DataFrame:
    schema = {"flow_id": pl.UInt64, "run_id": pl.String, "carrier": pl.String, "handoffs": pl.UInt32,
              "flow_class": pl.String, "class_reason": pl.String}
    return pl.DataFrame([{k: r.get(k) for k in schema} for r in rows], schema=schema, orient="row")


def write(d: Path, **tables: pl.DataFrame | None) -> Path:
    """Write the given tables as <name>.parquet in d; flows/series/events default to empty."""
    d.mkdir(parents=True, exist_ok=True)
    tables.setdefault("series", series([]))
    tables.setdefault("events", events([]))
    for name, df in tables.items():
        if df is not None:
            df.write_parquet(d / f"{name}.parquet")
    return d
