"""One function per table of the seeds (docs/formats/study.md has the schemas).

Every summary table has the same long schema: one row per (``flow_class``, ``--by``
values, ``metric``) with ``n_flows``, ``n``, ``value`` (what ``statistic`` says: a mean
over flows, a pooled mean or a pooled share) with its bootstrap interval, the median with
its interval, and a ``note`` (stats.py). Inputs are the study frame of :mod:`hsrtcp.study`
exploded into class groups (:func:`hsrtcp.study.groups.explode_classes`).

| function | seed | metrics |
|---|---|---|
| :func:`performance` | 000 §V, Figs. 1-4; 003 §IV | M3 pooled 1-s throughput and P(0), per-flow mean; M7 RTT; M8 p_d; M6 per-bin loss when present |
| :func:`spurious_rto` | 000 Tables VII and VIII | M13 spurious RTO rate (mean over flows, A5); A5 event share; M14 RTOEI / ACKL shares over spurious RTOs (A6) |
| :func:`dupack` | 000 Table IX | M15 DupACK rate |
| :func:`handshake` | 000 §VI-C, Figs. 10-11 | M18 establishment, M19 closure |
| :func:`failure` | 000 §VII, Fig. 12 | M20 transmission failure rate by object size (A11) |
| :func:`timeout_recovery` | 001 §III-B | M10 phase duration, M11 q (A17), with p_d beside it |
| :func:`suspensions` | 003 §VI-B, Fig. 11 | M24 suspension per handoff (A12) |
| :func:`handoff_intervals` | 003 §VI-B, Fig. 10 | M23 handoff interval |
| :func:`u_rate` | 000 Tables III-IV | M22 usable share |
| :func:`classes` | 000 §V | flows per class |
| :func:`coverage` | 004 §II-B, Fig. 1 | M28 LTE coverage, per carrier and complementary |
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

from hsrtcp.study import stats
from hsrtcp.study.groups import CLASS_NAMES, USABLE_CLASSES, class_rank, seed_class_groups


@dataclass
class Options:
    """How cells are computed: grouping, the too-few-flows rule, the bootstrap."""

    by: tuple[str, ...] = ()
    min_flows: int = 1
    n_boot: int = 1000
    seed: int = 0
    level: float = stats.LEVEL
    #: fewest flows an interval is computed from (stats.MIN_INTERVAL_FLOWS)
    min_interval: int = stats.MIN_INTERVAL_FLOWS


class Flows:
    """The per-flow rows of a streamed study as a lazy frame over its spooled files, one row
    per flow (``explode``: each flow also counts in its union class and ``all``, as
    :func:`hsrtcp.study.groups.explode_classes` does for the in-memory frame)."""

    def __init__(self, lf: pl.LazyFrame, explode: bool = True) -> None:
        self.lf, self.explode = lf, explode

    def with_columns(self, *exprs, **named) -> Flows:
        """New columns beside the keys (which stay as they are: the class masks are shared)."""
        out = Flows(self.lf.with_columns(*exprs, **named), self.explode)
        if "_groups" in self.__dict__:
            out._groups = self._groups
        return out

    @property
    def schema(self) -> pl.Schema:
        return self.lf.collect_schema()


@dataclass
class Metric:
    """One metric row of a summary table: its name, unit, what ``value`` is, and how a
    group's rows become a :class:`stats.Cell`."""

    name: str
    unit: str
    statistic: str
    cell: Callable[[pl.DataFrame, Options, object], stats.Cell]


def mean_over_flows(column: str, *, median: bool = True) -> Callable:
    def cell(g: pl.DataFrame, o: Options, rng) -> stats.Cell:
        return stats.per_flow(g[column].to_list(), min_flows=o.min_flows, n_boot=o.n_boot, rng=rng,
                              level=o.level, median=median, min_interval=o.min_interval)
    cell.spec = ("per_flow", column, median)  # what the streaming path computes column by column
    return cell


def pooled_samples(column: str, *, median: bool = True) -> Callable:
    def cell(g: pl.DataFrame, o: Options, rng) -> stats.Cell:
        lists = [x if x is not None else [] for x in g[column].to_list()]
        return stats.pooled(lists, min_flows=o.min_flows, n_boot=o.n_boot, rng=rng, level=o.level, median=median,
                            min_interval=o.min_interval)
    cell.spec = ("pooled", column, median)
    return cell


def pooled_share(numerator: str | pl.Expr, denominator: str | pl.Expr) -> Callable:
    def cell(g: pl.DataFrame, o: Options, rng) -> stats.Cell:
        num = g.select(numerator if isinstance(numerator, pl.Expr) else pl.col(numerator)).to_series().to_list()
        den = g.select(denominator if isinstance(denominator, pl.Expr) else pl.col(denominator)).to_series().to_list()
        return stats.ratio(num, den, min_flows=o.min_flows, n_boot=o.n_boot, rng=rng, level=o.level,
                           min_interval=o.min_interval)
    cell.spec = ("ratio", numerator, denominator)
    return cell


SUMMARY_STATS = {"n_flows": pl.Int64, "n": pl.Int64, "value": pl.Float64, "value_lo": pl.Float64,
                 "value_hi": pl.Float64, "median": pl.Float64, "median_lo": pl.Float64,
                 "median_hi": pl.Float64, "note": pl.String}


def summarize(table: str, frame: pl.DataFrame, keys: list[str], metrics: list[Metric], o: Options,
              *, seed_classes: bool = True) -> pl.DataFrame:
    """The summary rows of ``metrics`` for every group of ``keys`` in ``frame``.

    With ``seed_classes`` (and ``flow_class`` first in ``keys``), seed 000's three classes
    get a row for every combination of the other keys even when they have no flow.

    ``frame`` may be the streamed study's :class:`Flows` (one row per flow, not exploded):
    the same rows, computed one metric column at a time (:mod:`hsrtcp.study.columns`)."""
    if isinstance(frame, Flows):
        from hsrtcp.study.columns import summarize_flows

        return summarize_flows(table, frame, keys, metrics, o, seed_classes=seed_classes)
    parts = frame.partition_by(keys, as_dict=True, maintain_order=True) if frame.height else {}
    groups = dict(parts)
    for key in seed_class_groups(frame, keys) if seed_classes else ():
        groups.setdefault(key, frame.clear())
    rows = []
    for key, g in groups.items():
        key = key if isinstance(key, tuple) else (key,)
        for m in metrics:
            rng = stats.rng_for(o.seed, f"{table}|{m.name}|{key!r}")
            cell = m.cell(g, o, rng)
            rows.append({"table": table, **dict(zip(keys, key)), "metric": m.name, "unit": m.unit,
                         "statistic": m.statistic, **cell.as_dict()})
    return summary_frame(rows, {k: frame.schema[k] for k in keys}, keys, metrics)


def summary_frame(rows: list[dict], key_types: dict, keys: list[str], metrics: list[Metric]) -> pl.DataFrame:
    """The summary rows as a table, in table order: class, ``--by`` values, metric."""
    schema = {"table": pl.String, **key_types,
              "metric": pl.String, "unit": pl.String, "statistic": pl.String, **SUMMARY_STATS}
    out = pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)
    order = {m.name: i for i, m in enumerate(metrics)}
    sort_keys = [pl.col(k) for k in keys[1:]] if keys and keys[0] == "flow_class" else [pl.col(k) for k in keys]
    rank = (pl.col("flow_class").map_elements(class_rank, return_dtype=pl.Int64)
            if "flow_class" in keys else pl.lit(0))
    return (out.with_columns(rank.alias("_rank"), pl.col("metric").replace_strict(order, return_dtype=pl.Int64).alias("_m"))
            .sort([pl.col("_rank"), *sort_keys, pl.col("_m")], nulls_last=True).drop("_rank", "_m"))


def _keys(o: Options, *extra: str) -> list[str]:
    return ["flow_class", *o.by, *[e for e in extra if e not in o.by]]


def performance(frame: pl.DataFrame, o: Options) -> pl.DataFrame:
    """M3 (pooled 1-s samples, A3; P(throughput = 0), T0-32/33; per-flow mean), M7, M8, M6."""
    metrics = [
        Metric("throughput_bps", "bit/s", "pooled 1-s samples (A3): mean; median of the samples",
               pooled_samples("tput_samples")),
        Metric("throughput_zero_share", "share", "pooled share of 1-s samples with no byte received (T0-32/33)",
               pooled_share("tput_zero_bins", "tput_bins")),
        Metric("throughput_flow_mean_bps", "bit/s", "mean over flows of the per-flow mean",
               mean_over_flows("throughput_mean_bps")),
        Metric("rtt_mean_s", "s", "mean over flows of the per-flow mean RTT (M7)", mean_over_flows("rtt_mean_s")),
        Metric("p_d", "share", "mean over flows of the data loss rate (M8, two-vantage)", mean_over_flows("p_d")),
        Metric("loss_bin_rate", "share", "pooled 1-s loss samples (M6): mean; median", pooled_samples("loss_samples")),
        Metric("loss_full_share", "share", "pooled share of 1-s loss samples at 100 % (T0-30/31)",
               pooled_share("loss_full_bins", "loss_bins")),
    ]
    return summarize("performance", frame, _keys(o), metrics, o)


def spurious_rto(frame: pl.DataFrame, o: Options) -> pl.DataFrame:
    """Seed 000 Table VII (M13, mean over flows, A5) and Table VIII (M14 shares, A6)."""
    spurious = pl.col("spurious_ackl").cast(pl.Float64) + pl.col("spurious_rtoei").cast(pl.Float64)
    metrics = [
        Metric("spurious_rto_rate", "share", "mean over flows (A5: spurious RTO segments / retransmitted segments)",
               mean_over_flows("spurious_rto_rate")),
        Metric("spurious_timeout_share", "share", "mean over flows (A5 event variant: spurious / all RTO episodes)",
               mean_over_flows("spurious_timeout_share")),
        Metric("spurious_timeout_share_2v", "share",
               "pooled share of timeout sequences found spurious with both captures (M12; S1's 49.24 %)",
               pooled_share(pl.col("spurious_2v").cast(pl.Float64), pl.col("rto_sequences").cast(pl.Float64))),
        Metric("rtoei_share", "share", "pooled share of spurious RTOs caused by RTO estimation (M14, A6)",
               pooled_share(pl.col("spurious_rtoei").cast(pl.Float64), spurious)),
        Metric("ackl_share", "share", "pooled share of spurious RTOs that may be caused by ACK loss (M14, A6)",
               pooled_share(pl.col("spurious_ackl").cast(pl.Float64), spurious)),
    ]
    return summarize("spurious_rto", frame, _keys(o), metrics, o)


def dupack(frame: pl.DataFrame, o: Options) -> pl.DataFrame:
    """Seed 000 Table IX: M15 DupACK rate, mean over flows (A7)."""
    return summarize("dupack", frame, _keys(o), [
        Metric("dupack_rate", "share", "mean over flows (M15: DupACKs / pure ACKs at the server)",
               mean_over_flows("dupack_rate"))], o)


def handshake(frame: pl.DataFrame, o: Options) -> pl.DataFrame:
    """Seed 000 §VI-C: M18 establishment (two-vantage, A9, when paired) and M19 closure (A10)."""
    return summarize("handshake", frame, _keys(o), [
        Metric("establishment_s", "s", "mean over flows (M18)", mean_over_flows("establishment_s")),
        Metric("closure_s", "s", "mean over flows (M19, A10)", mean_over_flows("closure_s")),
    ], o)


def failure(frame: pl.DataFrame, o: Options) -> pl.DataFrame:
    """Seed 000 §VII: M20 transmission failure rate per object size (``workload``)."""
    return summarize("failure", frame, _keys(o, "workload"), [
        Metric("failure_rate", "share", "share of flows failed (M20, A11)",
               mean_over_flows("failed_value", median=False))], o)


def timeout_recovery(frame: pl.DataFrame, o: Options) -> pl.DataFrame:
    """Seed 001: M10 timeout recovery phase duration, M11 q (A17: per flow, mean over
    flows) and p_d beside it (§9 item 7: q >> p_d)."""
    return summarize("timeout_recovery", frame, _keys(o), [
        Metric("timeout_recovery_s", "s", "pooled finished phases (M10): mean; median", pooled_samples("timeout_phases_s")),
        Metric("timeout_recovery_flow_mean_s", "s", "mean over flows of the per-flow mean phase (M10)",
               mean_over_flows("timeout_duration_mean_s")),
        Metric("q", "share", "mean over flows (M11, A17, two-vantage)", mean_over_flows("q")),
        Metric("q_estimate", "share", "mean over flows of the single-capture estimate of q", mean_over_flows("q_estimate")),
        Metric("p_d", "share", "mean over flows (M8, two-vantage)", mean_over_flows("p_d")),
    ], o)


def suspensions(frame: pl.DataFrame, o: Options) -> pl.DataFrame:
    """Seed 003 §VI-B: M24 suspension per (handoff, flow) (A12), with the share over 10 s
    (T3-20) and the share below A12's 200 ms (suspension 0)."""
    sus = pl.col("suspensions_s")
    frame = frame.with_columns(
        sus.list.len().alias("_n_sus"),
        sus.list.eval(pl.element() > 10.0).list.sum().alias("_n_long"),
        sus.list.eval(pl.element() == 0.0).list.sum().alias("_n_zero"),
    )
    return summarize("suspensions", frame, _keys(o), [
        Metric("suspension_s", "s", "pooled suspensions, one per handoff inside a flow (M24): mean; median",
               pooled_samples("suspensions_s")),
        Metric("suspension_gt_10s_share", "share", "pooled share of suspensions > 10 s (T3-20)",
               pooled_share("_n_long", "_n_sus")),
        Metric("suspension_zero_share", "share", "pooled share of handoffs without a suspension (gap < 200 ms, A12)",
               pooled_share("_n_zero", "_n_sus")),
        Metric("suspension_stalled_share", "share", "pooled share of suspensions with data outstanding",
               pooled_share(pl.col("suspensions_stalled").cast(pl.Float64), "_n_sus")),
    ], o)


def u_rate(frame: pl.DataFrame, o: Options) -> pl.DataFrame:
    """Seed 000 Tables III-IV: M22 U-rate = usable (classed) flows / collected flows (A14)."""
    if isinstance(frame, Flows):  # every flow once, in the group 'all'
        one = Flows(frame.lf.with_columns(pl.col("flow_class").alias("fine_class"), pl.lit("all").alias("flow_class")),
                    explode=False)
    else:
        one = frame.filter(pl.col("flow_class") == "all")
    one = one.with_columns(
        pl.col("fine_class").is_in(USABLE_CLASSES).cast(pl.Float64).alias("_usable"))
    return summarize("u_rate", one, _keys(o), [
        Metric("u_rate", "share", "share of flows in a class (M22, A2, A14)", mean_over_flows("_usable", median=False))],
        o, seed_classes=False)


def handoff_intervals(handoffs: pl.DataFrame | None, o: Options) -> pl.DataFrame:
    """Seed 003 Fig. 10: M23 handoff intervals per carrier (and the ``--by`` columns the
    handoffs table has after the labels join), with the share <= 10 s (T3-19). The unit of
    the bootstrap and of ``n_flows`` is a trip: one (result, run, carrier)."""
    keys = list(dict.fromkeys(["carrier", *o.by]))
    if handoffs is None or handoffs.is_empty():
        schema = {"table": pl.String, **{k: pl.String for k in keys}, "metric": pl.String, "unit": pl.String,
                  "statistic": pl.String, **SUMMARY_STATS}
        return pl.DataFrame(schema=schema)
    trip = [c for c in ("result", "run_id", "carrier") if c in handoffs.columns]
    per_trip = (handoffs.group_by([*dict.fromkeys([*keys, *trip])], maintain_order=True)
                .agg(pl.col("interval_s").drop_nulls().alias("_iv"),
                     (pl.col("interval_s") <= 10.0).sum().alias("_le10"),
                     pl.col("interval_s").is_not_null().sum().alias("_n")))
    return summarize("handoff_intervals", per_trip, keys, [
        Metric("handoff_interval_s", "s", "pooled intervals between handoffs of a carrier (M23): mean; median",
               pooled_samples("_iv")),
        Metric("handoff_interval_le_10s_share", "share", "pooled share of intervals <= 10 s (T3-19)",
               pooled_share("_le10", "_n")),
    ], o, seed_classes=False)


def classes(frame: pl.DataFrame, o: Options) -> pl.DataFrame:
    """Flows per class group and ``--by`` values, the share of the ``--by`` group's flows,
    and why flows are unclassed (the most frequent ``class_reason`` values)."""
    keys = _keys(o)
    counted = _keys(o, "class_reason")  # (--by class_reason is a key once)
    if isinstance(frame, Flows):
        from hsrtcp.study.columns import reason_counts

        counts = reason_counts(frame, counted)
    else:
        counts = frame.group_by(counted).agg(pl.len().alias("_n"))
    return _classes(counts, keys, o)


def _classes(counts: pl.DataFrame, keys: list[str], o: Options) -> pl.DataFrame:
    """:func:`classes` from the flows per (class group, ``--by`` values, reason): ``_n``.
    Reasons are listed by count, then by name (a tie has one order whatever the path)."""
    n = pl.col("_n").cast(pl.Int64)
    base = counts.filter(pl.col("flow_class") == "all").group_by(list(o.by) or [pl.lit(1).alias("_all")]).agg(
        n.sum().alias("_total"))
    top = (counts.filter(pl.col("class_reason").is_not_null())
           .sort([n, pl.col("class_reason")], descending=[True, False])
           .group_by(keys, maintain_order=True)
           .agg(pl.format("{} ({})", pl.col("class_reason"), n).head(3).str.join("; ").alias("reasons")))
    per = counts.group_by(keys).agg(n.sum().alias("n_flows")).join(top, on=keys, how="left", nulls_equal=True)
    if o.by:
        per = per.join(base, on=list(o.by), how="left", nulls_equal=True)
    else:
        per = per.with_columns(pl.lit(base["_total"][0] if base.height else 0).alias("_total"))
    out = per.with_columns((pl.col("n_flows") / pl.col("_total")).alias("share"))
    rank = pl.col("flow_class").map_elements(class_rank, return_dtype=pl.Int64)
    name = pl.col("flow_class").replace_strict(CLASS_NAMES, default=None, return_dtype=pl.String)
    return (out.with_columns(rank.alias("_rank"), name.alias("class_name")).sort(["_rank", *o.by], nulls_last=True)
            .select(*keys, "class_name", "n_flows", "share", "reasons"))


def coverage(cov: pl.DataFrame | None) -> pl.DataFrame:
    """Seed 004 §II-B: M28 LTE coverage per results directory, run and carrier ('*' = at
    least one carrier on LTE), plus the pooled rows (``result`` and ``run_id`` null) =
    Σ lte_s / Σ total_s per carrier."""
    schema = {"result": pl.String, "run_id": pl.String, "carrier": pl.String, "lte_s": pl.Float64,
              "total_s": pl.Float64, "lte_coverage": pl.Float64}
    if cov is None or cov.is_empty():
        return pl.DataFrame(schema=schema)
    if "run_id" not in cov.columns:
        cov = cov.with_columns(pl.lit(None, dtype=pl.String).alias("run_id"))
    rows = cov.select([pl.col(c).cast(t) for c, t in schema.items()])
    pooled = rows.group_by("carrier", maintain_order=True).agg(pl.col("lte_s").sum(), pl.col("total_s").sum()).with_columns(
        pl.lit(None, dtype=pl.String).alias("result"), pl.lit(None, dtype=pl.String).alias("run_id"),
        pl.when(pl.col("total_s") > 0).then(pl.col("lte_s") / pl.col("total_s")).alias("lte_coverage"))
    return pl.concat([rows, pooled.select(schema.keys())])
