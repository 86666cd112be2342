"""docs/lab.md's levels table (issue 35): the v2 channel's column is written from the committed
study tables tests/data/study-v2/ by hsrtcp.docsgen, and judged by the rule docs/lab.md
declared before the runs (a factor 1.5 of the held-out seed value)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from hsrtcp import docsgen

ROOT = Path(__file__).resolve().parents[3]
V2 = ROOT / "tests" / "data" / "study-v2"


def _row(label: str) -> list[str]:
    body = docsgen.regions((ROOT / "docs" / "lab.md").read_text(encoding="utf-8"))["lab-levels"]
    line = next(x for x in body.splitlines() if x.startswith(f"| {label} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_v2_cells_are_the_committed_flows_recounted():
    """The spurious RTO rate and p_d of the class with handoffs: the mean over its flows of
    study_flows.parquet, and the flows and trips they come from."""
    f = pl.read_parquet(V2 / "study_flows.parquet").filter(pl.col("flow_class").is_in(["high_1_8", "high_9_16"]))
    for label, col in (("spurious RTO rate M13", "spurious_rto_rate"), ("data loss p_d M8", "p_d")):
        have = f.filter(pl.col(col).is_not_null() & pl.col(col).is_not_nan())
        trips = have.select(pl.col("scenario"), pl.col("repetition")).unique().height
        cell = _row(label)[3]
        assert cell.startswith(f"{docsgen._sig(have[col].mean() * 100)} % ["), cell
        assert cell.endswith(f"({have.height} flows, {trips} trips)"), cell
    # the committed table of the same run says the same
    t = pl.read_parquet(V2 / "spurious_rto.parquet").filter(
        (pl.col("flow_class") == "high_1_16") & (pl.col("metric") == "spurious_rto_rate"))
    assert abs(t["value"][0] - f["spurious_rto_rate"].drop_nans().mean()) < 1e-12


def test_level_rule_is_the_declared_factor():
    seed = 0.5
    assert docsgen._level_verdict(0.75, 0.7, 0.8, seed, "held out").startswith("reached")
    assert docsgen._level_verdict(0.76, 0.7, 0.8, seed, "held out").startswith("missed")
    assert docsgen._level_verdict(seed / 1.5, 0.3, 0.4, seed, "held out").startswith("reached")
    assert docsgen._level_verdict(0.05, 0.04, 0.06, seed, "held out") == "missed (lab 0.10× seed)"
    # a value the channel was set from is shown, never judged
    assert docsgen._level_verdict(0.5, 0.4, 0.6, seed, "calibration") == "calibration target (lab 1.0× seed)"
    assert docsgen._level_verdict(None, None, None, seed, "held out") == "no value"


def test_the_table_judges_the_held_out_rows_only():
    assert _row("data loss p_d M8")[4].startswith("calibration target")
    assert _row("q M11")[4].startswith("calibration target")
    assert _row("RTT, mean of flows M7")[4].startswith("not judged")
    for label in ("spurious RTO rate M13", "DupACK rate M15", "timeout recovery M10 (pooled phases)"):
        assert _row(label)[4].split()[0] in ("reached", "missed")


@pytest.mark.parametrize("campaign, trips", [("v5", 16), ("v6", 17)])
def test_truth_cells_recount_the_audit_and_the_study(campaign, trips):
    """docs/lab.md "Channel v5" and "Channel v6": the truth's M13 and the M13 with needless
    TLPs are the means over the flows with 1-16 handoffs of the audited connection's counts,
    each flow found by run and first packet; the truth's M13 equals the analyzer's on every
    such flow."""
    f = pl.read_parquet(ROOT / f"tests/data/study-{campaign}/study_flows.parquet").with_columns(
        pl.col("result").str.split("/").list.last().alias("run"))
    c = pl.read_csv(ROOT / f"docs/audit/{campaign}/connections.csv", infer_schema_length=None)
    rows = []
    for r in f.filter(pl.col("flow_class").is_in(["high_1_8", "high_9_16"])).iter_rows(named=True):
        m = c.filter((pl.col("run") == r["run"]) & ((pl.col("truth_first_ts") - r["first_ts"]).abs() < 1e-3))
        assert m.height == 1, r["run"]
        rows.append((r["spurious_rto_rate"], *m.select("truth_m13_packets", "truth_needless_tlp",
                                                         "truth_retransmissions").row(0)))
    have = [x for x in rows if x[3] > 0]
    assert all(abs(m13 / n - lab) < 1e-12 for lab, m13, _, n in have)
    body = docsgen.regions((ROOT / "docs" / "lab.md").read_text(encoding="utf-8"))[f"lab-{campaign}-truth"]

    def cell(label):
        return next(x for x in body.splitlines() if x.startswith(f"| {label}")).split(" | ")[1]

    for label, value in (("M13 by the truth", sum(m / n for _, m, _, n in have) / len(have)),
                         ("M13 + needless TLPs |", sum((m + t) / n for _, m, t, n in have) / len(have))):
        assert cell(label).startswith(f"{docsgen._sig(value * 100)} % ["), (label, cell(label))
        assert cell(label).endswith(f"({len(have)} flows, {trips} trips)")
    assert f"equal to the lab's on {len(have)} of {len(have)} flows" in body
