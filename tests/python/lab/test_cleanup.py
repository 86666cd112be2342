"""Cleanup guarantees: after a crash of the emulator and after SIGINT/SIGTERM, none of our
namespaces and none of our processes remain; the zero-bandwidth crash is refused up front."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hsrtcp.errors import InputError, LabError
from hsrtcp.lab import emulate, netns, rattan

from labtools import one_path_campaign, one_path_config, write_bw_trace


def _ours_gone(run_dir: Path, rid: str | None) -> None:
    assert rid, "the run never reported its rattan id"
    left = {n for n in netns.list_netns() if n.endswith("-" + rid)}
    assert left == set()
    assert netns.pids_mentioning(str(run_dir)) == []


def _campaign_started(tmp_path: Path, **popen) -> tuple[subprocess.Popen, Path]:
    """``hsrtcp campaign`` of one 30-s one-path run in its own process, returned once the
    run's workload has started; and the campaign's output directory."""
    one_path_campaign(tmp_path, '[campaign]\nscenarios = ["rattan.toml"]\nccs = ["cubic"]\n'
                                '[[flows]]\ntype = "duration"\nduration_s = 30\n')
    runs = tmp_path / "runs"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen([sys.executable, "-m", "hsrtcp", "campaign", str(tmp_path / "c.toml"), "-o", str(runs),
                             "--no-progress"], env=env, **popen)
    try:
        deadline = time.monotonic() + 30
        while not list(runs.glob(".partial-*/workload.start")):
            assert time.monotonic() < deadline and proc.poll() is None, "the run did not start"
            time.sleep(0.1)
    except BaseException:
        proc.kill()
        raise
    return proc, runs


def test_zero_bandwidth_is_refused(tmp_path):
    write_bw_trace(tmp_path / "bw_down.json", [("20Mbps", 2), ("0bps", 1)])
    cfg = one_path_config(tmp_path)
    with pytest.raises(InputError, match=r"bw_down.json.*zero"):
        rattan.validate_config(rattan.load_config(cfg), cfg)
    (tmp_path / "bw_down.json").unlink()
    (tmp_path / "bw_down.trace").write_text("1\n2\n")
    cfg.write_text(cfg.read_text().replace("bw_down.json", "bw_down.trace"))
    with pytest.raises(InputError, match="Mahimahi"):
        rattan.validate_config(rattan.load_config(cfg), cfg)
    cfg.write_text(cfg.read_text().replace('bandwidth = "20Mbps"', 'bandwidth = "0Mbps"'))
    with pytest.raises(InputError, match=r"up_bw.*zero"):
        rattan.validate_config(rattan.load_config(cfg), cfg)


def test_without_root_the_lab_refuses(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(LabError, match="needs root"):
        emulate.run(tmp_path / "x.toml", tmp_path / "run", {"kind": "command", "argv": ["true"]})
    from hsrtcp.cli import main

    assert main(["emulate", "-s", __file__, "--", "true"]) == 3
    assert "the lab needs root" in capsys.readouterr().err


@pytest.mark.netns
def test_emulator_crash_is_cleaned_up(tmp_path, monkeypatch):
    # Force the Rattan 0.1.1 panic by skipping validation: a change to 0 bps panics only while a
    # packet is in transmission (BwReplay change_bandwidth divides by the new rate). At 20 Mbit/s
    # an ACK-clocked cubic kept the queue near empty and the change once found none (cleanup_s11
    # run 10: no panic, a 5-s outage); at 1 Mbit/s the queue is never empty by 1.5 s.
    write_bw_trace(tmp_path / "bw_down.json", [("1Mbps", 1.5), ("0bps", 5), ("20Mbps", 30)])
    cfg = one_path_config(tmp_path)
    monkeypatch.setattr(rattan, "validate_config", lambda *a, **k: None)
    out = emulate.run(cfg, tmp_path / "run", {"kind": "measure", "flow": {"type": "duration", "duration_s": 6,
                                                                           "cc": "cubic"}}, timeout_s=40)
    assert out.crashed and not out.timed_out
    assert any("crashed" in e and "panic" in e for e in out.errors)
    _ours_gone(tmp_path / "run", out.rattan_id)


@pytest.mark.netns
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_mid_run_cleans_up(tmp_path, sig):
    write_bw_trace(tmp_path / "bw_down.json", [("20Mbps", 60)])
    cfg = one_path_config(tmp_path)
    run_dir = tmp_path / "run"
    code = ("import sys; from hsrtcp.lab import emulate\n"
            f"emulate.run({str(cfg)!r}, {str(run_dir)!r}, {{'kind': 'measure', 'flow': "
            "{'type': 'duration', 'duration_s': 30, 'cc': 'cubic'}})\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not (run_dir / "workload.start").exists():
            assert time.monotonic() < deadline, "the run did not start"
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.1)
        time.sleep(2.0)  # mid-transfer
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    assert "KeyboardInterrupt" in err or "Interrupted" in err
    outcome = json.loads((run_dir / "outcome.json").read_text())
    assert outcome["interrupted"]
    _ours_gone(run_dir, (run_dir / "rattan_id").read_text().strip())


@pytest.mark.netns
def test_ctrl_c_during_a_campaign(tmp_path):
    """Ctrl-C mid-campaign: exit 130, no half bundle under any name, nothing of ours left."""
    proc, runs = _campaign_started(tmp_path, stderr=subprocess.PIPE, text=True)
    try:
        rid = next(runs.glob(".partial-*/rattan_id")).read_text().strip()
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    assert [p.name for p in runs.iterdir() if p.name.startswith(("0", ".partial"))] == []
    _ours_gone(runs, rid)


@pytest.mark.netns
def test_campaign_recovers_after_a_hard_kill(tmp_path):
    """A campaign killed with SIGKILL cannot clean up; the next campaign in the same output
    directory finds the partial run's id and removes what it left."""
    proc, runs = _campaign_started(tmp_path, stderr=subprocess.DEVNULL)
    try:
        partial = next(runs.glob(".partial-*"))
        rid = (partial / "rattan_id").read_text().strip()
        proc.kill()  # no cleanup possible
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    from hsrtcp.lab import campaign

    time.sleep(0.5)
    assert any(n.endswith("-" + rid) for n in netns.list_netns())  # the kill really left them
    removed = campaign.recover_partials(runs)
    assert f"ns-rattan-{rid}" in removed
    assert not partial.exists()
    _ours_gone(partial, rid)
