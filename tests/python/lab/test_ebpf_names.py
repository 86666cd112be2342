"""Which runs need an eBPF congestion control registered (no root needed)."""

from __future__ import annotations

from hsrtcp.lab import ebpf
from hsrtcp.lab.emulate import ebpf_ccs


def test_names_in_command_lines():
    assert ebpf.names_in("hsrtcp measure client $HSRTCP_SERVER --cc hsrbbr -t 20") == ["hsrbbr"]
    assert ebpf.names_in("iperf3 -c 10.2.1.1 -C hsrbbr") == ["hsrbbr"]
    # a word inside another name is not a request for the algorithm
    assert ebpf.names_in("hsrtcp campaign campaigns/hsrbbr-smoke.toml") == []
    assert ebpf.names_in("--cc bbr") == []


def test_workloads():
    assert ebpf_ccs({"kind": "measure", "flow": {"cc": "hsrbbr"}}) == ["hsrbbr"]
    assert ebpf_ccs({"kind": "measure", "flow": {"cc": "cubic"}}) == []
    assert ebpf_ccs({"kind": "command", "argv": ["sh", "-c", "x --cc hsrbbr"]}) == ["hsrbbr"]
    assert ebpf_ccs({"kind": "command", "argv": ["true"]}, right_command=["iperf3", "-s", "-C", "hsrbbr"]) == ["hsrbbr"]


def test_loaded_ignores_kernel_algorithms():
    with ebpf.loaded(["cubic", "bbr", None]) as names:  # nothing to register, no root needed
        assert names == []
