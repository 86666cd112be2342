"""A compiled scenario names no absolute path (issue 38): rattan.toml names its traces relative
to itself, scenario.json a Mahimahi source relative to the directory, so a moved directory
still passes `scenario check` with Rattan's own reading; a broken reference is named; the
lock file a compile leaves names no process."""

import json
import shutil

import pytest

from hsrtcp.cli import main
from hsrtcp.lab import scenario as S
from hsrtcp.lab.scenario.traces import rattan_binary

needs_rattan = pytest.mark.skipif(rattan_binary() is None, reason="rattan not installed (make rattan)")


def _strings(node):
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for v in node.values():
            yield from _strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from _strings(v)


def _texts(d):
    return {p.relative_to(d): p.read_text(errors="replace") for p in d.rglob("*") if p.is_file()}


@needs_rattan
@pytest.mark.parametrize("name", ["smoke", "hsr-mahimahi-att", "two-carriers"])
def test_a_moved_compiled_scenario_still_checks(tmp_path, scenarios_dir, monkeypatch, capsys, name):
    first = tmp_path / "first" / "deep" / name
    assert main(["scenario", "generate", str(scenarios_dir / f"{name}.toml"), "-o", str(first),
                 "--duration", "12"]) == 0
    for rel, text in _texts(first).items():  # before: every trace line of rattan.toml was absolute
        assert str(tmp_path) not in text, rel
    assert all(ln.startswith('trace = "traces/') for ln in (first / "rattan.toml").read_text().splitlines()
               if ln.startswith("trace ="))
    assert not [s for s in _strings(json.loads((first / "scenario.json").read_text())) if s.startswith("/")]
    moved = tmp_path / "elsewhere" / name
    moved.parent.mkdir()
    shutil.move(first, moved)
    shutil.rmtree(tmp_path / "first")
    monkeypatch.chdir(tmp_path)  # any working directory
    capsys.readouterr()
    assert main(["scenario", "check", str(moved)]) == 0, capsys.readouterr().err
    assert "ok (self-consistency + rattan reading)" in capsys.readouterr().out
    if name != "hsr-mahimahi-att":  # (its Mahimahi source stays in the repository: not moved)
        assert S.load(moved).seed == S.load(scenarios_dir / f"{name}.toml").seed


def test_the_mahimahi_source_is_named_relative_to_the_directory(tmp_path, scenarios_dir):
    out = tmp_path / "sc"
    S.load(scenarios_dir / "hsr-mahimahi-att.toml").compile(out, duration=5)
    carrier = json.loads((out / "scenario.json").read_text())["params"]["carriers"][0]
    assert not carrier["trace_down"].startswith("/")
    assert (out / carrier["trace_down"]).resolve() == (scenarios_dir.parent / "data/mahimahi/ATT-LTE-driving.down")
    # reloading the compiled directory finds it again
    assert S.load(out).params["carriers"][0]["trace_down"] == str(
        (scenarios_dir.parent / "data/mahimahi/ATT-LTE-driving.down").resolve())


def test_check_names_a_trace_that_is_not_there(tmp_path, scenarios_dir, capsys):
    """Before: `rattan --visualize-trace failed (exit 78):` and nothing else."""
    out = tmp_path / "sc"
    S.load(scenarios_dir / "smoke.toml").compile(out, duration=5)
    cfg = out / "rattan.toml"
    cfg.write_text(cfg.read_text().replace("traces/bw_up_p1.json", "traces/nope.json", 1))
    assert main(["scenario", "check", str(out)]) == 3
    err = capsys.readouterr().err
    assert "[cells.p1_up_bw] (BwReplay): trace file" in err and "nope.json not found" in err


def test_the_lock_file_names_no_process_after_the_run(tmp_path, scenarios_dir):
    """A compile leaves `.hsrtcp.lock` behind (the lock protocol, docs/formats/output.md);
    once the run ends it no longer names its process, and a stale one (a killed run's pid)
    is cleared by the next run."""
    out = tmp_path / "sc"
    out.mkdir()
    (out / ".hsrtcp.lock").write_text("999999999\n")  # what a killed run leaves
    S.load(scenarios_dir / "smoke.toml").compile(out, duration=5)
    assert (out / ".hsrtcp.lock").read_text().strip() == ""
