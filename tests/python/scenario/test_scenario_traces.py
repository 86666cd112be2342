"""The trace files rattan reads: never 0 bit/s, whole window covered, outages aligned across
bandwidth, delay and loss, and the events.csv ground truth applied exactly."""

import json
import re

import numpy as np
import pytest

from hsrtcp.lab.scenario.impair import stationary_loss
from hsrtcp.lab.scenario.traces import parse_bandwidth, parse_duration

_NUM_UNIT = re.compile(r"^(\d+)(bps|ms|us)$")


def _raw(path):
    """Parse a compiler-written trace independently of the package: [(start_ms, end_ms, value)]."""
    doc = json.loads(path.read_text())
    (kind, body), = doc.items()
    assert body["count"] == 1
    out, t = [], 0
    for item in body["pattern"]:
        (ik, seg), = item.items()
        n, unit = _NUM_UNIT.match(seg["duration"]).groups()
        assert unit == "ms"
        d = int(n)
        if ik == "StaticBwConfig":
            v, u = _NUM_UNIT.match(seg["bw"]).groups()
            assert u == "bps"
            v = int(v)
        elif ik == "StaticDelayConfig":
            v, u = _NUM_UNIT.match(seg["delay"]).groups()
            assert u == "us"
            v = int(v)
        else:
            v = tuple(seg["loss"])
        out.append((t, t + d, v))
        t += d
    return out


def _at(runs, t_ms):
    for s, e, v in runs:
        if s <= t_ms < e:
            return v
    raise AssertionError(f"t={t_ms} ms outside the trace")


def test_traces_cover_window_and_never_zero(compiled_examples):
    for name, cs in compiled_examples.items():
        dur_ms = round(cs.duration_s * 1000)
        for p in range(1, cs.paths + 1):
            for d in ("down", "up"):
                bw = _raw(cs.trace_file("bw", d, p))
                dl = _raw(cs.trace_file("delay", d, p))
                ls = _raw(cs.trace_file("loss", d, p))
                for runs in (bw, dl, ls):
                    assert runs[-1][1] == dur_ms, name
                    assert all(e > s for s, e, _ in runs)
                assert min(v for *_, v in bw) >= 1, name          # rattan#194
                assert '"0bps"' not in cs.trace_file("bw", d, p).read_text()
                assert all(0.0 <= x <= 1.0 for *_, v in ls for x in v)
                assert min(v for *_, v in dl) >= 1000  # at least 1 ms one-way


def test_outages_aligned_in_both_directions(compiled_examples):
    checked = {"held": 0, "dropped": 0, "flushed": 0}
    for name, cs in compiled_examples.items():
        ev = cs.events()
        hp = json.loads(cs.scenario_json.read_text())["params"]["handoff"]
        for r in ev.filter(ev["kind"] == "outage").iter_rows(named=True):
            s, e = round(r["t_start"] * 1000), round(r["t_end"] * 1000)
            if e <= s:
                continue
            probes = np.linspace(s, e - 1, 7).round().astype(int)
            for d in ("down", "up"):
                bw = _raw(cs.trace_file("bw", d, r["path"]))
                ls = _raw(cs.trace_file("loss", d, r["path"]))
                # channel v6: a dropped outage's uplink may be held, its downlink flushed
                if r["outage_kind"] == "held" or (d == "up" and hp.get("dropped_uplink") == "held"):
                    assert all(_at(bw, t) == 1 for t in probes), (name, r)
                    # the trace changes exactly at the outage start (unless the previous
                    # millisecond is itself inside another outage)
                    assert any(seg[0] == s for seg in bw) or _at(bw, s - 1) == 1, (name, r)
                else:
                    assert all(_at(ls, t) == (1.0,) for t in probes), (name, r)
                    assert any(seg[0] == s for seg in ls) or _at(ls, s - 1) == (1.0,), (name, r)
                    if hp.get("dropped_flush_bps"):
                        assert all(_at(bw, t) == hp["dropped_flush_bps"] for t in probes), (name, r)
                        checked["flushed"] += 1
            checked[r["outage_kind"]] += 1
    assert checked["held"] > 20 and checked["dropped"] > 5 and checked["flushed"] > 0


def test_bursts_and_spikes_applied(compiled_examples):
    n_burst = n_spike = 0
    for name, cs in compiled_examples.items():
        doc = json.loads(cs.scenario_json.read_text())
        hp, base_us = doc["params"]["handoff"], doc["params"]["link"]["base_owd_ms"] * 1000
        ev = cs.events()
        outages = [(r["path"], r["t_start"], r["t_end"]) for r in ev.filter(ev["kind"] == "outage").iter_rows(named=True)]
        for r in ev.filter(ev["kind"] == "loss_burst").iter_rows(named=True):
            mid = (r["t_start"] + r["t_end"]) / 2
            if any(p == r["path"] and a <= mid < b for p, a, b in outages) or r["t_end"] - r["t_start"] < 0.01:
                continue  # overlapped by the next handoff's outage, which wins
            for d in hp["burst_directions"]:
                ls = _raw(cs.trace_file("loss", d, r["path"]))
                assert _at(ls, round(mid * 1000)) == tuple(hp["burst_pattern"]), (name, r)
            n_burst += 1
        for r in ev.filter(ev["kind"] == "rtt_spike").iter_rows(named=True):
            mid = round((r["t_start"] + r["t_end"]) / 2 * 1000)
            for d in ("down", "up"):
                dl = _raw(cs.trace_file("delay", d, r["path"]))
                assert _at(dl, mid) >= base_us + r["extra_rtt_s"] / 2 * 1e6 - 1, (name, r)
            n_spike += 1
    assert n_burst > 20 and n_spike > 10


def test_coverage_hole_is_2g_rate(compiled_examples):
    cs = compiled_examples["coverage-hole"]
    ev = cs.events()
    hole = ev.filter(ev["kind"] == "coverage_hole").row(0, named=True)
    assert hole["t_end"] - hole["t_start"] == pytest.approx(129.0)
    outages = ev.filter(ev["kind"] == "outage")
    bw = _raw(cs.trace_file("bw", "down", 1))
    for t in np.arange(hole["t_start"] + 0.5, hole["t_end"], 1.0):
        if any(a <= t < b for a, b in zip(outages["t_start"], outages["t_end"])):
            continue
        assert 20000 <= _at(bw, round(t * 1000)) <= 30000


def test_stationary_loss_matches_simulation():
    rng = np.random.default_rng(0)
    for pat in ([0.0075], [0.1, 0.9, 0.9, 0.9, 0.9, 0.0], [0.2, 0.5], [0.05, 1.0, 0.0]):
        n, run, drops = 400_000, 0, 0
        u = rng.uniform(size=n)
        for x in u:  # rattan's chain: P(drop | k previous consecutive drops) = pat[min(k, len-1)]
            if x < pat[min(run, len(pat) - 1)]:
                drops += 1
                run += 1
            else:
                run = 0
        assert stationary_loss(pat) == pytest.approx(drops / n, abs=3e-3), pat


def test_human_unit_parsers():
    assert parse_bandwidth("12.345678Mbps") == pytest.approx(12_345_678)
    assert parse_bandwidth("1Gbps 200Mbps") == 1_200_000_000
    assert parse_bandwidth("25kbps") == 25000
    assert parse_duration("1s,530ms,500μs") == pytest.approx(1.5305)
    assert parse_duration("30ms") == pytest.approx(0.03)
    with pytest.raises(ValueError):
        parse_bandwidth("12 parsecs")
    with pytest.raises(ValueError):
        parse_duration("")


def test_timeline_is_the_segment_integral(compiled_examples):
    cs = compiled_examples["two-carriers"]
    tl = cs.timeline()
    seg = cs.segments()
    assert tl.height == cs.paths * 2 * int(np.ceil(cs.duration_s))
    for p in (1, 2):
        for d in ("down", "up"):
            g = seg.filter((seg["path"] == p) & (seg["direction"] == d))
            bits = ((g["t_end"] - g["t_start"]) * g["bw_bps"]).sum()
            t = tl.filter((tl["path"] == p) & (tl["direction"] == d))
            assert t["bw_bps"].sum() == pytest.approx(bits, rel=1e-9)
            # an outage bin is flagged, and a bin entirely inside a held outage has 1 bit/s
            ev = cs.events()
            for r in ev.filter((ev["kind"] == "outage") & (ev["path"] == p)).iter_rows(named=True):
                k = int(r["t_start"])
                assert t.filter(t["t"] == float(k))["outage"].item() is True
                for kk in range(int(np.ceil(r["t_start"])), int(np.floor(r["t_end"]))):
                    row = t.filter(t["t"] == float(kk))
                    if r["outage_kind"] == "held":
                        assert row["bw_bps"].item() == 1.0
