"""Findings that reproduce (issue 34): runs of one scenario and trip seed that ran different
compiled paths are refused, naming both hashes; runs a campaign marked noisy (above its load
bound, docs/lab.md) are left out of their pairs unless asked for; the report says which of its
checks the runs named before they ran.

Bundles are manifests as hsrtcp.lab.campaign writes them; the analyses are of committed
fixture pairs (tests/data, real kernel TCP through the netns testbed), as in test_findings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from hsrtcp.errors import InputError
from hsrtcp.findings import build
from hsrtcp.findings import runs as R

DATA = Path(__file__).resolve().parents[3] / "tests" / "data"
H1, H2 = "a1" * 32, "b2" * 32

# (seed, arm) -> fixture pair, all on the cruise scenario
LAYOUT = {(1, "cubic"): "drops_cubic", (1, "cubic-frto-off"): "clean_200k",
          (2, "cubic"): "twovantage_offset", (2, "cubic-frto-off"): "small_50k",
          (3, "cubic"): "reno_nosack_nots", (3, "cubic-frto-off"): "bbr_drops"}
FRTO = "frto/all-hsr/f-rto-on-vs-off/goodput_bps"


def _manifest(run_id, seed, arm, compiled=H1, noisy=None, checks=None, scenario="cruise", old=False) -> dict:
    m = {"run_id": run_id, "status": "ok", "cc": "cubic", "repetition": seed, "campaign": "pytest",
         "scenario": {"name": scenario, "compiled_sha256": compiled}, "seeds": {"scenario": 100 + seed},
         "variant": {"name": arm, "cc": "cubic", "sysctls": {}, "route": {}, "scenario_label": scenario,
                     "scenario_start_s": None}}
    if old:  # a bundle from before compiled_sha256 and host: only config.scenario.sha256
        del m["scenario"]["compiled_sha256"]
        m["config"] = {"scenario": {"sha256": compiled}}
    if noisy is not None:
        m["host"] = {"loadavg_1min_start": 9.0 if noisy else 0.5, "loadavg_1min_end": 1.0, "max_load": 2.0,
                     "noisy": noisy, "noisy_why": "load 9 > 2 at the start" if noisy else None}
    if checks is not None:
        m["checks"] = checks
    return m


def _write(where: Path, run_id: str, manifest: dict) -> None:
    (where / run_id).mkdir(parents=True, exist_ok=True)
    (where / run_id / "manifest.json").write_text(json.dumps(manifest))


def test_two_versions_of_one_path_are_refused_naming_both_hashes(tmp_path):
    a, b = tmp_path / "runs", tmp_path / "runs-aa"
    _write(a, "001_cruise_cubic_r1", _manifest("001_cruise_cubic_r1", 1, "cubic", H1, noisy=False))
    _write(a, "002_cruise_cubic-frto-off_r1", _manifest("002_cruise_cubic-frto-off_r1", 1, "cubic-frto-off", H1,
                                                        noisy=False))
    # the A/A campaign ran the same scenario and seed from a changed scenario file (an older
    # bundle: its hash is in config.scenario)
    _write(b, "001_cruise_cubic-aa_r1", _manifest("001_cruise_cubic-aa_r1", 1, "cubic-aa", H2, old=True))
    one, _ = R.read_campaigns([a])
    assert one["scenario_sha256"].to_list() == [H1, H1]
    with pytest.raises(InputError) as exc:
        R.read_campaigns([a, b])
    msg = str(exc.value)
    assert "'cruise' seed 101" in msg and H1[:12] in msg and H2[:12] in msg and "001_cruise_cubic-aa_r1" in msg
    # both command lines: exit 3 with the message, no traceback
    for argv in ([sys.executable, "-m", "hsrtcp.findings.runs", str(a), str(b)],
                 [sys.executable, "-m", "hsrtcp.findings", str(a), str(tmp_path / "results"), "--also-runs", str(b),
                  "-o", str(tmp_path / "out")]):
        r = subprocess.run(argv, capture_output=True, text=True)
        assert r.returncode == 3 and H1[:12] in r.stderr and H2[:12] in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
    # another seed may differ: it is another path
    _write(b, "001_cruise_cubic-aa_r1", _manifest("001_cruise_cubic-aa_r1", 2, "cubic-aa", H2))
    assert R.read_campaigns([a, b])[0].height == 3


def test_noisy_runs_are_left_out_unless_asked(tmp_path):
    a = tmp_path / "runs"
    _write(a, "001_cruise_cubic_r1", _manifest("001_cruise_cubic_r1", 1, "cubic", noisy=False))
    _write(a, "002_cruise_cubic-frto-off_r1", _manifest("002_cruise_cubic-frto-off_r1", 1, "cubic-frto-off",
                                                        noisy=True))
    _write(a, "003_cruise_cubic_r2", _manifest("003_cruise_cubic_r2", 2, "cubic"))  # before host was recorded
    runs, notes = R.read_campaigns([a])
    assert not any("no compiled path hash" in n for n in notes)
    _write(a, "004_cruise_cubic_r3", {**_manifest("004_cruise_cubic_r3", 3, "cubic", noisy=False),
                                      "scenario": {"name": "cruise"}})  # before the hash was recorded
    runs, notes = R.read_campaigns([a])
    assert any("1 run(s) recorded no compiled path hash" in n for n in notes)
    (a / "004_cruise_cubic_r3" / "manifest.json").unlink()
    (a / "004_cruise_cubic_r3").rmdir()
    runs, notes = R.read_campaigns([a])
    st = dict(zip(runs["run_id"], runs["status"]))
    assert st == {"001_cruise_cubic_r1": "ok", "002_cruise_cubic-frto-off_r1": "noisy", "003_cruise_cubic_r2": "ok"}
    assert dict(zip(runs["run_id"], runs["load_1min"]))["002_cruise_cubic-frto-off_r1"] == 9.0
    assert any("1 noisy run(s)" in n and "left out" in n and "002_cruise_cubic-frto-off_r1" in n for n in notes)
    assert any("1 run(s) recorded no host load" in n for n in notes)
    kept, notes = R.read_campaigns([a], include_noisy=True)
    assert set(kept["status"]) == {"ok"} and any("kept as asked" in n for n in notes)
    # the list a study analyzes (make study)
    r = subprocess.run([sys.executable, "-m", "hsrtcp.findings.runs", str(a)], capture_output=True, text=True)
    assert r.returncode == 0 and [Path(x).name for x in r.stdout.split()] == ["001_cruise_cubic_r1",
                                                                            "003_cruise_cubic_r2"]
    assert "noisy" in r.stderr
    r = subprocess.run([sys.executable, "-m", "hsrtcp.findings.runs", str(a), "--include-noisy"],
                       capture_output=True, text=True)
    assert len(r.stdout.split()) == 3


def test_check_status_names_when_a_check_was_written(tmp_path):
    a = tmp_path / "runs"
    _write(a, "001_x_r1", _manifest("001_x_r1", 1, "cubic", checks=["c1", "c2"]))
    _write(a, "002_x_r1", _manifest("002_x_r1", 1, "cubic-frto-off", checks=["c1"]))
    counts = R.declared_checks([a])
    assert R.check_status("c1", counts) == "declared before the runs"
    assert R.check_status("c2", counts) == "declared by 1 of 2 runs"
    assert R.check_status("c3", counts) == "added after the runs"
    assert R.check_name("frto", "all HSR", "F-RTO on vs off", "goodput_bps") == FRTO


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory):
    root = tmp_path_factory.mktemp("quiet")
    results = root / "results"
    ids = {}
    for i, ((seed, arm), name) in enumerate(sorted(LAYOUT.items()), 1):
        run_id = ids[(seed, arm)] = f"{i:03d}_cruise_{arm}_r{seed}"
        subprocess.run([sys.executable, "-m", "hsrtcp", "analyze", "--client", str(DATA / f"{name}.client.pcap"),
                        "--server", str(DATA / f"{name}.server.pcap"), "-o", str(results / run_id), "-q"],
                       check=True)
    return root, results, ids


def _frto(f) -> dict:
    return f.effects.filter((pl.col("question") == "frto") & (pl.col("group") == "cruise")
                            & (pl.col("outcome") == "goodput_bps")).row(0, named=True)


def test_findings_leave_a_noisy_run_out_of_its_pair_and_mark_late_checks(analyzed, tmp_path):
    root, results, ids = analyzed
    runs = tmp_path / "runs"
    for (seed, arm), run_id in ids.items():
        _write(runs, run_id, _manifest(run_id, seed, arm, noisy=(seed, arm) == (2, "cubic-frto-off"),
                                       checks=[FRTO]))
    f = build(runs, results, seed=1, n_boot=100, min_pairs=2)
    assert _frto(f)["n_pairs"] == 2  # seed 2's pair lost its noisy arm
    assert dict(zip(f.arms["run_id"], f.arms["status"]))[ids[(2, "cubic-frto-off")]] == "noisy"
    assert any("noisy" in n and ids[(2, "cubic-frto-off")] in n for n in f.notes)
    kept = build(runs, results, seed=1, n_boot=100, min_pairs=2, include_noisy=True)
    assert _frto(kept)["n_pairs"] == 3
    # checks: the one every run named is declared, the other headlines were added after
    st = dict(zip(f.checks["check"], f.checks["status"]))
    assert st[FRTO] == "declared before the runs"
    assert st["cc/all-hsr/bbr-vs-cubic/goodput_bps"] == "added after the runs"
    assert any("14 of 15 headline checks" in n for n in f.notes)
    f.write(tmp_path / "out", figures=False)
    written = pl.read_csv(tmp_path / "out" / "checks.csv")
    assert written.height == 15 and written.filter(pl.col("status") == "declared before the runs")["check"].to_list() \
        == [FRTO]
    md = (tmp_path / "out" / "tables.md").read_text()
    assert f"| {FRTO} | declared before the runs |" in md
    assert "| cc/all-hsr/bbr-vs-cubic/goodput_bps | added after the runs |" in md
    # arms.csv carries each run's compiled path and host load
    arms = pl.read_csv(tmp_path / "out" / "arms.csv")
    assert set(arms["scenario_sha256"]) == {H1} and arms["noisy"].sum() == 1
    # the command line: --include-noisy
    r = subprocess.run([sys.executable, "-m", "hsrtcp.findings", str(runs), str(results), "-o", str(tmp_path / "o2"),
                        "--bootstrap", "0", "--no-figures", "--include-noisy"], capture_output=True, text=True)
    assert r.returncode == 0 and "kept as asked" in r.stderr, r.stderr
