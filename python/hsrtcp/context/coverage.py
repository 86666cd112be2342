"""LTE coverage rate (M28, seed 004): LTE time / logged time per carrier, and the
complementary coverage (carrier ``*``): time in which at least one carrier is on LTE.

Time from the phone log, sample-and-hold: a carrier's sample describes the time until its
next sample. A step longer than :data:`hsrtcp.context.readers.GAP_S` is a hole in the log and
counts neither as LTE nor in the total (the log does not say what happened). For ``*`` an
instant counts in the total when at least one carrier's state is known, and as LTE when at
least one known carrier is on LTE. Samples without a RAT (GPS-only rows) are ignored.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from hsrtcp.context.readers import GAP_S
from hsrtcp.schemas import COVERAGE_SCHEMA  # (defined there, below hsrtcp.results)


def _steps(ts: np.ndarray, lte: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(starts, ends, is_lte) arrays of the known pieces of one carrier's timeline."""
    if len(ts) < 2:
        return np.empty(0), np.empty(0), np.empty(0, dtype=bool)
    keep = np.diff(ts) <= GAP_S
    return ts[:-1][keep], ts[1:][keep], lte[:-1][keep]


def _sum(x: np.ndarray) -> float:
    """Left-to-right sum (a running sum: the same float as adding one piece after the other)."""
    return float(np.cumsum(x)[-1]) if len(x) else 0.0


def _one_run(radio: pl.DataFrame, run_id) -> list[dict]:
    r = radio.filter(pl.col("carrier").is_not_null() & pl.col("rat").is_not_null())
    rows, pieces = [], {}
    for (c,), g in r.group_by(["carrier"], maintain_order=True):
        g = g.sort("ts")
        s, e, x = _steps(g["ts"].to_numpy(), (g["rat"] == "LTE").to_numpy())
        pieces[c] = (s, e, x)
        total, lte = _sum(e - s), _sum((e - s)[x])
        rows.append({"run_id": run_id, "carrier": c, "lte_s": lte, "total_s": total,
                     "lte_coverage": lte / total if total > 0 else None})
    if len(pieces) > 1:
        # sweep over every piece boundary, in time order: count known carriers and LTE
        # carriers; the time to the next boundary counts when one is known (and LTE)
        s = np.concatenate([p[0] for p in pieces.values()])
        e = np.concatenate([p[1] for p in pieces.values()])
        x = np.concatenate([p[2] for p in pieces.values()]).astype(np.int64)
        t = np.concatenate([s, e])
        dk = np.concatenate([np.ones(len(s), np.int64), -np.ones(len(e), np.int64)])
        dl = np.concatenate([x, -x])
        order = np.lexsort((dl, dk, t))
        t, dk, dl = t[order], dk[order], dl[order]
        # counts in force before each boundary, and the time since the previous one
        known = np.concatenate(([0], np.cumsum(dk)[:-1]))
        lte_n = np.concatenate(([0], np.cumsum(dl)[:-1]))
        dt = np.diff(t, prepend=t[:1]) if len(t) else t
        on = (dt > 0) & (known > 0)
        total, lte = _sum(dt[on]), _sum(dt[on & (lte_n > 0)])
        rows.append({"run_id": run_id, "carrier": "*", "lte_s": lte, "total_s": total,
                     "lte_coverage": lte / total if total > 0 else None})
    return rows


def coverage(radio: pl.DataFrame) -> pl.DataFrame:
    """One row per (run, carrier) plus ``*`` per run with several carriers (docs/formats/coverage.md)."""
    if "run_id" not in radio.columns:
        radio = radio.with_columns(pl.lit(None, pl.String).alias("run_id"))
    rows = []
    # only the columns read here: grouping copies what it is given (issue 32)
    radio = radio.select("run_id", "carrier", "rat", "ts")
    for (rid,), part in radio.group_by(["run_id"], maintain_order=True):
        rows += _one_run(part, rid)
    return pl.DataFrame(rows, schema=COVERAGE_SCHEMA) if rows else pl.DataFrame(schema=COVERAGE_SCHEMA)
