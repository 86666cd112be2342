"""`hsrtcp compare` over one-line experiments (issue 38): two `hsrtcp emulate` runs of the
measure client with two congestion controls are two arms, paired by their path and flow.
Before, an emulate bundle has no cc in its manifest: both runs fell in one arm 'None', and
their flows (the command lines, which name the cc) could never pair."""

from __future__ import annotations

import os
import subprocess
import sys

import polars as pl
import pytest

from hsrtcp.cli import main

pytestmark = pytest.mark.netns


def _emulate(run, cc):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    res = subprocess.run([sys.executable, "-m", "hsrtcp", "emulate", "--rate", "8Mbps/2Mbps", "--delay", "20",
                          "--loss", "0.01", "--duration", "8", "-o", str(run), "--", sys.executable, "-m",
                          "hsrtcp", "measure", "client", "$HSRTCP_SERVER", "--cc", cc, "-t", "5"],
                         capture_output=True, text=True, env=env, timeout=180)
    assert res.returncode == 0, res.stderr[-2000:]


def test_emulate_runs_are_arms_by_their_clients_cc(tmp_path, capsys):
    _emulate(tmp_path / "a", "cubic")
    _emulate(tmp_path / "b", "reno")
    out = tmp_path / "cmp"
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "-o", str(out), "--min-pairs", "1",
                 "--no-figures"]) == 0
    text = capsys.readouterr().out
    assert "2 runs, arms by cc: cubic (1), reno (1)" in text
    runs = pl.read_csv(out / "runs.csv").sort("run_id")
    assert runs["cc"].to_list() == ["cubic", "reno"] and runs["arm"].to_list() == ["cubic", "reno"]
    assert runs["flow"].to_list() == ["client tcp down 5 s x1"] * 2
    eff = pl.read_csv(out / "effects.csv").filter(pl.col("outcome") == "goodput_bps").row(0, named=True)
    assert (eff["arm"], eff["reference"], eff["n_pairs"]) == ("reno", "cubic", 1)
    g = dict(zip(runs["cc"], runs["goodput_bps"]))
    assert eff["effect"] == pytest.approx((g["reno"] / g["cubic"] - 1) * 100, rel=1e-6)
    # a second cubic run of the same path and flow: no one-to-one pair, said and left out
    _emulate(tmp_path / "a2", "cubic")
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "a2"), str(tmp_path / "b"), "-o",
                 str(tmp_path / "cmp2"), "--min-pairs", "1", "--no-figures"]) == 0
    text = capsys.readouterr().out
    assert "cannot be paired one to one, left out of the paired effects: a, a2" in text
    eff = pl.read_csv(tmp_path / "cmp2" / "effects.csv").filter(pl.col("outcome") == "goodput_bps")
    assert eff["n_pairs"].to_list() == [0]
