"""Fairness runs (issue 34 item 3): concurrent flows with one congestion control each share one
bottleneck; the server reads each socket's TCP_CONGESTION back (witness: the kernel)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from hsrtcp.errors import InputError
from hsrtcp.lab import ebpf, emulate
from hsrtcp.lab.measure import FlowSpec

ROOT = Path(__file__).resolve().parents[3]


def test_ccs_needs_concurrent_and_sets_the_count():
    assert FlowSpec(type="concurrent", duration_s=5, ccs=["hsrbbr", "cubic"]).validate().count == 2
    with pytest.raises(InputError, match="ccs.*concurrent"):
        FlowSpec(type="duration", duration_s=5, ccs=["cubic"]).validate()
    with pytest.raises(InputError, match="ccs must be a list"):
        FlowSpec(type="concurrent", duration_s=5, ccs=[]).validate()



def _concurrent(run: Path, ccs: list[str]) -> None:
    """A 10-s smoke-scenario run of one concurrent flow per cc (skipped without root or
    the eBPF toolchain that builds hsrbbr)."""
    if os.geteuid() != 0 or ebpf.missing_toolchain():
        pytest.skip("needs root and the eBPF toolchain (hsrbbr)")
    out = emulate.run(ROOT / "scenarios" / "smoke.toml", run,
                      {"kind": "measure", "flow": {"type": "concurrent", "duration_s": 10, "ccs": ccs}})
    assert out.ok, out.errors


@pytest.mark.netns
def test_two_flows_two_ccs_share_the_bottleneck(tmp_path):
    _concurrent(tmp_path / "run", ["hsrbbr", "cubic"])
    flows = [json.loads(x) for x in (tmp_path / "run" / "server" / "flows.jsonl").read_text().splitlines() if x.strip()]
    assert sorted(f["cc"] for f in flows) == ["cubic", "hsrbbr"]
    assert all(f["ok"] and f["bytes_sent"] > 100_000 for f in flows)


def _payload_by_client_port(cap):
    from hsrtcp.testing import pcapio

    seen: dict[int, dict[int, int]] = {}
    for p in pcapio.read_tcp(cap):
        if p.sport == 5201 and p.payload_len:
            seen.setdefault(p.dport, {})[p.seq] = p.payload_len  # retransmissions once
    return {port: sum(v.values()) for port, v in seen.items()}


@pytest.mark.netns
def test_compare_fairness_against_the_phone_capture(tmp_path):
    from hsrtcp.lab import compare

    _concurrent(tmp_path / "run", ["hsrbbr", "bbr"])
    f = compare.fairness(tmp_path / "run")
    assert sorted(x["cc"] for x in f["flows"]) == ["bbr", "hsrbbr"]
    # witness: distinct payload bytes per connection the phone received (its capture)
    got = _payload_by_client_port(tmp_path / "run" / "capture" / "phone_p1.pcap")
    rx = np.array([got[int(x["peer"].rsplit(":", 1)[1])] for x in f["flows"]], dtype=float)
    share_rx = rx / rx.sum()
    for x, s in zip(f["flows"], share_rx):
        assert abs(x["share"] - s) < 0.05, (x, s)
    assert f["jain"] == pytest.approx(rx.sum() ** 2 / (2 * (rx ** 2).sum()), abs=0.05)


def test_fairness_reads_a_campaign_bundles_server_flows(tmp_path):
    from hsrtcp.lab import compare

    rows = [{"request": {"kind": "tcp", "label": "vs-cubic-0-hsrbbr"}, "cc": "hsrbbr", "bytes_sent": 3_000_000},
            {"request": {"kind": "tcp", "label": "vs-cubic-1-cubic"}, "cc": "cubic", "bytes_sent": 1_000_000}]
    (tmp_path / "server_flows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    f = compare.fairness(tmp_path)
    assert [x["share"] for x in f["flows"]] == [0.75, 0.25]
    assert f["jain"] == pytest.approx(16 / (2 * 10))  # (3+1)^2 / (2 (9+1))
    (tmp_path / "server_flows.jsonl").write_text(json.dumps(rows[0]) + "\n")
    assert compare.fairness(tmp_path) is None
