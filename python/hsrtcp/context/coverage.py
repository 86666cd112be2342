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


def _steps(ts: np.ndarray, lte: np.ndarray) -> list[tuple[float, float, bool]]:
    """(start, end, is_lte) of the known pieces of one carrier's timeline."""
    if len(ts) < 2:
        return []
    d = np.diff(ts)
    keep = d <= GAP_S
    return list(zip(ts[:-1][keep], ts[1:][keep], lte[:-1][keep]))


def _one_run(radio: pl.DataFrame, run_id) -> list[dict]:
    r = radio.filter(pl.col("carrier").is_not_null() & pl.col("rat").is_not_null())
    rows, pieces = [], {}
    for (c,), g in r.group_by(["carrier"], maintain_order=True):
        g = g.sort("ts")
        p = _steps(g["ts"].to_numpy(), (g["rat"] == "LTE").to_numpy())
        pieces[c] = p
        total = float(sum(e - s for s, e, _ in p))
        lte = float(sum(e - s for s, e, x in p if x))
        rows.append({"run_id": run_id, "carrier": c, "lte_s": lte, "total_s": total,
                     "lte_coverage": lte / total if total > 0 else None})
    if len(pieces) > 1:
        # sweep over every piece boundary: count known carriers and LTE carriers
        ev = []
        for p in pieces.values():
            for s, e, x in p:
                ev += [(s, 1, int(x)), (e, -1, -int(x))]
        ev.sort()
        known = lte_n = 0
        total = lte = 0.0
        last = None
        for t, dk, dl in ev:
            if last is not None and t > last:
                if known > 0:
                    total += t - last
                    if lte_n > 0:
                        lte += t - last
            known += dk
            lte_n += dl
            last = t
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
