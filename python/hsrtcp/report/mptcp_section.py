"""The report's MPTCP tables when the results directory holds them.

- ``mptcp.parquet`` / ``mptcp_subflows.parquet``: the core's per-connection tables
  (docs/formats/mptcp.md), one row per MPTCP connection / subflow;
- ``mptcp_instances.parquet`` / ``mptcp_paths.parquet``: seed 004's instance metrics written
  by ``hsrtcp mptcp ... -o RESULTS`` (docs/formats/mptcp-metrics.md): U_c, U_t, class,
  subflow utilization and degradation.

Returns an empty string when none is present or the connection table is empty (the caller then
shows its subflow list).
"""

from __future__ import annotations

import html
from pathlib import Path

import polars as pl

from hsrtcp.results import read_table

_CONNECTION_COLS = ("capture", "vantage", "connection_id", "token", "version", "subflows", "data_bytes_down",
                    "data_bytes_up", "reinjections", "reinjected_bytes", "data_retransmissions", "fallback", "ended")
_SUBFLOW_COLS = ("connection_id", "token", "subflow", "flow_id", "address_id", "join_ts", "backup",
                 "data_bytes_down", "share_down", "reinjected_bytes_down")
_INSTANCE_COLS = ("instance", "cc", "repetition", "carriers", "subflows", "rate_mptcp_bps",
                  "rate_single_path_max_bps", "u_c", "u_t", "instance_class", "degraded_subflows",
                  "first_degradation_s", "kernel_mp_join_syn_rx", "kernel_mptcp_retrans")
_PATH_COLS = ("instance", "path", "subflow", "client_addr", "rate_subflow_bps", "rate_single_path_bps",
              "subflow_utilization", "degraded", "degradation_onset_s", "k_t_subflow_mean", "k_t_single_path_mean")


def _pick(df: pl.DataFrame, cols) -> pl.DataFrame:
    return df.select([c for c in cols if c in df.columns])


def mptcp_section(root: Path, html_table) -> str:
    parts = []
    conn = root / "mptcp.parquet"
    # every analysis writes the table, empty without MPTCP: then the caller's note says so
    c = read_table(conn) if conn.is_file() else None
    if c is not None and c.height:
        parts.append(f"<h3>MPTCP connections (mptcp.parquet)</h3><p>{c.height} MPTCP connection(s), "
                     "data level (DSN) bytes and reinjections per connection.</p>" + html_table(_pick(c, _CONNECTION_COLS)))
        sub = root / "mptcp_subflows.parquet"
        if sub.is_file():
            parts.append("<h3>Subflows (mptcp_subflows.parquet)</h3>"
                         + html_table(_pick(read_table(sub), _SUBFLOW_COLS)))
    inst = root / "mptcp_instances.parquet"
    if inst.is_file():
        i = read_table(inst, require=["u_c"])
        known = i.filter(pl.col("u_c").is_not_null())
        med = known["u_c"].median() if known.height else None
        share = (known.filter(pl.col("u_c") > 1).height / known.height * 100) if known.height else None
        parts.append(
            "<h3>Seed 004 instance metrics (mptcp_instances.parquet)</h3>"
            f"<p>{i.height} instance(s); median U_c {html.escape('–' if med is None else f'{med:.2f}')}, "
            f"P(U_c &gt; 1) {html.escape('–' if share is None else f'{share:.0f} %')} (seed 004 at high speed: "
            "median ≈ 1.0, P ≈ 51 % for two carriers; docs/mptcp.md). U_c = Σ R'_n / max R_n (M29), "
            "U_t = Σ R'_n / Σ R_n (M30), class by M31.</p>" + html_table(_pick(i, _INSTANCE_COLS)))
        paths = root / "mptcp_paths.parquet"
        if paths.is_file():
            parts.append("<h3>Per carrier (mptcp_paths.parquet)</h3><p>R'_n / R_n is M32; degradation by A25.</p>"
                         + html_table(_pick(read_table(paths), _PATH_COLS)))
    return "".join(parts)
