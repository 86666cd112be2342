"""Mahimahi traces in scenarios: reading, conversion to Rattan rates, export (mahimahi.py).

Fixtures: the real Saturator traces shipped in the repository's data/mahimahi (origin and
license in its README: Mahimahi's traces/ directory, NSDI 2013 recordings); they are always
there, so no test skips for want of them. Small bad traces are written by the tests.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hsrtcp.lab import scenario as sc_mod
from hsrtcp.lab.scenario import mahimahi as mm
from hsrtcp.lab.scenario.config import ScenarioError
from hsrtcp.lab.scenario.traces import read_trace

REPO = Path(__file__).resolve().parents[3]
DATA = REPO / "data" / "mahimahi"
TRACES = sorted(DATA.glob("*.down")) + sorted(DATA.glob("*.up"))


def _raw_lines(path: Path) -> list[int]:
    return [int(x) for x in path.read_text().split()]


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_parse_matches_the_file(path):
    ts = mm.read(path)
    raw = _raw_lines(path)
    assert len(ts) == len(raw) and ts[0] == raw[0] and ts[-1] == raw[-1]
    assert (np.diff(ts) >= 0).all()


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_bytes_per_second_equal_the_opportunities(path):
    ts = mm.read(path)
    dur = mm.period_ms(ts)
    rates = mm.rates_bps(ts, dur, 10)
    assert rates.min() >= 1  # no zero rate can reach Rattan (rattan#194)
    got = mm.fluid_bytes_per_bin(rates, 10, dur, 1000)
    # independent count: opportunities per whole second straight from the file's lines
    raw = np.array(_raw_lines(path))
    want = np.bincount(raw[raw < dur] // 1000, minlength=len(got))[: len(got)] * 1500
    empty_10ms = np.bincount(raw[raw < dur] // 10, minlength=len(rates))[: len(rates)] == 0
    floor = empty_10ms.sum() * 10 / 8000.0  # bytes the 1 bit/s floor adds (< 1 byte/s)
    assert np.allclose(got, want, rtol=0, atol=floor + 0.01)  # 0.01: float rounding
    assert abs(got.sum() - want.sum()) <= floor + 0.01


def test_wraps_like_mm_link():
    ts = mm.read(DATA / "Verizon-LTE-short.down")
    per = mm.period_ms(ts)  # 140000: whole seconds
    c = mm.counts(ts, 2 * per, 1000)
    n = per // 1000
    # the second repetition starts one period later; its first second also gets the
    # opportunities stamped exactly at the period (the last line) of the first one
    first = (ts < 1000).sum() + (ts == per).sum()
    assert c[n] == first and (c[n + 1:2 * n] == c[1:n]).all()
    assert c[:n].sum() == (ts < per).sum()


def test_bad_traces_name_file_and_line(tmp_path):
    cases = {"text": "5\n7\nabc\n", "neg": "1\n-4\n", "back": "3\n9\n8\n", "empty": "\n", "zero": "0\n0\n"}
    msgs = {}
    for name, body in cases.items():
        f = tmp_path / f"{name}.trace"
        f.write_text(body)
        with pytest.raises(ScenarioError) as ei:
            mm.read(f)
        msgs[name] = str(ei.value)
    assert f"{tmp_path / 'text.trace'}:3: not a millisecond timestamp" in msgs["text"]
    assert ":2: negative" in msgs["neg"] and ":3: timestamp 8 goes back" in msgs["back"]
    assert "empty" in msgs["empty"] and "last timestamp must be > 0" in msgs["zero"]


def test_export_round_trip():
    # 2 Mbit/s for 1 s, held (1 bps) 0.5 s, 12 Mbit/s for 0.5 s
    s, e, bw = np.array([0, 1000, 1500]), np.array([1000, 1500, 2000]), np.array([2_000_000, 1, 12_000_000])
    ts = mm.from_segments(s, e, bw)
    assert len(ts) == (250_000 + 750_000) // 1500
    assert not ((ts > 1000) & (ts < 1500)).any()  # the held outage delivers nothing
    back = mm.bytes_per_bin(ts, 2000, 500)
    assert np.allclose(back, [125_000, 125_000, 0, 750_000], atol=1500)


def _scenario(tmp_path, **carrier):
    return {"scenario": {"name": "mm", "duration_s": 30.0},
            "trip": {"speed_kmh": 0.0}, "link": {"loss_down": 0.0, "loss_up": 0.0},
            "carriers": [{"name": "V", **carrier}]}


def test_scenario_carrier_from_a_trace(tmp_path):
    d = _scenario(tmp_path, trace_down=str(DATA / "Verizon-LTE-short.down"))
    cs = sc_mod.load(d).compile(tmp_path / "out")
    runs = read_trace(cs.trace_file("bw", "down", 1))
    assert min(int(v) for _, v in runs) >= 1
    tl = cs.timeline(1.0).filter(direction="down")
    want = mm.bytes_per_bin(mm.read(DATA / "Verizon-LTE-short.down"), 30_000, 1000) * 8
    assert np.allclose(tl["bw_bps"].to_numpy(), want, rtol=1e-6, atol=1)
    # the up direction still comes from the radio model
    assert tl.height == 30
    assert json.loads(cs.scenario_json.read_text())["params"]["carriers"][0]["trace_step_ms"] == 10


def test_trace_with_handoff_overlay(tmp_path):
    d = {"scenario": {"name": "mm-ho", "duration_s": 60.0, "seed": 3}, "trip": {"speed_kmh": 300.0},
         "handoff": {"outage_median_s": 1.0, "outage_sigma": 0.1, "rlf_p": 0.0},
         "carriers": [{"name": "V", "trace_down": str(DATA / "TMobile-LTE-short.down")}]}
    cs = sc_mod.load(d).compile(tmp_path / "out")
    seg = cs.segments().filter(direction="down")
    ev = cs.events().filter(kind="outage")
    assert ev.height > 0
    for a, b in zip(ev["t_start"], ev["t_end"]):
        inside = seg.filter((seg["t_start"] >= a) & (seg["t_end"] <= b))
        assert inside.height and (inside["bw_bps"] == 1).all()
    # outside the outages the trace's rates are kept
    rates = mm.rates_bps(mm.read(DATA / "TMobile-LTE-short.down"), 60_000, 10)
    out = seg.filter(seg["bw_bps"] > 1)
    idx = (out["t_start"].to_numpy() * 1000 + 1e-6).astype(int) // 10
    assert (out["bw_bps"].to_numpy() == rates[idx]).all()


def test_missing_trace_is_an_input_error(tmp_path):
    with pytest.raises(ScenarioError, match=r"\[\[carriers\]\] #1 key 'trace_down': Mahimahi trace .* not found"):
        sc_mod.load(_scenario(tmp_path, trace_down=str(tmp_path / "nope.down")))
    with pytest.raises(ScenarioError, match="trace_step_ms"):
        sc_mod.load(_scenario(tmp_path, trace_step_ms=0))


def test_relative_trace_path_and_export_cli(tmp_path):
    import shutil
    import subprocess
    import sys

    shutil.copy(DATA / "Verizon-LTE-short.down", tmp_path / "v.down")
    (tmp_path / "s.toml").write_text('[scenario]\nduration_s = 20\n[trip]\nspeed_kmh = 0\n'
                                     '[[carriers]]\nname = "V"\ntrace_down = "v.down"\n')
    env = {"PYTHONPATH": str(Path(sc_mod.__file__).resolve().parents[3]), "PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, "-m", "hsrtcp", "scenario", "generate", str(tmp_path / "s.toml"),
                        "-o", str(tmp_path / "out")], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-m", "hsrtcp", "scenario", "export-mahimahi", str(tmp_path / "out"),
                        "-o", str(tmp_path / "mm")], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    exported = mm.read(tmp_path / "mm" / "p1.down")
    want = mm.bytes_per_bin(mm.read(tmp_path / "v.down"), 20_000, 1000)
    got = mm.bytes_per_bin(exported, 20_000, 1000)
    # the export releases a packet once its 1500 bytes are available (rounded up to the ms):
    # it lags the trace by less than two packets at any second boundary, and loses none
    assert np.abs(np.cumsum(got) - np.cumsum(want)).max() <= 3000
    assert want.sum() - 1500 <= got.sum() <= want.sum()
    assert (tmp_path / "mm" / "p1.up").is_file()
    r = subprocess.run([sys.executable, "-m", "hsrtcp", "scenario", "export-mahimahi", str(tmp_path / "nope"),
                        "-o", str(tmp_path / "mm2")], capture_output=True, text=True, env=env)
    assert r.returncode == 3 and "Traceback" not in r.stderr


def test_shipped_traces_are_present_with_their_origin():
    # the project's traces ship with it (data/mahimahi): named, checksummed, licensed
    import hashlib
    import re

    readme = (DATA / "README.md").read_text(encoding="utf-8")
    assert "ravinet/mahimahi" in readme and "ae477d43" in readme and "GPL-3.0-or-later" in readme
    notice = (DATA / "LICENSE.md").read_text(encoding="utf-8")
    assert "https://www.gnu.org/licenses/gpl-3.0.txt" in notice
    listed = dict(re.findall(r"^\| `([\w.-]+\.(?:down|up))` \|.*`([0-9a-f]{64})` \|$", readme, re.M))
    assert {"ATT-LTE-driving.down", "ATT-LTE-driving.up", "Verizon-LTE-short.down",
            "TMobile-LTE-short.down"} <= set(listed)
    assert sorted(listed) == sorted(p.name for p in TRACES)
    for name, digest in listed.items():
        assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == digest, name
