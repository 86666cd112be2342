"""`hsrtcp study` on a small experiment (issue 38): with the defaults every cell with a flow
has its value (before: --min-flows 5 made every cell of a three-flow experiment null), no
interval below stats.MIN_INTERVAL_FLOWS flows (before: intervals for n = 1), the note says
why, and the class ids come with readable names and the reasons flows are in no seed class.
Results from the tests/data capture pairs with radio logs written around their packet times
(as in test_cli_study): one standing, one at 300 km/h, one at 200 km/h (in no seed band)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import hsrtcp
from hsrtcp.cli import main
from hsrtcp.study import stats

DATA = Path(__file__).resolve().parents[3] / "tests" / "data"
RMAP = "time=Time:ms,carrier=Op,rat=Net,lac=TAC,cid=CI,speed=Vel:km/h,rsrp=RSRP,rsrq=RSRQ"
CASES = {"data_blackout": 0.0, "small_50k": 300.0, "drops_cubic": 200.0}


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> list[Path]:
    base = tmp_path_factory.mktemp("small")
    dirs = []
    for name, speed in CASES.items():
        client, server = DATA / f"{name}.client.pcap", DATA / f"{name}.server.pcap"
        f = hsrtcp.analyze([client], vantage="client").flows
        first, last = round(float(f["first_ts"].min()) * 1000) - 1000, round(float(f["last_ts"].max()) * 1000) + 1000
        log = base / f"{name}.csv"
        log.write_text("Time,Op,Net,TAC,CI,Vel,RSRP,RSRQ\n"
                       + "".join(f"{ms},M,LTE,1,7,{speed},-80,-10\n" for ms in range(first, last, 2)))
        out = base / name
        assert main(["analyze", "--client", str(client), "--server", str(server), "--radio", str(log),
                     "--radio-map", RMAP, "-o", str(out), "-q", "--no-plot"]) == 0
        dirs.append(out)
    return dirs


def test_defaults_give_values_without_intervals_below_the_documented_n(small, tmp_path, capsys):
    assert main(["study", *map(str, small), "-o", str(tmp_path / "st")]) == 0
    text = capsys.readouterr().out
    dup = pl.read_parquet(tmp_path / "st" / "dupack.parquet")
    for cls in ("static", "high_0", "other"):
        cell = dup.filter(pl.col("flow_class") == cls).row(0, named=True)
        assert cell["n_flows"] == 1 and cell["value"] is not None, cell
        assert cell["value_lo"] is None and cell["value_hi"] is None  # before: an "interval" of one flow
        assert cell["note"] == f"1 flow < {stats.MIN_INTERVAL_FLOWS}: no interval"
    allc = dup.filter(pl.col("flow_class") == "all").row(0, named=True)
    assert allc["n_flows"] == 3 and allc["value_lo"] is None and allc["note"] == "3 flows < 5: no interval"
    # an empty cell still says why
    assert dup.filter(pl.col("flow_class") == "high_1_16").row(0, named=True)["note"] == "no flows"
    # the summary: readable class names beside the ids, why flows are in no seed class
    assert "  high_0: 280-310 km/h, no handoff" in text
    assert "  other: in no seed class" in text and "(other: speed outside the M21 bands (1))" in text
    assert "from 5 flows]" in text


def test_the_classes_table_names_each_class(small):
    classes = hsrtcp.study(small, bootstrap=0).classes
    names = dict(zip(classes["flow_class"], classes["class_name"]))
    assert names["static"] == "standing (<= 5 km/h), no handoff"
    assert names["all"] == "all flows" and names["other"].startswith("in no seed class")


def test_five_flows_get_an_interval():
    rng = stats.rng_for(0, "x")
    k = stats.MIN_INTERVAL_FLOWS
    assert stats.per_flow([1.0, 2.0, 3.0, 4.0, 5.0], min_flows=1, n_boot=200, rng=rng, min_interval=k).value_lo \
        is not None
    four = stats.per_flow([1.0, 2.0, 3.0, 4.0], min_flows=1, n_boot=200, rng=rng, min_interval=k)
    assert four.value == 2.5 and four.value_lo is None and four.median_lo is None
    assert stats.pooled([[1.0, 2.0]] * 4, min_flows=1, n_boot=50, rng=rng, min_interval=k).value_hi is None
    assert stats.ratio([1] * 4, [2] * 4, min_flows=1, n_boot=50, rng=rng, min_interval=k).value_hi is None
    # callers with a rule of their own (hsrtcp.findings' pairs) keep it
    assert stats.per_flow([1.0, 2.0, 3.0], min_flows=3, n_boot=50, rng=rng).value_lo is not None
