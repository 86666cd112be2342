"""Confusion counts, precision and recall with Wilson score intervals, and a confidence word."""

from __future__ import annotations

import math

import polars as pl

Z95 = 1.959963984540054
MIN_N = 10  # below this many cases a share is not judged
GOOD = 0.9  # a detector is "good" when both lower bounds reach this


def wilson(k: int, n: int, z: float = Z95) -> tuple[float | None, float | None, float | None]:
    """(share, lower, upper) of the Wilson score interval for k successes in n trials."""
    if n <= 0:
        return None, None, None
    p = k / n
    d = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / d
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return p, max(0.0, centre - half), min(1.0, centre + half)


def confidence(tp: int, fp: int, fn: int) -> str:
    """``few cases`` (fewer than MIN_N truth positives and detections), ``poor`` (a point
    estimate of precision or recall below 0.5), ``good`` (both Wilson lower bounds ≥ GOOD),
    ``uncertain`` otherwise."""
    pos, det = tp + fn, tp + fp
    prec = tp / det if det else None
    rec = tp / pos if pos else None
    if (prec is not None and prec < 0.5 and det >= 3) or (rec is not None and rec < 0.5 and pos >= 3):
        return "poor"
    if pos < MIN_N and det < MIN_N:
        return "few cases"
    lo_p = wilson(tp, det)[1] if det else 1.0
    lo_r = wilson(tp, pos)[1] if pos else 1.0
    return "good" if lo_p >= GOOD and lo_r >= GOOD else "uncertain"


def confusion(verdicts: pl.DataFrame, by: list[str] = ()) -> pl.DataFrame:
    """One row per detector (and value of ``by``) with TP, FP, FN, TN over the connections
    where the method applies, ``out_of_reach`` (truth positives where it cannot: no SACK for
    D-SACK, no timestamps for Eifel), precision and recall with 95 % Wilson intervals, and
    the confidence word."""
    keys = ["detector", "vantage", *by]
    if verdicts.is_empty():
        return pl.DataFrame()
    ok = pl.col("applicable") if "applicable" in verdicts.columns else pl.lit(True)
    g = (verdicts.group_by(keys, maintain_order=True)
         .agg([((pl.col("outcome") == o) & ok).sum().alias(o.lower()) for o in ("TP", "FP", "FN", "TN")]
              + [((pl.col("truth") == True) & ~ok).sum().alias("out_of_reach")])  # noqa: E712
         .sort(keys, nulls_last=True))
    rows = []
    for r in g.iter_rows(named=True):
        tp, fp, fn, tn = r["tp"], r["fp"], r["fn"], r["tn"]
        p, plo, phi = wilson(tp, tp + fp)
        c, clo, chi = wilson(tp, tp + fn)
        rows.append(r | {"precision": p, "precision_lo": plo, "precision_hi": phi,
                         "recall": c, "recall_lo": clo, "recall_hi": chi,
                         "confidence": confidence(tp, fp, fn)})
    return pl.DataFrame(rows, infer_schema_length=None)
