"""A lab scenario whose handoffs come from a recorded radio log (``[recorded]``,
lab/scenario/recorded.py): the handoff times, cells and network-generation changes of the
log's carrier, in the window, become the path's handoffs (events.csv) and its radio.csv;
outages follow the configured distribution (the published 5G execution times by default)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from hsrtcp.context.handoffs import handoffs
from hsrtcp.context.readers import read_radio
from hsrtcp.lab import scenario
from hsrtcp.lab.scenario import ScenarioError
from hsrtcp.lab.scenario.recorded import OUTAGE_MEDIAN_MS, outage_class

DATA = Path(__file__).resolve().parents[2] / "data" / "radio"
EXCERPT = DATA / "irish-5g" / "B_2020.02.14_09.38.22.lines760-1100.csv"


def _scenario(tmp_path: Path, recorded: str, extra: str = "", duration: float = 300.0) -> Path:
    (tmp_path / "logs").mkdir(exist_ok=True)
    for src in (EXCERPT, DATA / "hsr_trip.gsmtap.pcap"):
        shutil.copy(src, tmp_path / "logs" / src.name)
    p = tmp_path / "s.toml"
    p.write_text(f"""[scenario]
name = "recorded"
duration_s = {duration}
[trip]
speed_kmh = 50
area = "urban"
{extra}
[recorded]
{recorded}
""")
    return p


def _log_handoffs(path: Path, start_s: float = 0.0) -> pl.DataFrame:
    lg = read_radio(path)
    h = lg.handoffs if lg.handoffs is not None else handoffs(lg.frame)
    t0 = lg.frame["ts"].min() + start_s
    return h.with_columns((pl.col("ts") - t0).round(3).alias("t")).filter(pl.col("t") >= 0)


def test_gnettrack_log_gives_the_paths_handoffs_and_generations(tmp_path):
    src = _scenario(tmp_path, f'log = "logs/{EXCERPT.name}"\noutage = "fixed"', duration=300)
    cs = scenario.load(src).compile(tmp_path / "out")
    ev = cs.events()
    ho = ev.filter(pl.col("kind") == "handoff")
    want = _log_handoffs(EXCERPT).filter(pl.col("t") < 300)
    assert ho["t_start"].to_list() == want["t"].to_list()
    assert ho["from_cid"].to_list() == want["old_cid"].to_list()
    assert ho["to_cid"].to_list() == want["new_cid"].to_list()
    assert ho["detail"].to_list() == [";".join(x for x in ("inter_system" if r["system"] == "inter" else "",
                                                           "pingpong" if r["ping_pong"] else "", r["type"]) if x)
                                      for r in want.iter_rows(named=True)]
    # fixed outages: the published medians by type (LTE 33, NSA 43, SCG add 42, SCG release 53.5 ms)
    out = ev.filter(pl.col("kind") == "outage")
    got = [round(e - s, 3) for s, e in zip(out["t_start"], out["t_end"])]
    cls = [outage_class(r["type"], r["old_generation"], r["new_generation"]) for r in want.iter_rows(named=True)]
    assert got == [round(OUTAGE_MEDIAN_MS[c] / 1000, 3) for c in cls]
    assert set(cls) == {"lte", "scg_add", "scg_release", "nsa"}
    # radio.csv says the generations: analyzing the bundle finds the same handoffs
    lg = read_radio(cs.radio_csv, "lab", t0=0.0)
    seen = handoffs(lg.frame)
    assert seen["ts"].round(3).to_list() == ho["t_start"].to_list()
    assert seen.select("old_generation", "new_generation", "type").rows() == \
        want.select("old_generation", "new_generation", "type").rows()
    assert set(lg.frame["generation"]) == {"4G", "5G NSA"}


def test_gsmtap_log_outages_from_its_execution_times(tmp_path):
    """outage = "log": each handoff's outage is the log's command -> complete time; a
    re-establishment takes [handoff] rlf_median_s, an SCG modification is a handoff of the
    path (events.csv) though radio.csv, which names the LTE cell, cannot show it."""
    src = _scenario(tmp_path, 'log = "logs/hsr_trip.gsmtap.pcap"\nstart_s = 5\noutage = "log"',
                    extra="[handoff]\nrlf_median_s = 4.0\noutage_sigma = 0.0\nspike_p = 0.0", duration=110)
    cs = scenario.load(src).compile(tmp_path / "out")
    ev = cs.events()
    ho = ev.filter(pl.col("kind") == "handoff")
    want = pl.read_csv(DATA / "hsr_trip.handoffs.csv")
    t0 = 1714816800.0 + 5.0  # the capture's first message is at its T0 (make_fixtures.py)
    want = want.with_columns((pl.col("ts") - t0).round(3).alias("t")).filter(pl.col("t") < 110)
    assert ho["t_start"].to_list() == want["t"].to_list()
    assert [d.split(";")[-1] for d in ho["detail"]] == want["type"].to_list()
    out = ev.filter(pl.col("kind") == "outage")
    dur = {round(s, 3): round(e - s, 4) for s, e in zip(out["t_start"], out["t_end"])}
    for r in want.iter_rows(named=True):
        if r["type"] == "reestablishment":
            assert dur[r["t"]] == 4.0
        elif r["execution_s"] is not None:
            assert dur[r["t"]] == round(r["execution_s"], 3)
    # a PCI the log does not name (before the first handover, after the re-establishment) gets
    # a number of its own; the others are the log's
    cells = set(cs.radio()["cid"])
    assert {101, 202, 303, 404, 55} <= cells
    assert {c for c in cells if c >= 1_900_000} == {1_900_000, 1_900_001}


def test_lognormal_outages_are_seeded_and_scenario_json_recompiles_without_the_log(tmp_path):
    src = _scenario(tmp_path, f'log = "logs/{EXCERPT.name}"')
    a = scenario.load(src).compile(tmp_path / "a")
    b = scenario.load(src).compile(tmp_path / "b")
    assert a.events_csv.read_bytes() == b.events_csv.read_bytes()
    out = a.events().filter(pl.col("kind") == "outage")
    d = [e - s for s, e in zip(out["t_start"], out["t_end"])]
    assert len(set(round(x, 3) for x in d)) > 5 and all(0.01 < x < 0.2 for x in d)
    # the compiled directory keeps the handoffs: recompiling needs no log
    shutil.rmtree(tmp_path / "logs")
    c = scenario.load(tmp_path / "a").compile(tmp_path / "c")
    assert c.events_csv.read_bytes() == a.events_csv.read_bytes()
    assert c.radio_csv.read_bytes() == a.radio_csv.read_bytes()
    doc = json.loads((tmp_path / "a" / "scenario.json").read_text())
    assert doc["params"]["recorded"]["outage_median_ms"] == OUTAGE_MEDIAN_MS
    assert len(doc["params"]["recorded"]["handoffs"]) == 14


def test_scenario_without_recorded_is_unchanged(tmp_path):
    p = tmp_path / "plain.toml"
    p.write_text('[scenario]\nduration_s = 60\n[trip]\nspeed_kmh = 300\n')
    cs = scenario.load(p).compile(tmp_path / "out")
    assert cs.radio_csv.read_text().splitlines()[0] == "ts,lat,lon,speed_kmh,carrier,rat,lac,cid,rsrp_dbm,rsrq_db"
    assert "recorded" not in json.loads(cs.scenario_json.read_text())["params"]


@pytest.mark.parametrize("recorded,extra,message", [
    ('log = "logs/missing.csv"', "", r"s.toml: \[recorded\] key 'log': .*missing.csv: no such file"),
    ('log = "logs/bad.csv"', "", r"s.toml: \[recorded\] key 'log': .*bad.csv:3: Timestamp 'yesterday' does not match"),
    ('log = "logs/B_2020.02.14_09.38.22.lines760-1100.csv"\ncarrier = "Z"', "",
     r"\[recorded\] key 'carrier': 'Z' is not in the log, which has B"),
    ('log = "logs/B_2020.02.14_09.38.22.lines760-1100.csv"\noutage = "gamma"', "",
     r"\[recorded\] key 'outage' must be one of \['lognormal', 'fixed', 'log'\]"),
    ('log = "logs/B_2020.02.14_09.38.22.lines760-1100.csv"\n[recorded.outage_median_ms]\nlet = 30', "",
     r"\[recorded.outage_median_ms\] unknown key 'let' \(did you mean 'lte'\?\)"),
    ('log = "logs/B_2020.02.14_09.38.22.lines760-1100.csv"', "[[holes]]\nstart_s = 10",
     r"\[\[holes\]\] #1 covers carrier 'M', whose handoffs come from \[recorded\]"),
    ('', "", r"\[recorded\] needs key 'log'"),
])
def test_bad_recorded_tables_name_file_and_key(tmp_path, recorded, extra, message):
    src = _scenario(tmp_path, recorded, extra)
    lines = EXCERPT.read_text().splitlines()[:4]
    lines[2] = "yesterday" + lines[2][lines[2].index(","):]
    (tmp_path / "logs" / "bad.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(ScenarioError, match=message):
        scenario.load(src)
