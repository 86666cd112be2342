"""The headline claims of docs/findings.md tested by trip and adjusted as a family
(hsrtcp.findings.multiplicity), on the committed arms.csv.

Witnesses: the reference values of issue 34, computed independently from the same arms.csv
(hsrbbr vs bbr p = 0.063, F-RTO's spurious-RTO effect p = 0.11, 74 of 352 effect cells marked
without correction); the p-values recomputed here by enumerating the sign patterns with
itertools, independently of hsrtcp.study.stats; a planted effect is found and the A/A
contrast is not."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import polars as pl
import pytest

from hsrtcp import findings as F
from hsrtcp.findings import effects as E
from hsrtcp.findings import multiplicity as M
from hsrtcp.findings import questions as Q

ARMS = Path(__file__).resolve().parents[3] / "docs" / "findings" / "arms.csv"


def _effects(arms: pl.DataFrame) -> pl.DataFrame:
    return E.table(arms, Q.QUESTIONS, Q.groups_of, F.group_members, seed=0, n_boot=2000, min_pairs=3,
                   noise_key=Q.NOISE_KEY)


@pytest.fixture(scope="module")
def arms() -> pl.DataFrame:
    return pl.read_csv(ARMS)


@pytest.fixture(scope="module")
def family(arms) -> pl.DataFrame:
    return M.table(arms, _effects(arms), F.group_members)


def _row(t: pl.DataFrame, contrast: str, outcome: str, group: str = Q.ALL_HSR) -> dict:
    return t.filter((pl.col("contrast") == contrast) & (pl.col("outcome") == outcome)
                    & (pl.col("group") == group)).row(0, named=True)


def test_the_family_is_the_summarys_fifteen_claims(family):
    assert family.height == 15
    assert family.select("contrast", "outcome", "group").is_unique().all()


def test_reference_values_of_the_issue(arms, family):
    assert _row(family, "hsrbbr vs bbr", "goodput_bps")["p_perm"] == pytest.approx(0.063, abs=0.0005)
    assert round(_row(family, "F-RTO on vs off", "spurious_timeouts")["p_perm"], 2) == 0.11
    assert M.significant_cells(_effects(arms)) == (74, 352)
    # what does not hold after Benjamini-Hochberg (issue 34: rto_min 50 ms goodput, F-RTO,
    # hsrbbr vs bbr), and what does
    assert not _row(family, "rto_min 50 ms vs 200 ms", "goodput_bps")["holds"]
    assert not _row(family, "F-RTO on vs off", "spurious_timeouts")["holds"]
    assert not _row(family, "hsrbbr vs bbr", "goodput_bps")["holds"]
    assert _row(family, "bbr vs cubic", "goodput_bps")["holds"]


def _brute(arms, treatment, reference, scenarios, outcome) -> float:
    t = arms.filter(pl.col("arm") == treatment, pl.col("scenario").is_in(scenarios), pl.col("status") == "ok")
    r = arms.filter(pl.col("arm") == reference, pl.col("scenario").is_in(scenarios), pl.col("status") == "ok")
    j = t.join(r, on=["scenario", "seed"], suffix="_r")
    d = [math.log(a / b) if outcome == "goodput_bps" else a - b
         for a, b in zip(j[outcome].to_list(), j[f"{outcome}_r"].to_list()) if a is not None and b is not None]
    obs = abs(sum(d))
    hits = sum(abs(sum(s * x for s, x in zip(signs, d))) >= obs - 1e-12
               for signs in itertools.product((1, -1), repeat=len(d)))
    return hits / 2 ** len(d)


def test_p_values_equal_an_independent_enumeration(arms, family):
    assert _row(family, "bbr vs cubic", "goodput_bps", Q.STATIC)["p_perm"] == pytest.approx(
        _brute(arms, "bbr", "cubic", ["static"], "goodput_bps")) == pytest.approx(2 / 32)
    # two scenarios' 10 pairs (1,024 patterns): the same arithmetic as the pooled 20 pairs
    from hsrtcp.study import stats
    t = arms.filter(pl.col("arm") == "cubic-rtomin50", pl.col("scenario").is_in(["urban", "mahimahi"]))
    r = arms.filter(pl.col("arm") == "cubic", pl.col("scenario").is_in(["urban", "mahimahi"]))
    j = t.join(r, on=["scenario", "seed"], suffix="_r")
    d = [a - b for a, b in zip(j["timeouts"].to_list(), j["timeouts_r"].to_list())]
    assert stats.paired_permutation(d) == pytest.approx(
        _brute(arms, "cubic-rtomin50", "cubic", ["urban", "mahimahi"], "timeouts"))


def test_a_planted_effect_holds_and_noise_does_not(arms):
    # reno's goodput raised by 30 % on every HSR run: the reno contrast must then hold
    planted = arms.with_columns(
        pl.when((pl.col("arm") == "reno") & (pl.col("scenario") != Q.STATIC))
        .then(pl.col("goodput_bps") * 1.3).otherwise(pl.col("goodput_bps")).alias("goodput_bps"))
    t = M.table(planted, _effects(planted), F.group_members)
    before = M.table(arms, _effects(arms), F.group_members)
    assert not _row(before, "reno vs cubic", "goodput_bps")["holds"]
    assert _row(t, "reno vs cubic", "goodput_bps")["holds"]
    # the A/A contrast: the permutation test calls none of its cells significant
    hits, total = M.aa_rejections(arms, F.group_members)
    assert total >= 30 and hits == 0
