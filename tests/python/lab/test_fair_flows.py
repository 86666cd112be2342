"""Fairness runs (issue 34 item 3): concurrent flows with one congestion control each share one
bottleneck; the server reads each socket's TCP_CONGESTION back (witness: the kernel)."""

from __future__ import annotations

import json
import os
from pathlib import Path

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


@pytest.mark.netns
def test_two_flows_two_ccs_share_the_bottleneck(tmp_path):
    if os.geteuid() != 0 or ebpf.missing_toolchain():
        pytest.skip("needs root and the eBPF toolchain (hsrbbr)")
    out = emulate.run(ROOT / "scenarios" / "smoke.toml", tmp_path / "run",
                      {"kind": "measure", "flow": {"type": "concurrent", "duration_s": 10,
                                                   "ccs": ["hsrbbr", "cubic"]}})
    assert out.ok, out.errors
    flows = [json.loads(x) for x in (tmp_path / "run" / "server" / "flows.jsonl").read_text().splitlines() if x.strip()]
    assert sorted(f["cc"] for f in flows) == ["cubic", "hsrbbr"]
    assert all(f["ok"] and f["bytes_sent"] > 100_000 for f in flows)
