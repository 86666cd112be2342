"""Progress where people look (issue 38): a campaign whose standard error is a log file
writes a line per run as it happens (started, finished with its numbers, skipped and why,
failed and why); on a terminal the bar labels elapsed time and time left correctly."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time

import pytest
from rich.console import Console

from hsrtcp.lab import campaign, rattan

from labtools import one_path_campaign, write_bw_trace


def test_the_bar_shows_elapsed_and_left_apart():
    """Before: the elapsed time stood under 'left'. Now the bar says 'elapsed' and 'left ≈'
    the mean run time × runs left."""
    buf = io.StringIO()
    p = campaign._Progress(3, console=Console(file=buf, force_terminal=True, width=160, color_system=None))
    p.start("001_a", "scenario x")
    p.finished("001_a", 3600.0, "ok", "1 flow, 2.00 MB")
    p.p.refresh()
    p.close()
    text = buf.getvalue()
    assert "[1/3] 001_a started: scenario x" in text
    assert "[1/3] 001_a finished after 1:00:00: 1 flow, 2.00 MB" in text
    assert "1/3 runs, elapsed" in text and "left ≈ 2:00:00" in text
    assert "campaign: 1 of 3 runs" in text


def test_without_a_terminal_there_is_no_bar_only_lines():
    buf = io.StringIO()  # not a terminal
    p = campaign._Progress(2, bar=True, stream=buf)
    p.skipped("001_a", "complete bundle with the same configuration")
    p.start("002_b", "scenario y")
    p.finished("002_b", 12.0, "failed", "rattan crashed (panic; exit 101)")
    p.close()
    assert buf.getvalue().splitlines() == [
        "[1/2] 001_a skipped: complete bundle with the same configuration",
        "[2/2] 002_b started: scenario y",
        "[2/2] 002_b failed after 0:00:12: rattan crashed (panic; exit 101)",
        buf.getvalue().splitlines()[-1]]
    assert buf.getvalue().splitlines()[-1].startswith("campaign: 2 of 2 runs in ")
    assert "(0 ok, 1 failed, 1 skipped)" in buf.getvalue()


def _setup(tmp_path, duration=4):
    return one_path_campaign(tmp_path, f"""
[campaign]
name = "log"
scenarios = ["rattan.toml"]
ccs = ["cubic"]
[[flows]]
type = "duration"
duration_s = {duration}
""")


@pytest.mark.netns
def test_a_log_shows_each_run_as_it_starts_and_ends(tmp_path):
    """stderr to a file (not a terminal): the run's 'started' line is in the file while the
    run is under way (before: the log stayed empty until the end), its 'finished' line
    carries the client's and the server's numbers, a re-run says why it skips."""
    cfile = _setup(tmp_path)
    runs = tmp_path / "runs"
    log = tmp_path / "campaign.log"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    with open(log, "w") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "hsrtcp", "campaign", str(cfile), "-o", str(runs)],
                                env=env, stdout=fh, stderr=fh)
        try:
            deadline = time.monotonic() + 60
            while not list(runs.glob(".partial-*/workload.start")):
                assert time.monotonic() < deadline and proc.poll() is None, log.read_text()
                time.sleep(0.05)
            during = log.read_text()  # the workload runs now
            under_way = bool(list(runs.glob(".partial-*/workload.start")))
            assert proc.wait(120) == 0, log.read_text()
        finally:
            if proc.poll() is None:
                proc.kill()
    rid = "001_rattan_cubic_duration-4s_r1"
    assert f"[1/1] {rid} started: scenario rattan (1 path), cc cubic, duration 4 s" in during
    if under_way:  # (still running after the read: the read was mid-run)
        assert "finished" not in during
    text = log.read_text()
    line = next(ln for ln in text.splitlines() if f"{rid} finished after" in ln)
    assert "1 flow, " in line and " MB at " in line and "Mbit/s" in line and "retransmissions" in line
    assert "campaign: 1 of 1 runs in " in text and "(1 ok, 0 failed, 0 skipped)" in text
    res = subprocess.run([sys.executable, "-m", "hsrtcp", "campaign", str(cfile), "-o", str(runs)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0
    assert f"[1/1] {rid} skipped: complete bundle with the same configuration" in res.stderr


@pytest.mark.netns
def test_a_failed_run_says_why_and_runs_again_next_time(tmp_path, monkeypatch, capsys):
    """An emulator crash (the 0-bit/s panic, forced past validation) is a failed run with its
    reason in the log; the next campaign makes that run again and says why."""
    cfile = _setup(tmp_path, duration=6)
    write_bw_trace(tmp_path / "bw_down.json", [("20Mbps", 1.5), ("0bps", 5), ("20Mbps", 30)])
    runs = tmp_path / "runs"
    monkeypatch.setattr(rattan, "validate_config", lambda *a, **k: None)
    res = campaign.run(campaign.load(cfile), runs, progress=False)
    assert [r["status"] for r in res] == ["failed"]
    err = capsys.readouterr().err
    rid = res[0]["run_id"]
    assert f"[1/1] {rid} failed after " in err and "rattan crashed" in err
    write_bw_trace(tmp_path / "bw_down.json", [("20Mbps", 60)])
    monkeypatch.undo()
    with pytest.raises(campaign.ConfigConflict):  # the trace changed: another scenario
        campaign.run(campaign.load(cfile), runs, progress=False)
    write_bw_trace(tmp_path / "bw_down.json", [("20Mbps", 1.5), ("0bps", 5), ("20Mbps", 30)])
    monkeypatch.setattr(rattan, "validate_config", lambda *a, **k: None)
    campaign.run(campaign.load(cfile), runs, progress=False)
    err = capsys.readouterr().err
    assert f"[1/1] {rid} started: " in err and "(again: the earlier run failed: rattan crashed" in err
