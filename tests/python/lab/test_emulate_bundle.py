"""`hsrtcp emulate` makes a first-class run (issue 38): its directory is a complete bundle —
manifest with versions and seeds, the client's result when the command was the measure
client, the command's output, the scenario's radio log and events — and `analyze` finds the
radio log in it (before: "no radio log", the result only on stdout, no manifest)."""

from __future__ import annotations

import json

import numpy
import polars as pl
import pytest

from hsrtcp.lab import bundle

from labtools import RURAL_TRIP, emulate_measure, hsrtcp_run

pytestmark = pytest.mark.netns

SCEN = RURAL_TRIP.format(name="em", seed=7) + "count = 2\n"


def test_emulate_writes_a_bundle_analyze_reads_with_its_radio_log(tmp_path):
    (tmp_path / "s.toml").write_text(SCEN)
    run = tmp_path / "run"
    cmd = (["-s", tmp_path / "s.toml"], run, "--cc", "cubic", "--flow", "size", "--size", "1MB")
    res = emulate_measure(*cmd)
    assert res.returncode == 0, res.stderr[-2000:]
    printed = json.loads(res.stdout[res.stdout.index("["):])
    assert bundle.check(run) == []
    m = json.loads((run / "manifest.json").read_text())
    assert m["status"] == "ok" and m["seeds"]["scenario"] == 7 and m["versions"]["numpy"] == numpy.__version__
    assert m["command"][-4:] == ["--flow", "size", "--size", "1MB"] and m["config"]["scenario"]["seed"] == 7
    assert m["radio"] == "radio.csv" and m["events"] == "events.csv" and m["t0"] is not None
    # the client's result is kept as a campaign keeps it, and the command's output too
    assert json.loads((run / "client.json").read_text()) == printed and printed[0]["bytes"] == 1_000_000
    assert "[" in (run / "command.out").read_text()
    assert pl.read_parquet(run / "tcpinfo.parquet").height > 10
    assert f"emulate: bundle in {run}" in res.stderr
    out = tmp_path / "res"
    res = hsrtcp_run("analyze", run, "-o", out, "-q", "--no-plot", timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert pl.read_parquet(out / "handoffs.parquet").height == 2  # the scenario's two handoffs
    ctx = pl.read_parquet(out / "context.parquet")
    assert ctx.height and "no radio log" not in ctx["class_reason"].fill_null("").to_list()
    # a run never writes into a directory that holds something
    res = emulate_measure(*cmd, timeout=60)
    assert res.returncode == 2 and "exists and is not an empty directory" in res.stderr


def test_a_one_line_experiment_with_inline_options(tmp_path):
    """As `mm-delay 25 mm-link ... -- cmd`: a constant rate, a delay and a handoff every N s
    around any command, without writing a scenario (before: -s was required)."""
    run = tmp_path / "run"
    inline = ["--rate", "8Mbps/2Mbps", "--delay", "25", "--handoff-every", "4", "--duration", "12"]
    res = emulate_measure(inline, run, "--cc", "reno", "--flow", "size", "--size", "1MB")
    assert res.returncode == 0, res.stderr[-2000:]
    assert ("emulate: inline path: 8 Mbit/s down, 2 Mbit/s up, 25 ms one way, loss 0, a handoff every 4 s"
            in res.stderr)
    assert bundle.check(run) == []
    m = json.loads((run / "manifest.json").read_text())
    assert m["scenario"]["name"] == "inline" and m["scenario"]["duration_s"] == 12
    ev = pl.read_csv(run / "events.csv")
    assert ev.filter(pl.col("kind") == "handoff")["t_start"].to_list() == [4.0, 8.0]
    seg = json.loads((run / "scenario" / "scenario.json").read_text())["params"]
    assert seg["link"]["base_owd_ms"] == 25
    assert json.loads((run / "client.json").read_text())[0]["bytes"] == 1_000_000
    for bad in (["-s", str(run / "scenario" / "rattan.toml")], ["--rate", "fast"]):
        res = hsrtcp_run("emulate", *inline, *bad, "--", "true", timeout=60)
        assert res.returncode == 2, res.stderr
