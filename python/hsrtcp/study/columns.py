"""The summary rows of a streamed study, one metric column at a time.

:func:`hsrtcp.study.tables.summarize` groups the in-memory frame (one row per flow and class
group) and hands each group's values to :mod:`hsrtcp.study.stats` as Python lists. At field
scale (10^7 flows) neither that frame (every column, each flow two or three times) nor those
lists fit: here the per-flow rows stay in their spooled files, each metric's column is read
alone as a numpy array (a list column as its flat values and per-flow lengths) and each class
group is a mask over it. The rows are the same, bit for bit (tests/python/study/test_scale.py):

- a cell with a bootstrap interval is computed by the same :mod:`.stats` code on the same
  values in the same order (the group's flows in (result, flow_id) order), handed over as
  arrays (``per_flow_array``, ``pooled_arrays``, ``ratio_arrays``) instead of Python lists;
- without an interval (``--bootstrap 0``) the cell is the mean and median numpy computes on
  the same array :mod:`.stats` would build (its Python loop over every value is what costs
  minutes at 10^7 flows), with the same too-few-flows note (:func:`stats.too_few`).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from hsrtcp.study import stats
from hsrtcp.study.groups import seed_class_groups


def _groups(flows, keys: list[str], seed_classes: bool) -> tuple[dict[tuple, np.ndarray], pl.DataFrame, int]:
    """Every class group of ``keys`` as a mask over the flows (the groups
    :func:`hsrtcp.study.groups.explode_classes` then ``partition_by`` would give); kept on
    ``flows`` for the next table with the same keys."""
    cache = flows.__dict__.setdefault("_groups", {})
    ck = (tuple(keys), seed_classes)
    if ck not in cache:
        if len(cache) >= 2:  # two sets of masks at most (a bool per flow and group): the tables
            cache.pop(next(iter(cache)))  # go per class, per class and workload, per class again
        cache[ck] = _make_groups(flows, keys, seed_classes)
    return cache[ck]


def _make_groups(flows, keys: list[str], seed_classes: bool) -> tuple[dict[tuple, np.ndarray], pl.DataFrame, int]:
    codes, uniq = _group_codes(flows.lf, keys)
    n = int(codes.size)
    members: dict[tuple, list[int]] = {}
    for g, row in enumerate(uniq.rows()):
        fine, rest = row[0], row[1:]
        targets = [fine]
        if flows.explode:
            targets += (["high_1_16"] if fine in ("high_1_8", "high_9_16") else []) + ["all"]
        for t in targets:
            members.setdefault((t, *rest), []).append(g)
    for key in seed_class_groups(uniq, keys) if seed_classes else ():
        members.setdefault(key, [])
    masks = {}
    for k, g in members.items():
        lut = np.zeros(len(uniq) + 1, dtype=bool)
        lut[g] = True
        masks[k] = lut[codes]
    return masks, uniq, n


def _group_codes(lf: pl.LazyFrame, keys: list[str]) -> tuple[np.ndarray, pl.DataFrame]:
    """Each flow's group of ``keys`` (an index into the distinct key rows, in the order they
    first occur: ``unique(maintain_order=True)``) and those rows. Text keys are read as
    categorical codes, 4 bytes a flow: at 10^7 flows the key strings themselves, joined back
    to their distinct rows, took 1.3 GB."""
    schema = lf.collect_schema()
    text = [k for k in keys if schema[k] == pl.String]
    kdf = lf.select([pl.col(k).cast(pl.Categorical) if k in text else pl.col(k) for k in keys]).collect(
        engine="streaming")
    gid = np.zeros(kdf.height, dtype=np.int64)
    for k in keys:
        col = kdf[k].to_physical() if k in text else kdf[k].rank("dense")
        c = col.fill_null(0 if k not in text else int(col.max() or 0) + 1).to_numpy().astype(np.int64)
        radix = int(c.max(initial=0)) + 1
        if int(gid.max(initial=0)) >= (1 << 62) // radix:  # keep the combined id in 64 bits
            gid = pl.Series(gid).rank("dense").to_numpy().astype(np.int64)
        gid = gid * radix + c
    g = pl.Series(gid)
    first = g.arg_unique()  # first row of each group, in the order the groups occur
    codes = g.replace_strict(g.gather(first), pl.int_range(first.len(), eager=True), return_dtype=pl.Int64).to_numpy()
    uniq = kdf[first].with_columns([pl.col(k).cast(pl.String) for k in text])
    return codes, uniq


def _floats(lf: pl.LazyFrame, expr: pl.Expr) -> pl.Series:
    return lf.select(expr.cast(pl.Float64).alias("v")).collect().to_series()


def _per_flow(values: np.ndarray, mask: np.ndarray, o, rng, median: bool,
              finite: np.ndarray | None = None) -> stats.Cell:
    ok = mask & (np.isfinite(values) if finite is None else finite)
    if o.n_boot > 0:
        # the array stats.per_flow builds from the group's values (not null, finite, in order),
        # without a Python list of every flow (10^7 floats: seconds and 300 MB a cell)
        return stats.per_flow_array(values[ok], int(np.count_nonzero(mask)), min_flows=o.min_flows, n_boot=o.n_boot,
                                    rng=rng, level=o.level, median=median, min_interval=o.min_interval)
    x = values[ok]
    return _without_interval(x, int(x.size), int(np.count_nonzero(mask)), o, median)


def _pooled(flat: np.ndarray, lengths: np.ndarray, starts: np.ndarray, mask: np.ndarray, o, rng,
            median: bool) -> stats.Cell:
    if o.n_boot > 0:
        # the flows with samples only (a list per flow of the group, most of them empty for
        # the suspensions, took gigabytes at 10^7 flows); the others count in ``offered``
        kept = mask & (lengths > 0)
        return stats.pooled_arrays(flat[np.repeat(kept, lengths)], lengths[kept].astype(np.int64),
                                   int(np.count_nonzero(mask)), min_flows=o.min_flows, n_boot=o.n_boot, rng=rng,
                                   level=o.level, median=median, min_interval=o.min_interval)
    allx = flat[np.repeat(mask, lengths)]
    k = int(np.count_nonzero(mask & (lengths > 0)))
    return _without_interval(allx, k, int(np.count_nonzero(mask)), o, median)


def _without_interval(x: np.ndarray, k: int, offered: int, o, median: bool) -> stats.Cell:
    """A cell without an interval: the mean and median of ``x`` (the group's values, its own
    copy; ``k`` flows of ``offered`` have them), or the too-few-flows note."""
    cell = stats.Cell(n_flows=k, n=int(x.size), note=stats.too_few(k, o.min_flows, offered))
    if cell.note is None:
        cell.value = float(x.mean())  # before the median, which reorders x
        if median:
            cell.median = float(np.median(x, overwrite_input=True))
    return cell


def _ratio(num: pl.Series, den: pl.Series, valid: np.ndarray, mask: np.ndarray, o, rng,
           arrays: tuple[np.ndarray, np.ndarray] | None = None) -> stats.Cell:
    an, bn = arrays if arrays is not None else (num.to_numpy(), den.to_numpy())
    if o.n_boot > 0:
        # stats.ratio's pairs (both present, denominator > 0: a NaN one is not) as arrays
        with np.errstate(invalid="ignore"):
            m = mask & valid & (bn > 0)
        return stats.ratio_arrays(an[m], bn[m], int(np.count_nonzero(mask)), min_flows=o.min_flows,
                                  n_boot=o.n_boot, rng=rng, level=o.level, min_interval=o.min_interval)
    m = mask & valid
    a = an[m]
    b = bn[m]
    k = int(a.size)
    cell = stats.Cell(n_flows=k, n=int(b.sum()), note=stats.too_few(k, o.min_flows, int(np.count_nonzero(mask))))
    if cell.note is None:
        cell.value = float(a.sum() / b.sum())
    return cell


def _flat_lists(lf: pl.LazyFrame, column: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A list column as the flat values :func:`stats.pooled` keeps (not null, finite, as
    floats, in row order), each row's count of them and where its values start. From the
    Arrow offsets (a ``list.eval`` over 10^7 lists took seconds per metric)."""
    import pyarrow as pa

    arr = lf.select(pl.col(column)).collect(engine="streaming").to_series().rechunk().to_arrow()
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.chunk(0) if arr.num_chunks == 1 else arr.combine_chunks()
    n = len(arr)
    offsets = arr.offsets.to_numpy()
    lo, hi = int(offsets[0]), int(offsets[n])
    values = arr.values.slice(lo, hi - lo).to_numpy(zero_copy_only=False).astype(np.float64, copy=False)  # nulls: NaN
    valid = arr.is_valid().to_numpy(zero_copy_only=False)
    del arr
    # kept: not null, finite, and of a row that is not null (a null row may still span values)
    kept = np.isfinite(values)
    kept &= np.repeat(valid, np.diff(offsets))
    flat = values[kept]
    del values
    cs = np.zeros(kept.size + 1, dtype=np.int64)
    np.cumsum(kept, out=cs[1:])
    before = cs[offsets - lo]  # kept values before each row
    del cs
    lengths = np.diff(before)
    starts = before[:-1]
    return flat, lengths, starts


def _expr(e) -> pl.Expr:
    return e if isinstance(e, pl.Expr) else pl.col(e)


def summarize_flows(table: str, flows, keys: list[str], metrics: list, o, *, seed_classes: bool = True
                    ) -> pl.DataFrame:
    """:func:`hsrtcp.study.tables.summarize` for a streamed study's :class:`~hsrtcp.study.tables.Flows`."""
    from hsrtcp.study.tables import summary_frame

    masks, _uniq, _n = _groups(flows, keys, seed_classes)
    cells: dict[tuple, dict[str, stats.Cell]] = {k: {} for k in masks}
    for m in metrics:
        # one metric's columns at a time: they are freed before the next is read
        for key, cell in _metric_cells(table, flows.lf, m, masks, o).items():
            cells[key][m.name] = cell
    rows = [{"table": table, **dict(zip(keys, key)), "metric": m.name, "unit": m.unit, "statistic": m.statistic,
             **cells[key][m.name].as_dict()} for key in masks for m in metrics]
    schema = flows.schema
    return summary_frame(rows, {k: schema[k] for k in keys}, keys, metrics)


def _metric_cells(table: str, lf: pl.LazyFrame, m, masks: dict[tuple, np.ndarray], o) -> dict[tuple, stats.Cell]:
    kind, a, b = m.cell.spec
    if kind == "per_flow":
        values = _floats(lf, _expr(a)).to_numpy()
        finite = np.isfinite(values)
        return {key: _per_flow(values, mask, o, _rng(o, table, m, key), b, finite) for key, mask in masks.items()}
    if kind == "pooled":
        flat, lengths, starts = _flat_lists(lf, a)
        return {key: _pooled(flat, lengths, starts, mask, o, _rng(o, table, m, key), b) for key, mask in masks.items()}
    # ratio: a / b, flows with both present and b > 0
    both = lf.select(_expr(a).cast(pl.Float64).alias("a"), _expr(b).cast(pl.Float64).alias("b")).collect()
    num, den = both["a"], both["b"]
    valid = (num.is_not_null() & den.is_not_null() & (den > 0)).fill_null(False).to_numpy()
    arrays = (num.to_numpy(), den.to_numpy())
    del both, num, den  # the arrays are all a cell reads
    num = den = None
    return {key: _ratio(num, den, valid, mask, o, _rng(o, table, m, key), arrays) for key, mask in masks.items()}


def _rng(o, table: str, m, key: tuple):
    # the in-memory path's generator for this cell (drawn from only when there is an interval)
    return stats.rng_for(o.seed, f"{table}|{m.name}|{key!r}") if o.n_boot > 0 else None


def reason_counts(flows, keys: list[str]) -> pl.DataFrame:
    """Flows per ``keys`` (class group, ``--by`` values and ``class_reason``) as ``_n``: what
    :func:`hsrtcp.study.tables.classes` counts, from one pass over the flows (the exploded
    key and reason strings of 10^7 flows took 1.8 GB)."""
    per = flows.lf.group_by(keys).agg(pl.len().alias("_n")).collect(engine="streaming")
    fine = pl.col("flow_class")
    # each flow in its class, in high_1_16 for 1-16 handoffs, and in all (explode_classes)
    rows = pl.concat([per, per.filter(fine.is_in(["high_1_8", "high_9_16"])).with_columns(pl.lit("high_1_16").alias("flow_class")),
                      per.with_columns(pl.lit("all").alias("flow_class"))])
    return rows.group_by(keys).agg(pl.col("_n").sum())
