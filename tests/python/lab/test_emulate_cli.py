"""`hsrtcp emulate -- COMMAND` runs COMMAND on the phone side; the measure server answers on
the server side at $HSRTCP_SERVER; COMMAND's output and exit code come back."""

from __future__ import annotations

import json

import pytest

from hsrtcp.lab import netns
from hsrtcp.testing import pcapio

from labtools import emulate_measure, hsrtcp_run, one_path_config, write_bw_trace

pytestmark = pytest.mark.netns


def test_emulate_runs_a_command_through_the_path(tmp_path):
    write_bw_trace(tmp_path / "bw_down.json", [("10Mbps", 30)])
    cfg = one_path_config(tmp_path)
    res = emulate_measure(["-s", cfg], tmp_path / "run", "--cc", "reno", "--flow", "size", "--size", "1MB",
                          timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    # it says what it does (before: nothing but the run directory at the end)
    said = [ln for ln in res.stderr.splitlines() if ln.startswith("emulate: ")]
    assert said[0] == f"emulate: Rattan config {cfg}: 1 path(s)"
    assert said[1].startswith("emulate: starting the emulator; on the phone side (10.1.1.1): ")
    assert "measure client '$HSRTCP_SERVER' --cc reno" in said[1] and "the measure server (10.2.1.1:5201)" in said[1]
    assert said[2].startswith("emulate: done after ") and "the command exited 0" in said[2]
    results = json.loads(res.stdout[res.stdout.index("["):])  # the client's JSON, passed through
    assert results[0]["bytes"] == 1_000_000 and results[0]["server_cc"] == "reno"
    assert results[0]["local"].startswith("10.1.1.1:")  # it really ran on the phone side
    sent = list(pcapio.read_tcp(tmp_path / "run" / "capture" / "server.pcap"))
    assert sum(p.payload_len for p in sent if p.sport == 5201) >= 1_000_000
    rid = json.loads((tmp_path / "run" / "manifest.json").read_text())["rattan"]["id"]
    assert rid and not [n for n in netns.list_netns() if n.endswith("-" + rid)]
    # a failing command's exit code is the run's
    res = hsrtcp_run("emulate", "-s", cfg, "-o", tmp_path / "run2", "--", "sh", "-c", "exit 7", timeout=120)
    assert res.returncode == 7
