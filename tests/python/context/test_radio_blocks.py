"""Handoffs and coverage fed block by block (hsrtcp.context.stream, issue 32) equal the
whole-frame tables bit for bit, with blocks as small as 7 rows (every block end falls
inside a cell, a piece, a gap or a ping-pong), on the committed radio fixtures (lab
radio.csv, a G-NetTrack log, GSMTAP captures) and hand-made multi-carrier logs."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from hsrtcp.context.coverage import coverage
from hsrtcp.context.handoffs import handoffs
from hsrtcp.context.readers import read_radio
from hsrtcp.context.stream import CoverageScan, HandoffScan, Unordered

from .logs import lab_log, one_hz

DATA = Path(__file__).resolve().parents[2] / "data"

FIXTURES = [
    (DATA / "lab_truth/run/radio.csv", "lab"),
    (DATA / "lab_truth/run/scenario/radio.csv", "lab"),
    (DATA / "radio/irish-5g/B_2020.02.14_09.38.22.lines760-1100.csv", "gnettrack"),
    (DATA / "radio/hsr_trip.gsmtap.pcap", "gsmtap"),
    (DATA / "radio/sa_trip.gsmtap.pcap", "gsmtap"),
]


def _blocks(df: pl.DataFrame, n: int):
    return [df.slice(i, n) for i in range(0, len(df), n)]


def _streamed(df: pl.DataFrame, n: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    ho, cov = HandoffScan(), CoverageScan()
    for b in _blocks(df, n):
        ho.add(b)
        cov.add(b)
    return ho.result(), cov.result()


def _check(df: pl.DataFrame, sizes=(1, 7, 64, 10**9)) -> None:
    whole_h, whole_c = handoffs(df), coverage(df)
    for n in sizes:
        h, c = _streamed(df, n)
        assert_frame_equal(h, whole_h, check_exact=True)
        assert_frame_equal(c, whole_c, check_exact=True)


@pytest.mark.parametrize("path,fmt", FIXTURES, ids=lambda x: x.name if isinstance(x, Path) else x)
def test_fixture_blocks_equal_whole(path, fmt):
    df = read_radio(path, fmt).frame.with_columns(pl.lit(None, pl.String).alias("run_id"))
    assert len(df) > 7
    _check(df)


def _two_carriers(tmp_path: Path) -> pl.DataFrame:
    # M: a ping-pong A -> B -> A and a 12-s hole; U: on EDGE a while; rows interleaved by time
    m = one_hz([(0.0, "LTE", 1, 10), (20.5, "LTE", 1, 11), (23.0, "LTE", 1, 10), (50.0, "LTE", 2, 20)],
               90, "M", skip=(60, 72))
    u = one_hz([(0.0, "LTE", 5, 50), (30.0, "EDGE", 6, 60), (45.0, "LTE", 5, 51)], 88, "U")
    rows = sorted(m + u, key=lambda r: (r[0], r[1]))
    return read_radio(lab_log(tmp_path / "r.csv", rows), "lab").frame


def test_multi_carrier_runs_blocks_equal_whole(tmp_path):
    one = _two_carriers(tmp_path)
    h = handoffs(one.with_columns(pl.lit(None, pl.String).alias("run_id")))
    assert h["ping_pong"].sum() == 1 and len(h) == 5  # the log holds what the test is about
    cov = coverage(one.with_columns(pl.lit(None, pl.String).alias("run_id")))
    total = dict(cov.select("carrier", "total_s").iter_rows())
    assert total["M"] == 78.0 and total["*"] == 90.0  # M's 12-s hole is not its time; U covers it
    # two runs one after the other (a second bundle's log), and one run alone
    two = pl.concat([one.with_columns(pl.lit("r1").alias("run_id")),
                     one.with_columns(pl.lit("r2").alias("run_id"), pl.col("ts") + 1000)])
    _check(two, sizes=(1, 2, 7, 13, 10**9))


def test_coverage_of_a_log_not_in_time_order_is_refused(tmp_path):
    one = _two_carriers(tmp_path).with_columns(pl.lit(None, pl.String).alias("run_id"))
    by_carrier = one.sort("carrier", maintain_order=True)  # all of M, then all of U
    assert_frame_equal(_streamed(by_carrier, 10**9)[1], coverage(by_carrier), check_exact=True)
    with pytest.raises(Unordered):
        _streamed(by_carrier, 7)
