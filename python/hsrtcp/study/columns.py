"""The summary rows of a streamed study, one metric column at a time.

:func:`hsrtcp.study.tables.summarize` groups the in-memory frame (one row per flow and class
group) and hands each group's values to :mod:`hsrtcp.study.stats` as Python lists. At field
scale (10^7 flows) neither that frame (every column, each flow two or three times) nor those
lists fit: here the per-flow rows stay in their spooled files, each metric's column is read
alone as a numpy array (a list column as its flat values and per-flow lengths) and each class
group is a mask over it. The rows are the same, bit for bit (tests/python/study/test_scale.py):

- a cell with a bootstrap interval is computed by the same :mod:`.stats` function on the
  same values in the same order (the group's flows in (result, flow_id) order);
- without an interval (``--bootstrap 0``) the cell is the mean and median numpy computes on
  the same array :mod:`.stats` would build (its Python loop over every value is what costs
  minutes at 10^7 flows), with the same too-few-flows note (:func:`stats.too_few`).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from hsrtcp.study import stats
from hsrtcp.study.groups import SEED_CLASSES


def _groups(flows, keys: list[str], seed_classes: bool) -> tuple[dict[tuple, np.ndarray], pl.DataFrame, int]:
    """Every class group of ``keys`` as a mask over the flows (the groups
    :func:`hsrtcp.study.groups.explode_classes` then ``partition_by`` would give); kept on
    ``flows`` for the next table with the same keys."""
    cache = flows.__dict__.setdefault("_groups", {})
    ck = (tuple(keys), seed_classes)
    if ck not in cache:
        cache.clear()  # one set of masks at a time (a bool per flow and group)
        cache[ck] = _make_groups(flows, keys, seed_classes)
    return cache[ck]


def _make_groups(flows, keys: list[str], seed_classes: bool) -> tuple[dict[tuple, np.ndarray], pl.DataFrame, int]:
    kdf = flows.lf.select(keys).collect()
    n = kdf.height
    uniq = kdf.unique(maintain_order=True)
    codes = (kdf.join(uniq.with_row_index("_g"), on=keys, how="left", nulls_equal=True, maintain_order="left")
             ["_g"].to_numpy())
    del kdf
    members: dict[tuple, list[int]] = {}
    for g, row in enumerate(uniq.rows()):
        fine, rest = row[0], row[1:]
        targets = [fine]
        if flows.explode:
            targets += (["high_1_16"] if fine in ("high_1_8", "high_9_16") else []) + ["all"]
        for t in targets:
            members.setdefault((t, *rest), []).append(g)
    if seed_classes and keys and keys[0] == "flow_class":
        rest = uniq.select(keys[1:]).unique(maintain_order=True).rows() if len(keys) > 1 else [()]
        if not rest:
            rest = [(None,) * (len(keys) - 1)]
        for combo in rest:
            for cls in SEED_CLASSES:
                members.setdefault((cls, *combo), [])
    masks = {k: (np.isin(codes, g) if g else np.zeros(n, dtype=bool)) for k, g in members.items()}
    return masks, uniq, n


def _floats(lf: pl.LazyFrame, expr: pl.Expr) -> pl.Series:
    return lf.select(expr.cast(pl.Float64).alias("v")).collect().to_series()


def _per_flow(values: np.ndarray, mask: np.ndarray, o, rng, median: bool) -> stats.Cell:
    v = values[mask]
    if o.n_boot > 0:
        return stats.per_flow(v.tolist(), min_flows=o.min_flows, n_boot=o.n_boot, rng=rng, level=o.level,
                              median=median, min_interval=o.min_interval)
    x = v[np.isfinite(v)]
    n = int(x.size)
    cell = stats.Cell(n_flows=n, n=n, note=stats.too_few(n, o.min_flows, int(v.size)))
    if cell.note is None:
        cell.value = float(x.mean())
        if median:
            cell.median = float(np.median(x))
    return cell


def _pooled(flat: np.ndarray, lengths: np.ndarray, starts: np.ndarray, mask: np.ndarray, o, rng,
            median: bool) -> stats.Cell:
    if o.n_boot > 0:
        lists = [flat[starts[i]:starts[i] + lengths[i]].tolist() for i in np.flatnonzero(mask)]
        return stats.pooled(lists, min_flows=o.min_flows, n_boot=o.n_boot, rng=rng, level=o.level, median=median,
                            min_interval=o.min_interval)
    allx = flat[np.repeat(mask, lengths)]
    k = int(np.count_nonzero(mask & (lengths > 0)))
    cell = stats.Cell(n_flows=k, n=int(allx.size), note=stats.too_few(k, o.min_flows, int(np.count_nonzero(mask))))
    if cell.note is None:
        cell.value = float(allx.mean())
        if median:
            cell.median = float(np.median(allx))
    return cell


def _ratio(num: pl.Series, den: pl.Series, valid: np.ndarray, mask: np.ndarray, o, rng) -> stats.Cell:
    if o.n_boot > 0:
        return stats.ratio(num.filter(mask).to_list(), den.filter(mask).to_list(), min_flows=o.min_flows,
                           n_boot=o.n_boot, rng=rng, level=o.level, min_interval=o.min_interval)
    m = mask & valid
    a = num.to_numpy()[m]
    b = den.to_numpy()[m]
    k = int(a.size)
    cell = stats.Cell(n_flows=k, n=int(b.sum()), note=stats.too_few(k, o.min_flows, int(np.count_nonzero(mask))))
    if cell.note is None:
        cell.value = float(a.sum() / b.sum())
    return cell


def _expr(e) -> pl.Expr:
    return e if isinstance(e, pl.Expr) else pl.col(e)


def summarize_flows(table: str, flows, keys: list[str], metrics: list, o, *, seed_classes: bool = True
                    ) -> pl.DataFrame:
    """:func:`hsrtcp.study.tables.summarize` for a streamed study's :class:`~hsrtcp.study.tables.Flows`."""
    from hsrtcp.study.tables import summary_frame

    masks, _uniq, _n = _groups(flows, keys, seed_classes)
    lf = flows.lf
    cells: dict[tuple, dict[str, stats.Cell]] = {k: {} for k in masks}
    for m in metrics:
        kind, a, b = m.cell.spec
        if kind == "per_flow":
            values = _floats(lf, _expr(a)).to_numpy()
            for key, mask in masks.items():
                cells[key][m.name] = _per_flow(values, mask, o, _rng(o, table, m, key), b)
        elif kind == "pooled":
            kept = pl.element().filter(pl.element().is_not_null() & pl.element().cast(pl.Float64).is_finite())
            s = lf.select(pl.col(a).list.eval(kept.cast(pl.Float64)).alias("v")).collect().to_series()
            lengths = s.list.len().fill_null(0).to_numpy().astype(np.int64)
            flat = s.explode().drop_nulls().to_numpy()
            starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]) if lengths.size else lengths
            del s
            for key, mask in masks.items():
                cells[key][m.name] = _pooled(flat, lengths, starts, mask, o, _rng(o, table, m, key), b)
        else:  # ratio: a / b, flows with both present and b > 0
            both = lf.select(_expr(a).cast(pl.Float64).alias("a"), _expr(b).cast(pl.Float64).alias("b")).collect()
            num, den = both["a"], both["b"]
            valid = (num.is_not_null() & den.is_not_null() & (den > 0)).fill_null(False).to_numpy()
            for key, mask in masks.items():
                cells[key][m.name] = _ratio(num, den, valid, mask, o, _rng(o, table, m, key))
    rows = [{"table": table, **dict(zip(keys, key)), "metric": m.name, "unit": m.unit, "statistic": m.statistic,
             **cells[key][m.name].as_dict()} for key in masks for m in metrics]
    schema = flows.schema
    return summary_frame(rows, {k: schema[k] for k in keys}, keys, metrics)


def _rng(o, table: str, m, key: tuple):
    # the in-memory path's generator for this cell (drawn from only when there is an interval)
    return stats.rng_for(o.seed, f"{table}|{m.name}|{key!r}") if o.n_boot > 0 else None


def exploded_reasons(flows, keys: list[str]) -> pl.DataFrame:
    """The keys and ``class_reason`` of every flow in each of its class groups: what
    :func:`hsrtcp.study.tables.classes` counts (four narrow columns, not the study frame)."""
    df = flows.lf.select(*keys, "class_reason").collect()
    fine = pl.col("flow_class")
    # each flow in its class, in high_1_16 for 1-16 handoffs, and in all (explode_classes
    # without its list column: the counts are the same, the rows in another order)
    return pl.concat([df, df.filter(fine.is_in(["high_1_8", "high_9_16"])).with_columns(pl.lit("high_1_16").alias("flow_class")),
                      df.with_columns(pl.lit("all").alias("flow_class"))])
