"""`hsrtcp compare` prints the fairness of runs with concurrent flows (issue 34): each flow's
share of the bytes and Jain's index (:func:`hsrtcp.lab.compare.fairness`), per run and per mix
of congestion controls; fairness.csv beside the other tables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from hsrtcp.lab import compare

ROOT = Path(__file__).resolve().parents[3]


def _frame(runs):
    rows = []
    for rid, flows in runs.items():
        (p := Path(rid)).mkdir()
        (p / "server_flows.jsonl").write_text("".join(
            json.dumps({"request": {"kind": "tcp", "label": f"x-{i}-{cc}"}, "cc": cc, "bytes_sent": b}) + "\n"
            for i, (cc, b) in enumerate(flows)))
        f = compare.fairness(p)
        rows += [{"run_id": rid, "arm": "hsrbbr", "flow": "x", "label": x["label"], "cc": x["cc"],
                  "bytes": x["bytes"], "share": x["share"], "jain": f["jain"]} for x in f["flows"]]
    return pl.DataFrame(rows, schema=compare.FAIRNESS_COLUMNS)


def test_fairness_lines_per_run_and_per_mix(tmp_path, monkeypatch):
    """The bytes of AUDIT's smoke run (28 Nov, hsrbbr-fair-pairs copy: handoffs, 0.75 % loss,
    15 s, load 3.6-5.7): the server's counts; the phone capture's distinct payload per
    connection gave the same shares (87.04 / 12.96 %, 56.44 / 43.56 %) and Jain's index."""
    monkeypatch.chdir(tmp_path)
    f = _frame({"r1": [("hsrbbr", 14472568), ("cubic", 2154696)], "r2": [("bbr", 10605944), ("hsrbbr", 8184008)],
                "r3": [("hsrbbr", 3_000_000), ("cubic", 1_000_000)]})
    got = compare.fairness_lines(f)
    assert got[1:] == ["  r1: hsrbbr 87.0 % | cubic 13.0 %; Jain 0.646",
                       "  r2: bbr 56.4 % | hsrbbr 43.6 %; Jain 0.984",
                       "  r3: hsrbbr 75.0 % | cubic 25.0 %; Jain 0.800",
                       "  cubic + hsrbbr over 2 runs: mean share hsrbbr 81.0 % | cubic 19.0 %; mean Jain 0.723"]
    assert compare.fairness_lines(f.clear()) == []


@pytest.mark.netns
def test_compare_prints_the_fairness_of_a_real_run(tmp_path):
    """A one-run copy of campaigns/hsrbbr-fair-pairs.toml (10-s flows, cubic against bbr: no
    eBPF needed); the printed shares against the phone capture's payload per connection."""
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces)")
    camp = tmp_path / "fair.toml"
    camp.write_text(f'''[campaign]
name = "fair-smoke"
scenarios = ["{ROOT / 'campaigns' / 'hsrbbr-fair' / 'handoff-loss075.toml'}"]
ccs = ["cubic"]
repetitions = 1

[[flows]]
type = "concurrent"
duration_s = 10
ccs = ["cubic", "bbr"]
label = "vs-bbr"
''')
    runs, out = tmp_path / "runs", tmp_path / "cmp"
    p = subprocess.run([sys.executable, "-m", "hsrtcp", "campaign", str(camp), "-o", str(runs)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr + p.stdout
    p = subprocess.run([sys.executable, "-m", "hsrtcp", "compare", str(runs), "-o", str(out), "--no-figures",
                        "--bootstrap", "0"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    bundle = next(b for b in runs.iterdir() if (b / "manifest.json").is_file())
    f = compare.fairness(bundle)
    line = next(ln for ln in p.stdout.splitlines() if ln.startswith(f"  {bundle.name}: "))
    assert line == (f"  {bundle.name}: " + " | ".join(f"{x['cc']} {100 * x['share']:.1f} %" for x in f["flows"])
                    + f"; Jain {f['jain']:.3f}")
    csv = pl.read_csv(out / "fairness.csv")
    assert sorted(csv["cc"].to_list()) == ["bbr", "cubic"] and csv["share"].sum() == pytest.approx(1.0)
    # witness: distinct payload bytes per connection in the phone capture
    from hsrtcp.testing import pcapio

    seen: dict[int, dict[int, int]] = {}
    for q in pcapio.read_tcp(bundle / "capture" / "phone_p1.pcap"):
        if q.sport == 5201 and q.payload_len:
            seen.setdefault(q.dport, {})[q.seq] = q.payload_len
    rx = np.array([sum(seen[int(x["peer"].rsplit(":", 1)[1])].values()) for x in f["flows"]], dtype=float)
    for x, s in zip(f["flows"], rx / rx.sum()):
        assert abs(x["share"] - s) < 0.05, (x, s)
    assert f["jain"] == pytest.approx(rx.sum() ** 2 / (2 * (rx ** 2).sum()), abs=0.05)
