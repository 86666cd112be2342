"""Empirical CDFs of a metric per class (seed 000 Figs. 1–3, 7, 10, 11, 13).

Two kinds of input:

- a study directory made by ``hsrtcp study`` (docs/formats/study.md): by default the 1-s
  throughput samples (``throughput_samples.throughput_bps``, M3/A3) per ``flow_class``, with
  seed 000's ``high_1_16`` group (= ``high_1_8`` ∪ ``high_9_16``) added; any numeric column of
  ``study_flows`` or ``throughput_samples`` with ``--table``/``--metric``;
- a results directory of ``hsrtcp analyze``: any numeric column of any table (default: the
  1-s throughput of ``series``, bytes × 8 per bin), grouped by any column of that table or,
  joined on ``flow_id``, of ``context`` (default ``flow_class`` when present) or ``flows``
  (default ``vantage``).

Curves of more than a few thousand values are drawn through their quantiles (2,000 levels),
not one step per value.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from hsrtcp.errors import InputError
from hsrtcp.plot.binning import MAX_POINTS
from hsrtcp.plot.style import CYCLE, new_figure, plain_formatter, scale_for, styled
from hsrtcp.plot.tables import Results, row_key
from hsrtcp.schemas import class_rank

LINESTYLES = ["-", "--", "-.", ":"]
SECONDS = {"rtt_min", "rtt_mean", "rtt_median", "rtt_max", "rtt_std", "rtt_ts_mean", "rtt_handshake", "rtt_s",
           "timeout_duration_mean", "timeout_duration_max", "rto_first_mean", "zero_window_duration",
           "suspension_total", "suspension_max", "t_rel", "ts"}
FRACTIONS = ("rate", "share", "fraction", "p_d", "p_a", "q", "q_estimate", "ack_burst_loss", "lte_coverage")


def is_study(res: Results) -> bool:
    return res.has("throughput_samples") or res.has("study_flows")


def unit_of(metric: str, values: np.ndarray) -> tuple[float, str]:
    """Divisor and unit for the x axis, from the column's name (docs/design.md conventions:
    seconds, bytes, bit/s, fractions shown in %)."""
    peak = float(np.nanmax(np.abs(values))) if values.size else 0.0
    if metric.endswith("_bps") or metric in ("bytes_per_s",):
        return scale_for(peak, "bit/s")
    if metric.endswith("_pkts"):
        return 1.0, "packets/s"
    if metric in SECONDS or metric.endswith("_s"):
        return (1e-3, "ms") if peak < 1.0 else (1.0, "s")
    if metric.endswith("bytes") or metric.startswith(("bif_", "awnd_")):
        return scale_for(peak, "B")
    if metric.endswith(FRACTIONS) or metric in FRACTIONS:
        return 0.01, "%"  # shares in percent (hsrtcp.units)
    if metric.endswith(("_kmh",)):
        return 1.0, "km/h"
    return 1.0, "count" if metric in ("retransmissions", "dupacks", "handoffs", "timeouts") else "as stored"


def samples(res: Results, table: str | None, metric: str | None, by: str | None) -> tuple[pl.DataFrame, str, str]:
    """Rows of (group, value) for the CDFs, and the metric's and grouping's names."""
    study = is_study(res)
    if study:
        table = table or ("throughput_samples" if metric in (None, "throughput_bps") else "study_flows")
        metric = metric or "throughput_bps"
        by = by or "flow_class"
    else:
        table = table or "series"
        metric = metric or ("throughput_bps" if table == "series" else None)
        if metric is None:
            raise InputError(f"--metric is needed with --table {table} (a numeric column of {res.file(table)})")
    schema = res.schema(table)
    if metric == "throughput_bps" and metric not in schema and table == "series":
        df = res.read("series", ["flow_id", "bytes"], optional=["bin_s"])
        from hsrtcp.schemas import SERIES_BIN_S

        bin_s = pl.col("bin_s").fill_null(SERIES_BIN_S) if "bin_s" in df.columns else pl.lit(SERIES_BIN_S)
        df = df.with_columns(throughput_bps=pl.col("bytes").cast(pl.Float64) * 8 / bin_s)
    else:
        if metric not in schema:
            raise InputError(f"{res.file(table)}: no column {metric!r} (columns: {', '.join(schema.names())})")
        if not schema[metric].is_numeric():
            raise InputError(f"{res.file(table)}: column {metric!r} is {schema[metric]}, not a number")
        df = res.read(table, [c for c in dict.fromkeys(["flow_id", metric]) if c in schema])
    if by is None:
        by = "flow_class" if res.has("context") else "vantage"
    if by in schema:
        if by not in df.columns:
            df = df.with_columns(res.read(table, [by])[by])
    else:
        df = _join_by(res, df, table, by)
    out = df.select(group=pl.col(by).cast(pl.Utf8).fill_null("(null)"), value=pl.col(metric).cast(pl.Float64))
    out = out.filter(pl.col("value").is_finite())
    if study and by == "flow_class":
        both = out.filter(pl.col("group").is_in(["high_1_8", "high_9_16"])).with_columns(group=pl.lit("high_1_16"))
        out = pl.concat([out, both])
    return out, metric, by


def _join_by(res: Results, df: pl.DataFrame, table: str, by: str) -> pl.DataFrame:
    if "flow_id" not in df.columns:
        raise InputError(f"{res.file(table)}: no column {by!r} and no flow_id to find it elsewhere")
    for other in ("context", "flows"):
        if res.has(other) and by in res.schema(other) and other != table:
            other_rows = res.read(other, ["flow_id", by])
            return df.join(other_rows, on=row_key(other_rows), how="left")
    raise InputError(f"no column {by!r} to group by in {res.file(table)}, context.parquet or flows.parquet")


def metric_label(metric: str) -> str:
    """"throughput_bps" -> "throughput", "rtt_mean_s" -> "rtt mean": the unit goes in brackets."""
    for suffix in ("_bps", "_s", "_pkts", "_bytes", "_kmh"):
        if metric.endswith(suffix) and len(metric) > len(suffix):
            metric = metric[: -len(suffix)]
            break
    return metric.replace("_", " ")


def _order(groups: list[str]) -> list[str]:
    return sorted(groups, key=lambda g: (class_rank(g), g))


@styled
def draw(res: Results, flow_id: int | None = None, table: str | None = None, metric: str | None = None,
         by: str | None = None, logx: bool = False):
    if flow_id is not None:
        raise InputError("--flow does not apply to cdf (a CDF is over flows or samples)")
    df, metric, by = samples(res, table, metric, by)
    if df.is_empty():
        raise InputError(f"{res.path}: no finite values of {metric!r} (nothing to draw)")
    div, unit = unit_of(metric, df["value"].to_numpy())
    noun = "bins" if metric == "throughput_bps" and (is_study(res) or (table or "series") == "series") else "values"
    fig, ax = new_figure()
    for i, g in enumerate(_order(df["group"].unique().to_list())):
        v = np.sort(df.filter(pl.col("group") == g)["value"].to_numpy()) / div
        p = np.arange(1, len(v) + 1) / len(v)
        if len(v) > MAX_POINTS:
            p = np.linspace(0, 1, 2001)[1:]
            v = np.quantile(v, p, method="inverted_cdf")
        ax.step(np.r_[v[0], v], np.r_[0.0, p], where="post", color=CYCLE[i % len(CYCLE)],
                linestyle=LINESTYLES[(i // 2) % len(LINESTYLES)], label=f"{g} (n = {len(df.filter(pl.col('group') == g)):,} {noun})",
                gid=f"cdf-{g}")
    if logx:
        ax.set_xscale("symlog" if (df["value"] <= 0).any() else "log")
    ax.set_xlabel(f"{metric_label(metric)} ({unit})" + (" per 1-s bin" if noun == "bins" else ""))
    ax.set_ylabel("CDF (% of values ≤ x)")
    ax.yaxis.set_major_formatter(plain_formatter(scale=100.0))
    ax.set_ylim(0, 1.02)
    ax.set_title(f"per {by}", loc="left")
    ax.legend(loc="lower right")
    return fig
