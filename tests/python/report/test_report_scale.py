"""1,000 flows: the report stays small because the flow table holds every flow but the
drill-down only the top flows (docs/report.md, "Limits"), and its work grows linearly with
the flows. Its time is measured in bench/ (1 M flows, bench/README.md), not asserted here:
the work is counted instead, as the calls of hsrtcp's functions cProfile sees (the same on
every machine).
The input is tests/python/report/many_flows.py: 1,000 copies of five fixture connections
(493,200 real packets) in one capture, analyzed by `hsrtcp analyze`."""

from __future__ import annotations

import cProfile
import pstats
from pathlib import Path

import polars as pl
import pytest

import hsrtcp

from hsrtcp.report.build import ReportInfo, build_report
from .browser import browser, load
from .common import run
from .many_flows import make_capture

OWN = Path(hsrtcp.__file__).parent


def _results(base: Path, n: int) -> Path:
    """`hsrtcp analyze` of n flows into base/resNNNN (names of one length: every flow row
    holds its capture's path, so the page's bytes a flow depend on it)."""
    cap = make_capture(base / f"many{n:04d}.pcap", n)
    assert run(["analyze", cap, "-q", "--no-plot", "-o", base / f"res{n:04d}"]) == 0
    return base / f"res{n:04d}"


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    base = tmp_path_factory.mktemp("many")
    _results(base, 1000).rename(base / "res")
    return base


def test_thousand_flows_all_listed_only_the_top_drilled_down(many):
    flows = pl.read_parquet(many / "res" / "flows.parquet")
    assert flows.height == 1000
    info = build_report(many / "res", None, many / "report.html")
    assert info.flows == 1000 and info.detailed == 50
    assert info.bytes < 5_000_000, info.bytes


def _counted(res: Path, out: Path) -> tuple[int, int, ReportInfo]:
    """build_report under cProfile: (calls of hsrtcp's own functions, calls of the per-flow
    drill-down flow_charts, the report's info). Only hsrtcp's functions: the report's own
    steps, not how a library version happens to implement its calls."""
    prof = cProfile.Profile()
    prof.enable()
    try:
        info = build_report(res, None, out)
    finally:
        prof.disable()
    stats = pstats.Stats(prof).stats
    own = sum(s[1] for (file, _line, _name), s in stats.items() if OWN in Path(file).parents)
    drilled = sum(s[1] for (_file, _line, name), s in stats.items() if name == "flow_charts")
    return own, drilled, info


def test_report_work_grows_linearly_with_the_flows(tmp_path):
    """500, 1,000 and 2,000 flows: the second 1,000 flows cost the report twice the calls of
    hsrtcp's functions of the 500 before them (measured: 8,500 and 17,000, 17 a flow, over
    18,260 for the page's fixed parts) and twice the bytes (245,683 and 491,951); a step per
    flow that looks at every flow would make it four times. The drill-down stays at the top
    50 flows."""
    res = {n: _results(tmp_path, n) for n in (500, 1000, 2000)}
    build_report(res[500], None, tmp_path / "warm.html")  # first-use work (147 calls) is not the flows'
    seen = {n: _counted(r, tmp_path / f"r{n}.html") for n, r in res.items()}
    assert [(s[2].flows, s[2].detailed, s[1]) for s in seen.values()] == [(n, 50, 50) for n in res]
    calls = {n: s[0] for n, s in seen.items()}
    size = {n: s[2].bytes for n, s in seen.items()}
    first, second = calls[1000] - calls[500], calls[2000] - calls[1000]
    assert 0 < second <= 2.2 * first, calls
    grew = size[1000] - size[500], size[2000] - size[1000]
    assert 0 < grew[1] <= 2.2 * grew[0], size


def test_thousand_flow_report_opens_cleanly(many):
    path = many / "report.html"
    if not path.exists():
        build_report(many / "res", None, path)
    with browser() as d:
        log = load(d, path, timeout=60)
        assert [m for m in log if m["level"] in ("SEVERE", "WARNING")] == []
        assert d.find_element("id", "flow-count").text == "1000 of 1000 flows"
