"""Paired effect sizes with bootstrap confidence intervals.

A pair is the treatment run and the reference run of one block (scenario, trip seed); a
pair counts for an outcome when both runs have a value (nulls: e.g. no timeout, so no
timeout recovery duration). Per outcome kind (hsrtcp.findings.outcomes):

- ``ratio`` (goodput): the geometric mean of the paired ratios treatment / reference,
  reported as a change in percent; a pair with a zero on either side cannot be a ratio
  and is left out (counted in ``dropped``).
- ``diff``: the mean of the paired differences treatment − reference, times the outcome's
  display scale (100 for shares: percentage points).

Intervals: the study layer's bootstrap (:func:`hsrtcp.study.stats.per_flow`; pairs are
the resampled units, percentile intervals at 95 %), reproducible per cell
(:func:`hsrtcp.study.stats.rng_for`). The verdict says which way an interval points:
``helps`` / ``hurts`` when it excludes no effect, ``within noise`` when it does not,
``too few pairs`` below ``min_pairs``, ``no interval`` without bootstrap (``n_boot`` 0).

The A/A contrast (the same arm twice on the same path) gives, per scenario group and outcome,
the interval that pure noise produces (``noise_lo``, ``noise_hi``); ``beyond_noise`` says
whether an effect's interval lies wholly outside it. With 5 pairs the percentile bootstrap
is narrow (it covers less than its nominal 95 %), and the A/A cells show how often it calls
an effect where there is none (docs/findings.md).
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from hsrtcp.findings.outcomes import BY_NAME, Outcome
from hsrtcp.study import stats

#: one row per (question, group, contrast, outcome)
COLUMNS = ("question", "group", "contrast", "treatment", "reference", "outcome", "effect_kind", "n_pairs",
           "dropped", "reference_mean", "treatment_mean", "effect", "effect_lo", "effect_hi", "pair_min",
           "pair_max", "unit", "verdict", "noise_lo", "noise_hi", "beyond_noise")


def paired(arms: pl.DataFrame, treatment: str, reference: str, scenarios: tuple[str, ...]) -> pl.DataFrame:
    """The pairs of two arms in ``scenarios``: one row per (scenario, seed) where both ran
    (status ok), the outcomes as ``<name>_t`` and ``<name>_r``."""
    ok = arms.filter(pl.col("status") == "ok", pl.col("scenario").is_in(list(scenarios)))
    outcome_cols = [c for c in arms.columns if c in BY_NAME or c in ("spurious_ackl", "spurious_rtoei")]

    def side(arm: str, suffix: str) -> pl.DataFrame:
        return ok.filter(pl.col("arm") == arm).select("scenario", "seed",
                                                      *[pl.col(c).alias(f"{c}_{suffix}") for c in outcome_cols])

    return side(treatment, "t").join(side(reference, "r"), on=["scenario", "seed"], how="inner").sort("scenario", "seed")


def effect(t: list, r: list, outcome: Outcome, *, rng: np.random.Generator, n_boot: int = 2000,
           min_pairs: int = 3) -> dict:
    """The paired effect of one outcome from the treatment and reference values of the pairs
    (same order; None where a run has no value)."""
    both = [(a, b) for a, b in zip(t, r) if a is not None and b is not None
            and math.isfinite(a) and math.isfinite(b)]
    dropped = 0
    if outcome.effect == "ratio":
        usable = [(a, b) for a, b in both if a > 0 and b > 0]
        dropped = len(both) - len(usable)
        both = usable
    n = len(both)
    out = {"n_pairs": n, "dropped": dropped, "unit": outcome.unit, "effect_kind": outcome.effect,
           "reference_mean": float(np.mean([b for _, b in both])) if n else None,
           "treatment_mean": float(np.mean([a for a, _ in both])) if n else None,
           "effect": None, "effect_lo": None, "effect_hi": None, "pair_min": None, "pair_max": None}
    if n < min_pairs:
        out["verdict"] = "too few pairs"
        return out
    if outcome.effect == "ratio":
        logs = [math.log(a / b) for a, b in both]
        cell = stats.per_flow(logs, min_flows=min_pairs, n_boot=n_boot, rng=rng, median=False)
        conv = (lambda v: None if v is None else (math.exp(v) - 1.0) * 100.0)
    else:
        cell = stats.per_flow([a - b for a, b in both], min_flows=min_pairs, n_boot=n_boot, rng=rng, median=False)
        conv = (lambda v: None if v is None else v * outcome.scale)
    out.update(effect=conv(cell.value), effect_lo=conv(cell.value_lo), effect_hi=conv(cell.value_hi))
    # the single pairs' effects ("up to" in the seeds' sense is the largest of them)
    per_pair = [conv(math.log(a / b)) if outcome.effect == "ratio" else conv(a - b) for a, b in both]
    out.update(pair_min=min(per_pair), pair_max=max(per_pair))
    out["verdict"] = verdict(out["effect_lo"], out["effect_hi"], outcome)
    return out


def verdict(lo: float | None, hi: float | None, outcome: Outcome) -> str:
    """``helps``, ``hurts`` or ``within noise`` from an interval around no effect (0)."""
    if lo is None or hi is None:
        return "no interval"
    if lo > 0 or hi < 0:
        up = lo > 0
        return "helps" if up == (outcome.better == "higher") else "hurts"
    return "within noise"


def table(arms: pl.DataFrame, questions, groups_of, group_members, *, seed: int = 0, n_boot: int = 2000,
          min_pairs: int = 3, noise_key: str = "noise") -> pl.DataFrame:
    """Every question's effects: per group (a scenario or a pooled set, ``group_members``
    maps a group to its scenarios), per contrast, per outcome of the question."""
    rows = []
    for q in questions:
        for group in groups_of(q):
            for c in q.contrasts:
                pairs = paired(arms, c.treatment, c.reference, group_members(group))
                for name in q.outcomes:
                    o = BY_NAME[name]
                    key = f"{q.key}|{group}|{c.label}|{name}"
                    e = effect(pairs[f"{name}_t"].to_list() if pairs.height else [],
                               pairs[f"{name}_r"].to_list() if pairs.height else [],
                               o, rng=stats.rng_for(seed, key), n_boot=n_boot, min_pairs=min_pairs)
                    rows.append({"question": q.key, "group": group, "contrast": c.label, "treatment": c.treatment,
                                 "reference": c.reference, "outcome": name, **e})
    schema = {"question": pl.String, "group": pl.String, "contrast": pl.String, "treatment": pl.String,
              "reference": pl.String, "outcome": pl.String, "effect_kind": pl.String, "n_pairs": pl.Int64,
              "dropped": pl.Int64, "reference_mean": pl.Float64, "treatment_mean": pl.Float64,
              "effect": pl.Float64, "effect_lo": pl.Float64, "effect_hi": pl.Float64, "pair_min": pl.Float64,
              "pair_max": pl.Float64, "unit": pl.String,
              "verdict": pl.String}
    out = pl.DataFrame(rows, schema=schema)
    return with_noise(out, noise_key).select(COLUMNS)


def with_noise(effects: pl.DataFrame, noise_key: str) -> pl.DataFrame:
    """Attach the A/A interval of the same group and outcome and whether the effect's interval
    lies wholly outside it (null when either interval is missing)."""
    noise = (effects.filter(pl.col("question") == noise_key)
             .select("group", "outcome", pl.col("effect_lo").alias("noise_lo"), pl.col("effect_hi").alias("noise_hi"))
             .unique(subset=["group", "outcome"], keep="first"))
    out = effects.join(noise, on=["group", "outcome"], how="left")
    beyond = (pl.when(pl.col("effect_lo").is_null() | pl.col("noise_lo").is_null()).then(None)
              .otherwise((pl.col("effect_lo") > pl.col("noise_hi")) | (pl.col("effect_hi") < pl.col("noise_lo"))))
    return out.with_columns(
        pl.when(pl.col("question") == noise_key).then(None).otherwise(beyond).alias("beyond_noise"),
        *[pl.when(pl.col("question") == noise_key).then(None).otherwise(pl.col(c)).alias(c)
          for c in ("noise_lo", "noise_hi")])


def causes(arms: pl.DataFrame, group_members, groups, *, seed: int = 0, n_boot: int = 2000,
           min_runs: int = 3) -> pl.DataFrame:
    """M14 per arm and group: the share of spurious RTOs that ACK loss may have caused
    (ACKL; the rest is RTO estimation, RTOEI), pooled over the runs' spurious RTOs
    (:func:`hsrtcp.study.stats.ratio`, runs resampled)."""
    rows = []
    ok = arms.filter(pl.col("status") == "ok")
    for group in groups:
        sub = ok.filter(pl.col("scenario").is_in(list(group_members(group))))
        for arm in sorted(sub["arm"].unique().to_list()):
            a = sub.filter(pl.col("arm") == arm)
            cell = stats.ratio(a["spurious_ackl"].to_list(), a["spurious_timeouts"].to_list(), min_flows=min_runs,
                               n_boot=n_boot, rng=stats.rng_for(seed, f"causes|{group}|{arm}"))
            rows.append({"group": group, "arm": arm, "runs": a.height, "runs_with_spurious": cell.n_flows,
                         "spurious_rtos": cell.n, "ackl_share": cell.value, "ackl_share_lo": cell.value_lo,
                         "ackl_share_hi": cell.value_hi, "note": cell.note})
    schema = {"group": pl.String, "arm": pl.String, "runs": pl.Int64, "runs_with_spurious": pl.Int64,
              "spurious_rtos": pl.Int64, "ackl_share": pl.Float64, "ackl_share_lo": pl.Float64,
              "ackl_share_hi": pl.Float64, "note": pl.String}
    return pl.DataFrame(rows, schema=schema)
