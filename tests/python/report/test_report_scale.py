"""1,000 flows: the report is written in under 10 s (issue 18) and stays small, because the
flow table holds every flow but the drill-down only the top flows (docs/report.md, "Limits").
The input is tests/python/report/many_flows.py: 1,000 copies of five fixture connections
(493,200 real packets) in one capture, analyzed by `hsrtcp analyze`."""

from __future__ import annotations

import time

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


def test_thousand_flows_under_ten_seconds(many):
    flows = pl.read_parquet(many / "res" / "flows.parquet")
    assert flows.height == 1000
    start = time.perf_counter()
    info = build_report(many / "res", None, many / "report.html")
    took = time.perf_counter() - start
    assert info.flows == 1000 and info.detailed == 50
    assert took < 10.0, took
    assert info.bytes < 5_000_000, info.bytes
    print(f"1,000 flows: {took:.2f} s, {info.bytes / 1e6:.2f} MB")


def test_thousand_flow_report_opens_cleanly(many):
    path = many / "report.html"
    if not path.exists():
        build_report(many / "res", None, path)
    with browser() as d:
        log = load(d, path, timeout=60)
        assert [m for m in log if m["level"] in ("SEVERE", "WARNING")] == []
        assert d.find_element("id", "flow-count").text == "1000 of 1000 flows"
