"""1,000 flows: the report stays small because the flow table holds every flow but the
drill-down only the top flows (docs/report.md, "Limits"). Its time is measured in bench/ (1 M
flows, bench/README.md), not asserted here.
The input is tests/python/report/many_flows.py: 1,000 copies of five fixture connections
(493,200 real packets) in one capture, analyzed by `hsrtcp analyze`."""

from __future__ import annotations

import polars as pl
import pytest

from hsrtcp.report.build import build_report
from .browser import browser, load
from .common import run
from .many_flows import make_capture


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    base = tmp_path_factory.mktemp("many")
    cap = make_capture(base / "many.pcap", 1000)
    assert run(["analyze", cap, "-q", "--no-plot", "-o", base / "res"]) == 0
    return base


def test_thousand_flows_all_listed_only_the_top_drilled_down(many):
    flows = pl.read_parquet(many / "res" / "flows.parquet")
    assert flows.height == 1000
    info = build_report(many / "res", None, many / "report.html")
    assert info.flows == 1000 and info.detailed == 50
    assert info.bytes < 5_000_000, info.bytes


def test_thousand_flow_report_opens_cleanly(many):
    path = many / "report.html"
    if not path.exists():
        build_report(many / "res", None, path)
    with browser() as d:
        log = load(d, path, timeout=60)
        assert [m for m in log if m["level"] in ("SEVERE", "WARNING")] == []
        assert d.find_element("id", "flow-count").text == "1000 of 1000 flows"
