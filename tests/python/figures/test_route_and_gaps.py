"""Issue 33: the route length from a radio log's GPS fixes, the device label of seed 000 Table I,
and every missing line of the gallery sorted into data-limited and tool gaps."""

from __future__ import annotations

import math
import re
import tomllib
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from hsrtcp.cli import main
from hsrtcp.figures import build
from hsrtcp.figures.made import KINDS, Gap, kind_of
from hsrtcp.figures.route import route_lengths

ROOT = Path(__file__).resolve().parents[3]
LAB = ROOT / "tests" / "data" / "lab_truth"
#: 1 degree of a meridian on the mean Earth radius 6371.0088 km
DEG_KM = math.pi / 180 * 6371.0088


def _meridian(n_deg: float = 1.0, step: float = 0.01, dt: float = 15.0) -> pl.DataFrame:
    """Fixes every ``step`` degrees north along 116 E from 39 N, ``dt`` s apart (0.01 deg in
    15 s: 266.9 km/h), with 300-km/h speed samples."""
    k = round(n_deg / step)
    lat = 39.0 + step * np.arange(k + 1)
    return pl.DataFrame({"result": "r", "run_id": "a", "ts": dt * np.arange(k + 1), "lat": lat,
                         "lon": np.full(k + 1, 116.0), "speed_kmh": np.full(k + 1, 300.0)})


def test_a_degree_of_meridian_is_111_19_km():
    r = route_lengths(_meridian())
    assert r.height == 1 and r["fixes"][0] == 101 and r["glitches"][0] == 0
    assert r["route_km"][0] == pytest.approx(DEG_KM, abs=1e-6)
    assert r["route_km"][0] == pytest.approx(111.19, abs=0.01)


def test_a_jump_faster_than_the_speed_samples_is_skipped_and_counted():
    m = _meridian()
    # a fix 0.5 deg (55.6 km) off the line between two fixes 15 s apart, and one with no position
    bad = pl.DataFrame({"result": "r", "run_id": "a", "ts": [502.5, 600.5], "lat": [39.84, None],
                        "lon": [116.5, None], "speed_kmh": [300.0, 300.0]})
    r = route_lengths(pl.concat([m, bad]).sort("ts"))
    assert r["glitches"][0] == 1 and r["fixes"][0] == 102  # the fix with no position is not one
    assert r["route_km"][0] == pytest.approx(DEG_KM, abs=1e-6)


def test_a_glitch_as_the_first_fix_is_skipped():
    m = _meridian()
    first = pl.DataFrame({"result": "r", "run_id": "a", "ts": [-15.0], "lat": [45.0], "lon": [116.0],
                          "speed_kmh": [300.0]})
    r = route_lengths(pl.concat([first, m]))
    assert r["glitches"][0] == 1
    assert r["route_km"][0] == pytest.approx(DEG_KM, abs=1e-6)


def test_without_speed_samples_the_ceiling_is_600_kmh():
    m = _meridian().drop("speed_kmh")
    # 2 deg in 7.5 s: a glitch; 0.02 deg (2.22 km) in 15 s is 534 km/h, below 600 x 1.25: kept
    fast = pl.DataFrame({"result": "r", "run_id": "a", "ts": [1507.5, 1515.0, 1530.0],
                         "lat": [42.0, 40.02, 40.04], "lon": [116.0, 116.0, 116.0]})
    r = route_lengths(pl.concat([m, fast], how="diagonal_relaxed"))
    assert r["glitches"][0] == 1
    assert r["route_km"][0] == pytest.approx(1.04 * DEG_KM, abs=1e-6)


def test_a_time_logged_by_two_carriers_counts_once_and_runs_apart():
    m = _meridian()
    twice = pl.concat([m, m.with_columns(pl.lit(116.001).alias("lon"))])  # carrier 2: 85 m east, same times
    other = _meridian(0.5).with_columns(pl.lit("b").alias("run_id"))
    r = route_lengths(pl.concat([twice, other])).sort("run_id")
    assert r["run_id"].to_list() == ["a", "b"]
    assert r["route_km"].to_list() == pytest.approx([DEG_KM, DEG_KM / 2], abs=1e-6)


def test_the_lab_run_travels_speed_times_time():
    """The lab scenario compiler places the train at speed x time; its radio log gives it back."""
    speed = tomllib.loads((LAB / "truth.toml").read_text())["trip"]["speed_kmh"]
    radio = pl.read_csv(LAB / "run" / "radio.csv").with_columns(pl.lit("lab").alias("result"),
                                                                pl.lit("run").alias("run_id"))
    span = radio["ts"].max() - radio["ts"].min()
    r = route_lengths(radio)
    assert r["glitches"][0] == 0
    # positions are written to 1e-6 degree (0.1 m)
    assert r["route_km"][0] == pytest.approx(speed * span / 3600, abs=0.001)


def _coverage_missing(gallery: Path) -> dict[str, str]:
    out = {}
    for line in (gallery / "coverage.md").read_text().splitlines():
        m = re.match(r"^\| (seed\S+) \| .*? \| (made|partly|not made|drawing) \| .*? \| (.*) \|$", line)
        if m:
            out[m.group(1)] = m.group(3)
    return out


def test_the_route_tables_of_the_committed_gallery(committed):
    gallery, dirs = committed
    for item in ("seed000-table-II", "seed003-table-I", "seed004-table-I"):
        text = (gallery / f"{item}.md").read_text()
        assert "Route length per run" in text, item
        assert re.search(r"\| lab_truth_run \| run \| 12 \| 0 \| 9 \| 0\.75 \|", text), item
        assert re.search(r"\| lab_static_run \| static_run \| 10 \| 0 \| 9 \| 0 \|", text), item
        assert "route length" not in _coverage_missing(gallery)[item], item


def test_every_missing_line_has_a_kind_and_the_summary_counts_them(committed):
    gallery_dir, dirs = committed
    from hsrtcp.figures.committed import STUDY, committed_tables

    for results in ([], [*dirs.values(), *committed_tables(ROOT)]):  # the tables alone, and with RESULTS
        g = build(ROOT / STUDY, results)
        gaps = [x for o in g.outcomes for x in o.gaps()]
        assert gaps and all(isinstance(x, Gap) and x.kind in KINDS for x in gaps), \
            [x for x in gaps if not isinstance(x, Gap)]
        counts = g.gap_counts()
        assert sum(counts.values()) == len(gaps)
        assert f"missing lines: {counts['data']} data-limited, {counts['tool']} tool gap(s)" in g.coverage()
        for o in g.outcomes:
            tagged = re.findall(r"\((data|tool)\) ", _coverage_missing_of(g.coverage(), o.item.id))
            assert tagged == [k for k in KINDS if any(kind_of(x) == k for x in o.gaps())], o.item.id
    doc = (ROOT / "docs" / "seeds.md").read_text()
    m = re.search(r"missing lines: (\d+) data-limited, (\d+) tool gap\(s\)", doc)
    assert m and (int(m.group(1)), int(m.group(2))) == (counts["data"], counts["tool"])
    # the campaign's known limits are data
    by = {o.item.id: o for o in g.outcomes}
    assert [x.kind for x in by["seed000-table-III"].gaps()] == ["data"]          # no 3G flow
    assert {x.kind for x in by["seed000-fig-01"].gaps()} == {"data"}             # no class b
    assert [x.kind for x in by["seed004-fig-02"].gaps()] == ["data"]             # the set-up drawing


def test_footprints_are_every_runs_fixes(committed):
    """seed004-fig-02: one trace per run with positions, each the run's radio.csv rows."""
    out, _ = committed
    got = pl.read_csv(out / "seed004-fig-02.csv")
    assert (out / "seed004-fig-02.pdf").stat().st_size > 1000
    for name, run in (("lab_truth_run", "run"), ("lab_static_run", "static_run")):
        want = pl.read_csv(ROOT / "tests" / "data" / name.replace("_run", "") / "run" / "radio.csv")
        r = got.filter(pl.col("run") == f"{name} ({run})")
        t = r["ts"] - r["ts"][0]  # radio.parquet is on the capture clock: compare times from the first fix
        assert t.to_list() == pytest.approx((want["ts"] - want["ts"][0]).to_list(), abs=1e-6)
        assert r["lat"].to_list() == pytest.approx(want["lat"].to_list(), abs=1e-9)
        assert r["lon"].to_list() == pytest.approx(want["lon"].to_list(), abs=1e-9)
    assert got["run"].n_unique() == 2


def _coverage_missing_of(text: str, item: str) -> str:
    m = re.search(rf"^\| {re.escape(item)} \| .*? \| (?:made|partly|not made|drawing) \| .*? \| (.*) \|$", text, re.M)
    return m.group(1) if m else ""


def test_a_gap_kind_is_data_or_tool():
    with pytest.raises(ValueError):
        Gap("x", "other")


def test_device_labels_reach_table_i(tmp_path):
    """hsrtcp analyze --label phone=... --label os=... through hsrtcp study to seed 000 Table I;
    a run analyzed without them is a row of its own with no device."""
    a, b, s = tmp_path / "a", tmp_path / "b", tmp_path / "s"
    assert main(["analyze", str(LAB / "run"), "--label", "phone=Xiaomi Mi 6", "--label", "os=Android 8.0",
                 "-o", str(a), "-q"]) == 0
    assert main(["analyze", str(ROOT / "tests" / "data" / "lab_static" / "run"), "-o", str(b), "-q"]) == 0
    assert main(["study", str(a), str(b), "-o", str(s), "-q"]) == 0
    flows = pl.read_parquet(s / "study_flows.parquet")
    labelled = flows.filter(pl.col("phone") == "Xiaomi Mi 6").height
    assert 0 < labelled < flows.height
    (o,) = build(s, only=["seed000-table-I"]).outcomes
    assert o.status == "made", o.gaps()
    d = o.made.data
    assert d.columns[:2] == ["phone", "os"]
    assert d.filter(pl.col("phone") == "Xiaomi Mi 6")["os"].to_list() == ["Android 8.0"]
    assert d.filter(pl.col("phone") == "Xiaomi Mi 6")["flows"].sum() == labelled
    assert d["flows"].sum() == flows.height
    assert "| Xiaomi Mi 6 | Android 8.0 |" in o.made.markdown
    # without the labels, the phone is data the inputs lack
    (o,) = build(ROOT / "tests" / "data" / "study", only=["seed000-table-I"]).outcomes
    assert o.status == "partly" and [x.kind for x in o.gaps()] == ["data"] and "phone model" in o.gaps()[0]


def test_route_labels_reach_the_route_tables(tmp_path):
    """hsrtcp analyze --label route=... --label stations=... through hsrtcp study to the tables
    of HSR lines (seed 000 Table II, seed 004 Table I) and of the scenarios' location (seed 003
    Table I), grouped by them; without them the place is a data gap that names the labels (no
    radio log names a place, so before the labels were read no input could fill it)."""
    a, s = tmp_path / "a", tmp_path / "s"
    assert main(["analyze", str(LAB / "run"), "--label", "route=Beijing-Tianjin", "--label",
                 "stations=Beijing South - Tianjin", "-o", str(a), "-q"]) == 0
    assert main(["study", str(a), "-o", str(s), "-q"]) == 0
    flows = pl.read_parquet(s / "study_flows.parquet").height
    items = ["seed000-table-II", "seed003-table-I", "seed004-table-I"]
    for o in build(s, [a], only=items).outcomes:
        assert o.status == "made", (o.item.id, o.gaps())
        d = o.made.data
        assert d.columns[:2] == ["route", "stations"], o.item.id
        assert d["route"].to_list() == ["Beijing-Tianjin"] * d.height and d["flows"].sum() == flows
        assert "| Beijing-Tianjin | Beijing South - Tianjin |" in o.made.markdown
    for o in build(ROOT / "tests" / "data" / "study", only=items).outcomes:
        places = [x for x in o.gaps() if "label keys read: route, line, location, stations" in x]
        assert len(places) == 1 and places[0].kind == "data", (o.item.id, o.gaps())
