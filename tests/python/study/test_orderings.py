"""targets.md §9 items 1, 3, 4 and 7 on the committed output of the study campaign
(tests/data/study/: `make study`'s pooled tables, see its README for the run), checked by
hsrtcp.study.orderings — whose thresholds were committed before that campaign ran.

The orderings are asserted as the seeds state them; an item the campaign does not reproduce
is an expected failure (strict: the day a new campaign reproduces it, the marker must go),
with the reason docs/study.md gives. A further test shows the checker can fail, and one
re-derives the committed cells from the committed per-connection rows, so the tables
cannot have been edited by hand.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from hsrtcp.study import orderings

STUDY = Path(__file__).resolve().parents[2] / "data" / "study"

# item -> reason, for the orderings this campaign does not reproduce (docs/study.md)
NOT_REPRODUCED: dict[tuple[int, str], str] = {
    (4, "pooled 1-s throughput (M3)"):
        "throughput falls static -> high_0 -> high_1_16, but the speed step (7.0 -> 2.0 Mbit/s) is larger "
        "than the handoff step (2.0 -> 1.0): the standing train has the seeds' stationary loss (0.08 %), "
        "ten times below the HSR loss, and loss-limited cubic throughput scales with 1/sqrt(p)",
    (7, "timeout recovery (M10), q vs p_d (M11, M8)"):
        "no static flow timed out (stalls at 0.005/s hit almost no 30-s flow), so there is no stationary "
        "recovery to compare; q (9 %) is above p_d (4.6 %) with handoffs but not 3x",
}


def _by_name():
    return {(o.item, o.name): o for o in orderings.check(STUDY)}


CHECKS = [(1, "spurious RTO rate (M13)"), (3, "DupACK rate (M15)"), (4, "data loss p_d (M8)"),
          (4, "mean RTT (M7)"), (4, "pooled 1-s throughput (M3)"),
          (7, "timeout recovery (M10), q vs p_d (M11, M8)")]


@pytest.mark.parametrize("item, name", [
    pytest.param(i, n, marks=pytest.mark.xfail(strict=True, reason=NOT_REPRODUCED[(i, n)]))
    if (i, n) in NOT_REPRODUCED else (i, n) for i, n in CHECKS])
def test_ordering_holds_on_the_committed_campaign(item, name):
    o = _by_name()[(item, name)]
    assert o.holds, orderings.report([o])


def test_every_check_is_listed():
    assert sorted(_by_name()) == sorted(CHECKS)


def test_the_checker_fails_when_an_ordering_is_broken(tmp_path):
    """Swap the static and 300-km/h-with-handoffs cells of every table: every ordering must
    then fail (the checker is not a constant)."""
    for name in ("performance", "spurious_rto", "dupack", "timeout_recovery"):
        df = pl.read_parquet(STUDY / f"{name}.parquet")
        swap = {"static": "high_1_16", "high_1_16": "static"}
        df = df.with_columns(pl.col("flow_class").replace(swap))
        df.write_parquet(tmp_path / f"{name}.parquet")
    res = orderings.check(tmp_path)
    assert len(res) == len(CHECKS)
    assert not any(o.holds for o in res), orderings.report(res)


def test_committed_cells_follow_from_the_committed_connections():
    """The means over flows of the committed tables, recomputed from study_flows.parquet
    (one row per connection, with its class) — the tables were written by `hsrtcp study`."""
    flows = pl.read_parquet(STUDY / "study_flows.parquet")
    for table, metric in (("spurious_rto", "spurious_rto_rate"), ("dupack", "dupack_rate"),
                          ("performance", "rtt_mean_s"), ("performance", "p_d")):
        cells = pl.read_parquet(STUDY / f"{table}.parquet")
        for cls in orderings.CLASSES:
            sel = flows.filter(pl.col("flow_class") == cls) if cls != "high_1_16" else \
                flows.filter(pl.col("flow_class").is_in(["high_1_8", "high_9_16"]))
            col = {"rtt_mean_s": "rtt_mean_s"}.get(metric, metric)
            vals = sel[col].drop_nulls()
            cell = cells.filter((pl.col("flow_class") == cls) & (pl.col("metric") == metric)).row(0, named=True)
            assert cell["n_flows"] == len(vals), (table, metric, cls)
            if cell["value"] is not None:
                assert cell["value"] == pytest.approx(float(vals.mean()), rel=1e-9), (table, metric, cls)
