"""hsrbbr's ablation variants (issue 34 item 2, docs/hsrbbr.md "The fair test"): each one builds
from ebpf/hsrbbr.bpf.c with its -DHSRBBR_NO_<CHANGE>, registers under its own name, and a
5-s lab transfer runs with it (the server reads TCP_CONGESTION back). Root and the eBPF
toolchain needed, as in test_ebpf.py."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hsrtcp.lab import ebpf, emulate

pytestmark = pytest.mark.netns

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module", autouse=True)
def toolchain():
    why = "needs root (bpftool struct_ops register)" if os.geteuid() != 0 else ebpf.missing_toolchain()
    if why:
        pytest.skip(f"eBPF congestion control: {why}")


@pytest.mark.parametrize("name", sorted(ebpf.VARIANTS))
def test_variant_builds_registers_and_carries_a_flow(name, tmp_path):
    assert len(name) <= 15  # TCP_CA_NAME_MAX 16 with the NUL
    obj = ebpf.build(name, tmp_path)
    assert name.encode() in obj.read_bytes()  # the struct_ops name is the variant's
    if name in ebpf.available() and not (ebpf.STATE_DIR / name / "owned").exists():
        pytest.skip(f"{name} is registered by someone else")
    out = emulate.run(ROOT / "scenarios" / "smoke.toml", tmp_path / "run",
                      {"kind": "measure", "flow": {"type": "duration", "duration_s": 5, "cc": name}})
    assert out.ok, out.errors
    flows = [json.loads(x) for x in (tmp_path / "run" / "server" / "flows.jsonl").read_text().splitlines() if x.strip()]
    assert flows and all(f["cc"] == name for f in flows)
    assert all(f["ok"] for f in flows) and sum(f["bytes_sent"] for f in flows) > 100_000
    assert name not in ebpf.available()  # unregistered after the run
