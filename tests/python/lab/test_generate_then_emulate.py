"""`hsrtcp scenario generate` draws the trip and prints a next command that makes a full run
(issue 38): `emulate -s OUTDIR/rattan.toml` (what it prints) or `-s OUTDIR` uses the compiled
scenario with its radio log and ground truth. Before, generate drew nothing and that rattan.toml
was run as a plain Rattan config: a bundle without radio.csv/events.csv, no seed, no truth."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from hsrtcp.cli import main
from hsrtcp.errors import InputError
from hsrtcp.lab import bundle, emulate

from labtools import RURAL_TRIP, emulate_measure, hsrtcp_run

SCEN = RURAL_TRIP.format(name="gen", seed=11)

TWO = SCEN + """
[[carriers]]
name = "A"
[[carriers]]
name = "B"
"""


def _generate(tmp_path, text, capsys, *extra):
    (tmp_path / "s.toml").write_text(text)
    out = tmp_path / "gen"
    assert main(["scenario", "generate", str(tmp_path / "s.toml"), "-o", str(out), "--handoff-count", "2",
                 *extra]) == 0
    return out, capsys.readouterr().out


def test_generate_draws_the_trip_and_says_how_to_run_it(tmp_path, capsys):
    out, text = _generate(tmp_path, TWO, capsys)
    png = out / "scenario.png"
    assert f"the trip drawn: {png}" in text
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    # two carriers: the printed single-path download names its path (a campaign requires it too)
    assert f"hsrtcp emulate -s {out}/rattan.toml -o run --" in text
    assert "hsrtcp measure client '$HSRTCP_SERVER' --cc cubic -t 10 --path 1" in text
    out2, text = _generate(tmp_path, SCEN, capsys, "--no-draw", "-o", str(tmp_path / "one"))
    assert not (tmp_path / "one" / "scenario.png").exists() and "the trip drawn" not in text
    assert "--cc cubic -t 10   #" in text  # one carrier: no path to choose


def test_a_window_ending_inside_an_outage_is_a_warning(tmp_path, capsys):
    """The traces hold their last values after the window: a path whose window ends in an
    outage stays down for good. Before, generate and emulate said nothing."""
    late = SCEN.replace("outage_median_s = 0.3", "outage_median_s = 4.0\noutage_sigma = 0.01\ntimes_s = [10.0]")
    (tmp_path / "s.toml").write_text(late)
    assert main(["scenario", "generate", str(tmp_path / "s.toml"), "-o", str(tmp_path / "g"), "--no-draw"]) == 0
    assert ("warning: path 1: the window (12 s) ends inside an outage (held, from 10 s): after the window this "
            "path stays at 1 bit/s for good") in capsys.readouterr().err
    assert main(["scenario", "generate", str(tmp_path / "s.toml"), "-o", str(tmp_path / "g2"), "--no-draw",
                 "--duration", "20"]) == 0
    assert "ends inside an outage" not in capsys.readouterr().err


def test_a_compiled_directory_is_a_scenario_with_its_truth(tmp_path, capsys):
    out, _ = _generate(tmp_path, SCEN, capsys)
    moved = tmp_path / "elsewhere" / "gen"
    moved.parent.mkdir()
    shutil.move(out, moved)
    for given in (moved / "rattan.toml", moved):
        dest = tmp_path / f"run-{given.name}" / "scenario"
        comp = emulate.compile_source(given, dest)
        assert comp.outdir == dest and comp.seed == 11 and comp.name == "gen" and comp.duration_s == 12
        assert comp.radio_csv == dest / "radio.csv" and comp.radio_csv.is_file()
        assert (dest / "events.csv").read_text() == (moved / "events.csv").read_text()
        assert comp.rattan_config == dest / "rattan.toml" and comp.source == moved / "rattan.toml"
    with pytest.raises(InputError, match="seed and window fixed"):
        emulate.compile_source(moved, tmp_path / "x", seed=3)
    (moved / "scenario.json").write_text("{}")
    with pytest.raises(InputError, match="not a compiled scenario directory"):
        emulate.compile_source(moved, tmp_path / "y")


@pytest.mark.netns
def test_the_printed_command_makes_a_full_bundle(tmp_path, capsys):
    out, _ = _generate(tmp_path, SCEN, capsys)
    moved = tmp_path / "moved"
    shutil.move(out, moved)  # the compiled folder moves with its relative traces
    run = tmp_path / "run"
    res = emulate_measure(["-s", moved / "rattan.toml"], run, "--cc", "cubic", "-t", "13")
    assert res.returncode == 0, res.stderr[-2000:]
    # a 13-s download in the 12-s window: said before the run (before: nothing)
    assert "warning: the measure client's flow lasts 13 s but the scenario's window is 12 s" in res.stderr
    assert bundle.check(run) == []
    m = json.loads((run / "manifest.json").read_text())
    assert m["radio"] == "radio.csv" and m["events"] == "events.csv" and m["seeds"]["scenario"] == 11
    assert m["scenario"]["name"] == "gen" and m["config"]["scenario"]["seed"] == 11
    assert (run / "events.csv").read_text() == (moved / "events.csv").read_text()
    ana = tmp_path / "res"
    res = hsrtcp_run("analyze", run, "-o", ana, "-q", "--no-plot", timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert pl.read_parquet(ana / "handoffs.parquet").height == 2  # the two handoffs generate fixed
    assert pl.read_parquet(ana / "truth_events.parquet").filter(pl.col("kind") == "handoff").height >= 2
    ctx = pl.read_parquet(ana / "context.parquet")
    assert ctx.height and "no radio log" not in ctx["class_reason"].fill_null("").to_list()


def test_inline_handoffs_are_alike(tmp_path):
    """`emulate --handoff-every N` puts the same kind of handoff every N s: before, the
    [handoff] default rlf_p = 0.1 turned the second of `--handoff-every 3 --duration 8` into a
    radio-link failure held to the window's end (a reno -t 5 client exited 1)."""
    from hsrtcp.cli.lab import _inline_scenario
    from hsrtcp.lab import scenario as S

    ev = S.load(_inline_scenario("8Mbps/2Mbps", 20, None, None, 3, 8.0)).compile(tmp_path / "s").events()
    handoffs = ev.filter(pl.col("kind") == "handoff")
    assert handoffs["t_start"].to_list() == [3.0, 6.0] and handoffs["detail"].null_count() == 2
    outages = ev.filter(pl.col("kind") == "outage")
    assert outages.height == 2 and ((outages["t_end"] - outages["t_start"]) < 1.0).all()
