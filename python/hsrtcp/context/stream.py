"""Handoffs and coverage of a radio log fed block by block (issue 32), with the state that
crosses a block's end carried: the previous cell of every carrier, the last sample and the
running sums of every carrier, the boundaries of the complementary coverage not yet swept.

The tables are the ones :func:`hsrtcp.context.handoffs.handoffs` and
:func:`hsrtcp.context.coverage.coverage` give on the whole frame, bit for bit (the sums are
running sums in the same order). Blocks are normalized radio rows (``RADIO_SCHEMA`` plus
``run_id``) in file order; times must increase per carrier (what
:func:`hsrtcp.context.readers.check` enforces). The complementary coverage (``*``) also
needs each block's times to be at or after the previous blocks' (a log in time order, as
the lab writes it); a log that is not raises :class:`Unordered` (the caller then needs the
whole log, or an external sort).

Not yet wired into :func:`hsrtcp.context.enrich.compute_context`: the per-flow context
still takes the whole frame (docs/context.md).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from hsrtcp.context.handoffs import _CELL, cell_type, finish
from hsrtcp.context.readers import GAP_S
from hsrtcp.schemas import COVERAGE_SCHEMA, HANDOFF_SCHEMA


class Unordered(ValueError):
    """A block holds a time before the previous blocks' latest (the ``*`` sweep needs time order)."""


def _with_run(block: pl.DataFrame) -> pl.DataFrame:
    if "run_id" not in block.columns:
        block = block.with_columns(pl.lit(None, pl.String).alias("run_id"))
    for c, t in (("arfcn", pl.Int64), ("generation", pl.String)):
        if c not in block.columns:
            block = block.with_columns(pl.lit(None, t).alias(c))
    return block


class HandoffScan:
    """Serving-cell changes block by block: the carried state is each (run, carrier)'s last
    sample with a cell."""

    _KEEP = ("run_id", "carrier", "ts", *_CELL, "source", "line")

    def __init__(self):
        self._last: pl.DataFrame | None = None  # one row per (run, carrier): its last cell sample
        self._found: list[pl.DataFrame] = []

    def add(self, block: pl.DataFrame) -> None:
        df = _with_run(block).select(self._KEEP)
        df = df.filter(pl.col("cid").is_not_null() & pl.col("carrier").is_not_null())
        if df.is_empty():
            return
        df = df.with_columns(pl.lit(False).alias("_carried"))
        if self._last is not None:
            df = pl.concat([self._last.with_columns(pl.lit(True).alias("_carried")), df], how="vertical")
        g = [pl.col("run_id").fill_null(""), "carrier"]
        # a stable sort: the carried row is each carrier's earliest (times increase per carrier)
        df = df.sort(*g, "ts", maintain_order=True)
        df = df.with_columns(*(pl.col(c).shift(1).over(g).alias(f"old_{c}") for c in _CELL))
        moved = pl.lit(False)
        for c in _CELL:
            moved = moved | pl.col(c).ne_missing(pl.col(f"old_{c}"))
        h = df.filter(~pl.col("_carried") & pl.col("old_cid").is_not_null() & moved)
        if not h.is_empty():
            self._found.append(h.drop("_carried").rename({c: f"new_{c}" for c in _CELL})
                               .with_columns(cell_type().alias("type")))
        self._last = (df.select(self._KEEP).group_by(g, maintain_order=True).last()
                      .select(self._KEEP))

    def result(self) -> pl.DataFrame:
        if self._last is None:
            return pl.DataFrame(schema=HANDOFF_SCHEMA)
        if not self._found:
            return finish(self._empty())
        return finish(pl.concat(self._found, how="vertical"))

    def _empty(self) -> pl.DataFrame:
        cols = ["run_id", "carrier", "ts", *(f"new_{c}" for c in _CELL), "source", "line",
                *(f"old_{c}" for c in _CELL), "type"]
        return pl.DataFrame(schema={c: HANDOFF_SCHEMA.get(c, pl.String) for c in cols})


def _run_sum(carry: float, x: np.ndarray) -> float:
    """``carry`` then ``x`` added left to right (the same float as one running sum over all)."""
    return float(np.cumsum(np.concatenate(([carry], x)))[-1]) if len(x) else carry


class _Carrier:
    __slots__ = ("ts", "lte", "total", "lte_s")

    def __init__(self):
        self.ts = None      # last sample's time and RAT: the open piece's start
        self.lte = False
        self.total = 0.0
        self.lte_s = 0.0


class _Run:
    def __init__(self):
        self.carriers: dict[str, _Carrier] = {}
        self.latest = -np.inf            # latest time seen in the run
        self.pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (t, dk, dl) not swept
        self.known = 0                   # carriers known / on LTE after the swept boundaries
        self.lte_n = 0
        self.t_prev = None               # the last swept boundary
        self.total = 0.0
        self.lte_s = 0.0


class CoverageScan:
    """LTE coverage block by block (hsrtcp.context.coverage): per carrier the running sums
    and the last sample; for ``*`` the sweep over piece boundaries, done up to the time no
    later block can put a boundary before."""

    def __init__(self):
        self._runs: dict = {}

    def add(self, block: pl.DataFrame) -> None:
        df = _with_run(block).select("run_id", "carrier", "rat", "ts")
        for (rid,), part in df.group_by(["run_id"], maintain_order=True):
            run = self._runs.setdefault(rid, _Run())
            r = part.filter(pl.col("carrier").is_not_null() & pl.col("rat").is_not_null())
            if r.is_empty():
                continue
            lo, hi = r["ts"].min(), r["ts"].max()
            if lo < run.latest:
                raise Unordered(f"time {lo} after {run.latest}: the log is not in time order")
            for (c,), g in r.group_by(["carrier"], maintain_order=True):
                st = run.carriers.setdefault(c, _Carrier())
                ts, lte = g["ts"].to_numpy(), (g["rat"] == "LTE").to_numpy()
                if st.ts is not None:
                    ts, lte = np.concatenate(([st.ts], ts)), np.concatenate(([st.lte], lte))
                st.ts, st.lte = float(ts[-1]), bool(lte[-1])
                if len(ts) < 2:
                    continue
                keep = np.diff(ts) <= GAP_S
                s, e, x = ts[:-1][keep], ts[1:][keep], lte[:-1][keep]
                st.total, st.lte_s = _run_sum(st.total, e - s), _run_sum(st.lte_s, (e - s)[x])
                xi = x.astype(np.int64)
                run.pending.append((np.concatenate([s, e]),
                                    np.concatenate([np.ones(len(s), np.int64), -np.ones(len(e), np.int64)]),
                                    np.concatenate([xi, -xi])))
            run.latest = max(run.latest, hi)
            # a later piece starts at a carrier's open start (if its next sample can still come
            # within GAP_S) or at a later sample: boundaries before that are final
            live = [st.ts for st in run.carriers.values() if st.ts is not None and run.latest - st.ts <= GAP_S]
            self._sweep(run, min([run.latest, *live]))

    @staticmethod
    def _sweep(run: _Run, upto: float) -> None:
        if not run.pending:
            return
        t = np.concatenate([p[0] for p in run.pending])
        dk = np.concatenate([p[1] for p in run.pending])
        dl = np.concatenate([p[2] for p in run.pending])
        order = np.lexsort((dl, dk, t))
        t, dk, dl = t[order], dk[order], dl[order]
        n = int(np.searchsorted(t, upto, side="left"))  # boundaries strictly before ``upto``
        run.pending = [(t[n:], dk[n:], dl[n:])] if n < len(t) else []
        if n == 0:
            return
        t, dk, dl = t[:n], dk[:n], dl[:n]
        known = run.known + np.concatenate(([0], np.cumsum(dk)[:-1]))
        lte_n = run.lte_n + np.concatenate(([0], np.cumsum(dl)[:-1]))
        dt = np.diff(t, prepend=t[:1] if run.t_prev is None else [run.t_prev])
        on = (dt > 0) & (known > 0)
        run.total = _run_sum(run.total, dt[on])
        run.lte_s = _run_sum(run.lte_s, dt[on & (lte_n > 0)])
        run.known += int(dk.sum())
        run.lte_n += int(dl.sum())
        run.t_prev = float(t[-1])

    def result(self) -> pl.DataFrame:
        rows = []
        for rid, run in self._runs.items():
            for c, st in run.carriers.items():
                rows.append({"run_id": rid, "carrier": c, "lte_s": st.lte_s, "total_s": st.total,
                             "lte_coverage": st.lte_s / st.total if st.total > 0 else None})
            if len(run.carriers) > 1:
                self._sweep(run, np.inf)
                rows.append({"run_id": rid, "carrier": "*", "lte_s": run.lte_s, "total_s": run.total,
                             "lte_coverage": run.lte_s / run.total if run.total > 0 else None})
        return pl.DataFrame(rows, schema=COVERAGE_SCHEMA) if rows else pl.DataFrame(schema=COVERAGE_SCHEMA)
