"""docs/metrics.md §3 items 1, 3, 4 and 7 on the committed output of the study campaign
(tests/data/study/: `make study`'s pooled tables of the main campaign and its handoff trips;
tests/data/study-with-static/: the same plus the static extension, where item 7 is judged;
tests/data/study-by-workload/: the first --by workload, for item 4 on the long downloads; see
the README there for the run), checked by hsrtcp.study.orderings — whose thresholds were
committed before these campaigns ran, except the long-download check (added after run F,
from seed 000 §V's text; the module docstring says why).

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
WITH_STATIC = STUDY.parent / "study-with-static"
BY_WORKLOAD = STUDY.parent / "study-by-workload"

# item -> reason, for the orderings this campaign does not reproduce (docs/study.md)
NOT_REPRODUCED: dict[tuple[int, str], str] = {
    (4, "pooled 1-s throughput (M3)"):
        "throughput falls static -> high_0 -> high_1_16 (1.53 -> 1.07 -> 0.73 Mbit/s, intervals disjoint), but "
        "the handoff step (0.34) is smaller than the speed step (0.47): pooled over workloads, high_0 also holds "
        "most short flows (380 of its 440 are 50 KB flows, which seldom cross a handoff and are slow for want "
        "of time); on the long downloads, the seeds' comparison, it holds (next check)",
}


def _by_name():
    return {(o.item, o.name): o for o in orderings.check(STUDY, WITH_STATIC, BY_WORKLOAD)}


CHECKS = [(1, "spurious RTO rate (M13)"), (3, "DupACK rate (M15)"), (4, "data loss p_d (M8)"),
          (4, "mean RTT (M7)"), (4, "pooled 1-s throughput (M3)"),
          (4, "1-s throughput of the long downloads (M3)"),
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
    swap = {"static": "high_1_16", "high_1_16": "static"}
    for name in ("performance", "spurious_rto", "dupack", "timeout_recovery"):
        df = pl.read_parquet(STUDY / f"{name}.parquet")
        df = df.with_columns(pl.col("flow_class").replace(swap))
        df.write_parquet(tmp_path / f"{name}.parquet")
    (tmp_path / "w").mkdir()
    pl.read_parquet(BY_WORKLOAD / "performance.parquet").with_columns(pl.col("flow_class").replace(swap)) \
        .write_parquet(tmp_path / "w" / "performance.parquet")
    res = orderings.check(tmp_path, by_workload=tmp_path / "w")
    assert len(res) == len(CHECKS)
    assert not any(o.holds for o in res), orderings.report(res)


@pytest.mark.parametrize("study", [STUDY, WITH_STATIC], ids=["main", "with-static"])
def test_committed_cells_follow_from_the_committed_connections(study):
    """The means over flows of the committed tables, recomputed from study_flows.parquet
    (one row per connection, with its class) — the tables were written by `hsrtcp study`."""
    flows = pl.read_parquet(study / "study_flows.parquet")
    for table, metric in (("spurious_rto", "spurious_rto_rate"), ("dupack", "dupack_rate"),
                          ("performance", "rtt_mean_s"), ("performance", "p_d"), ("timeout_recovery", "q")):
        cells = pl.read_parquet(study / f"{table}.parquet")
        for cls in orderings.CLASSES:
            sel = flows.filter(pl.col("flow_class") == cls) if cls != "high_1_16" else \
                flows.filter(pl.col("flow_class").is_in(["high_1_8", "high_9_16"]))
            col = {"rtt_mean_s": "rtt_mean_s"}.get(metric, metric)
            vals = sel[col].drop_nulls()
            cell = cells.filter((pl.col("flow_class") == cls) & (pl.col("metric") == metric)).row(0, named=True)
            assert cell["n_flows"] == len(vals), (table, metric, cls)
            if cell["value"] is not None:
                assert cell["value"] == pytest.approx(float(vals.mean()), rel=1e-9), (table, metric, cls)


def test_item_7_is_read_from_the_second_study():
    """The extension's static timeouts are what item 7 sees: the main campaign alone has too
    few static flows with a timeout for a cell (min 5), main + extension has them."""
    alone = {(o.item, o.name): o for o in orderings.check(STUDY)}[CHECKS[-1]]
    both = _by_name()[CHECKS[-1]]
    assert alone.cells["static"].value is None and "no timeout recovery value for static" in alone.why
    assert both.cells["static"].value is not None and both.cells["static"].n_flows >= 5
    assert both.cells["q (high_1_16)"] == alone.cells["q (high_1_16)"]  # the extension adds only static flows


def test_a_check_written_after_a_run_is_marked_in_the_report():
    res = orderings.check(STUDY, WITH_STATIC, BY_WORKLOAD)
    late = [o for o in res if o.registered != orderings.Ordering.registered]
    assert [o.name for o in late] == ["1-s throughput of the long downloads (M3)"]
    text = orderings.report(res)
    assert "1-s throughput of the long downloads (M3) [check written after run F" in text
    assert text.count("[check written") == 1
