"""The benchmark runner's wiring on a small fixture (no speed assertions: speed lives in bench/)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from witness_helpers import DATA, ROOT

from hsrtcp.testing import pcapio, peers

pytestmark = pytest.mark.skipif(not (peers.have("tcptrace") and peers.have("tshark")),
                                reason="tcptrace and tshark needed")


def _run(tmp_path, *args):
    out = tmp_path / "results.json"
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "run.py"), "--repeat", "1", "--out", str(out),
                        *args], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(out.read_text()), p.stdout


def _recorded(path) -> str:
    """A path as the committed results record it: relative to the repository when inside it."""
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def test_single_capture_results(tmp_path):
    cap = DATA / "drops_cubic.server.pcap"
    res, text = _run(tmp_path, "--capture", str(cap))
    assert res["mode"] == "single" and res["packets"] == sum(1 for _ in pcapio.read_records(cap))
    for tool in ("tcptrace", "tshark"):
        t = res["tools"][tool]
        assert t["ok"] and t["max_rss_bytes"] > 0 and t["packets_per_s"] > 0, t
        assert _recorded(cap) in t["commands"][0]
    h = res["tools"]["hsrtcp"]
    # hsrtcp may not be built; then its failure is reported, not hidden, and no ratio is made up
    assert ("hsrtcp_over_tcptrace_speed" in res["ratios"]) == bool(h.get("ok"))
    if not h.get("ok"):
        assert h.get("error") or h.get("skipped")
    assert "tcptrace" in text


def test_pair_mode_wires_client_and_server(tmp_path):
    srv, cli = DATA / "drops_cubic.server.pcap", DATA / "drops_cubic.client.pcap"
    res, _ = _run(tmp_path, "--pair", "--client", str(cli), "--server", str(srv), "--skip", "tshark")
    # count packets through the real paths: the recorded ones are relative to the repository, not the cwd
    assert res["packets"] == sum(1 for _ in pcapio.read_records(cli)) + sum(1 for _ in pcapio.read_records(srv))
    cli, srv = _recorded(cli), _recorded(srv)
    assert res["mode"] == "pair" and res["files"] == [cli, srv]
    assert len(res["tools"]["tcptrace"]["commands"]) == 2
    if "commands" in res["tools"]["hsrtcp"]:
        cmd = res["tools"]["hsrtcp"]["commands"][0]
        assert f"--client {cli}" in cmd and f"--server {srv}" in cmd
