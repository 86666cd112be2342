"""`hsrtcp compare` over a tiny campaign (issue 38): the per-run and per-arm numbers equal
what is computed by hand from the bundles (captures, ground-truth events, traces), the
post-outage numbers count only the outages on the flow's own path (the two-carrier
scenario's path-2 outages are not held against a flow on path 1), and the paired effect is
the geometric mean of the paired goodput ratios."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from hsrtcp.cli import main
from hsrtcp.lab import campaign
from hsrtcp.testing import pcapio

pytestmark = pytest.mark.netns

SCEN = """
[scenario]
name = "tiny"
seed = 11
duration_s = 12
[trip]
speed_kmh = 300
area = "rural"
[link]
base_owd_ms = 20
loss_down = 0.0
loss_up = 0.0
[handoff]
rlf_p = 0.0
outage_median_s = 0.8
outage_sigma = 0.3
spike_p = 0.0
times_s = [3.0, 6.5]
[[carriers]]
name = "A"
peak_down_bps = 10e6
[[carriers]]
name = "B"
peak_down_bps = 10e6
"""

CAMP = """
[campaign]
name = "tiny"
scenarios = ["s.toml"]
ccs = ["cubic", "reno"]
repetitions = 2
reseed = true
[[flows]]
type = "duration"
duration_s = 10
path = 1
"""


def _trace(path: Path, key: str) -> list[tuple[float, float, str]]:
    """(start s, end s, value) of a compiled netem-trace file, read here on its own."""
    doc = json.loads(path.read_text())
    (body,) = doc.values()
    out, t = [], 0.0
    for item in body["pattern"]:
        (seg,) = item.values()
        d = float(seg["duration"].removesuffix("ms")) / 1000
        out.append((t, t + d, seg[key]))
        t += d
    return out


def _by_hand(bundle: Path) -> dict:
    m = json.loads((bundle / "manifest.json").read_text())
    srv = list(pcapio.read_tcp(bundle / "capture" / "server.pcap"))
    phone = list(pcapio.read_tcp(bundle / "capture" / "phone_p1.pcap"))
    isn = next(p for p in srv if p.syn and p.sport == 5201).seq
    acked = (max(p.ack for p in phone if p.dport == 5201 and p.has_ack) - isn - 1) % 2**32
    goodput = acked * 8 / (srv[-1].ts - srv[0].ts)
    ev = pl.read_csv(bundle / "events.csv").filter(pl.col("kind") == "outage")
    bw = [(a, b, float(v.removesuffix("bps"))) for a, b, v in _trace(bundle / "scenario/traces/bw_down_p1.json", "bw")]
    delay = _trace(bundle / "scenario/traces/delay_down_p1.json", "delay")
    t0 = m["t0"]
    data = [(p.ts - t0, p.ip_len) for p in phone if p.sport == 5201 and p.payload_len]
    outages = []
    for a, b in ev.filter(pl.col("path") == 1).select("t_start", "t_end").rows():
        d = next(float(v.removesuffix("us")) / 1e6 for s, e, v in delay if s <= b < e)
        t = [x - d for x, _ in data]
        if not (min(t) <= a and max(t) >= b + 2.0):
            continue
        got = sum(n for (x, n), tt in zip(data, t) if b <= tt < b + 2.0)
        offered = sum(max(0.0, min(e, b + 2.0) - max(s, b)) * r for s, e, r in bw) / 8
        outages.append((a, got / offered))
    return {"goodput": goodput, "outages": outages, "path2": ev.filter(pl.col("path") == 2).height}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny")
    (d / "s.toml").write_text(SCEN)
    (d / "c.toml").write_text(CAMP)
    res = campaign.run(campaign.load(d / "c.toml"), d / "runs", progress=False, quiet=True)
    assert [r["status"] for r in res] == ["ok"] * 4
    return d / "runs", res


def test_compare_reproduces_the_numbers_by_hand(tiny, tmp_path, capsys):
    runs, res = tiny
    capsys.readouterr()
    out = tmp_path / "cmp"
    assert main(["compare", str(runs), "--by", "cc", "-o", str(out), "--min-pairs", "2", "--no-figures"]) == 0
    text = capsys.readouterr().out
    table = pl.read_csv(out / "runs.csv")
    outages = pl.read_csv(out / "outages.csv")
    hand = {r["run_id"]: _by_hand(runs / r["run_id"]) for r in res}
    for rid, h in hand.items():
        row = table.filter(pl.col("run_id") == rid).row(0, named=True)
        assert row["goodput_bps"] == pytest.approx(h["goodput"], rel=1e-6)
        mine = outages.filter(pl.col("run_id") == rid).sort("t_start")
        assert h["path2"] >= 1 and set(mine["path"]) <= {1}  # only the flow's own path
        assert mine["t_start"].to_list() == pytest.approx([a for a, _ in h["outages"]])
        assert mine["use"].to_list() == pytest.approx([u for _, u in h["outages"]], rel=1e-9)
        assert row["outages_crossed"] == len(h["outages"])
        if h["outages"]:
            assert row["post_outage_use"] == pytest.approx(np.mean([u for _, u in h["outages"]]), rel=1e-9)
    assert sum(len(h["outages"]) for h in hand.values()) >= 2
    # per-arm means and the paired goodput effect (geometric mean of the ratios, in %)
    arms = pl.read_csv(out / "arms.csv").filter(pl.col("outcome") == "goodput_bps")
    g = {cc: [hand[r["run_id"]]["goodput"] for r in res if f"_{cc}_" in r["run_id"]] for cc in ("cubic", "reno")}
    for cc in ("cubic", "reno"):
        assert arms.filter(pl.col("arm") == cc)["mean"].item() == pytest.approx(np.mean(g[cc]), rel=1e-6)
    eff = pl.read_csv(out / "effects.csv").filter(pl.col("outcome") == "goodput_bps").row(0, named=True)
    ratio = math.exp(np.mean([math.log(r / c) for r, c in zip(g["reno"], g["cubic"])]))  # pairs by repetition
    assert (eff["arm"], eff["reference"], eff["n_pairs"]) == ("reno", "cubic", 2)
    assert eff["effect"] == pytest.approx((ratio - 1) * 100, rel=1e-6, abs=1e-6)
    assert "reno vs cubic, goodput:" in text and "(2 pairs;" in text
    # a second compare reuses the analyses (the bundles did not change) and writes the same tables
    stamp = (out / "analyses" / res[0]["run_id"] / "flows.parquet").stat().st_mtime_ns
    assert main(["compare", str(runs), "-o", str(out), "--min-pairs", "2", "--no-figures"]) == 0
    assert (out / "analyses" / res[0]["run_id"] / "flows.parquet").stat().st_mtime_ns == stamp
    # never into the runs themselves
    assert main(["compare", str(runs), "-o", str(runs / "cmp")]) == 2


def _xs(svg: str, gid: str) -> list[float]:
    """The x coordinates of the path drawn in the SVG group ``gid``."""
    m = re.search(rf'<g id="{re.escape(gid)}">\s*<path d="([^"]+)"', svg)
    assert m, f"{gid} is not drawn"
    nums = [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", m.group(1))]
    return nums[0::2]


def test_the_figures_draw_every_scheduled_outage_at_its_time(tiny, tmp_path):
    """Before: no lab figure showed the scheduled outages, loss bursts or the capacity the path
    offered. Each run's figure has every outage and handoff of its path at its time (read back
    from the SVG against the axes, which span the window), and the analyzer's strip."""
    runs, res = tiny
    out = tmp_path / "cmp"
    assert main(["compare", str(runs), "-o", str(out), "--min-pairs", "2"]) == 0
    assert (out / "figures" / "throughput-delay.svg").is_file()
    checked = 0
    for r in res:
        b = runs / r["run_id"]
        svg = (out / "figures" / f"{r['run_id']}.svg").read_text()
        window = json.loads((b / "manifest.json").read_text())["scenario"]["duration_s"]
        ax = _xs(svg, "truth-axes-p1")
        x0, x1 = min(ax), max(ax)

        def at(x: float) -> float:
            return (x - x0) / (x1 - x0) * window

        ev = pl.read_csv(b / "events.csv")
        for kind, a, e, p, ok in ev.select("kind", "t_start", "t_end", "path", "outage_kind").rows():
            if kind == "outage":
                gid = f"truth-outage-{ok}-p{p}-{a:.3f}-{e:.3f}"
            elif kind == "handoff":
                gid = f"truth-handoff-p{p}-{a:.3f}"
            else:
                continue
            if p != 1:  # the flow ran on path 1: path 2's events are not its own
                assert f'id="{gid}"' not in svg
                continue
            xs = _xs(svg, gid)
            assert at(min(xs)) == pytest.approx(a, abs=0.01 * window)
            assert at(max(xs)) == pytest.approx(e, abs=0.01 * window)
            checked += 1
        assert "analyzer" in svg and "capacity offered" in svg
    assert checked >= 8  # 2 handoffs and 2 outages per run on path 1
    # flent's overlay: one figure per pair (repetition), both arms over the same path's outages
    overlays = sorted((out / "figures").glob("overlay-*.svg"))
    assert len(overlays) == 2
    for f in overlays:
        svg = f.read_text()
        assert "cubic" in svg and "reno" in svg and svg.count('id="truth-outage-held-p1-') == 2
