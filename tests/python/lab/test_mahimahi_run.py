"""A recorded cellular trace through the lab: a saturating UDP flow delivers, second by
second, what the Mahimahi trace allows.

Path: a standing train (no handoffs) whose downlink capacity is the first 30 s of the real
Verizon LTE trace (data/mahimahi in the repository, Saturator recording, see its README),
converted by hsrtcp.lab.scenario.mahimahi; no loss, 5 ms one way. Workload: the measure
server sends UDP at 25 Mbit/s (twice the trace's fastest second), so the emulator's queue
never empties and every delivery opportunity is used.

Witness: the phone-side capture (tcpdump, read with dpkt), IP bytes per second on the trace
clock (t0 = the first packet, the control connection's SYN, which starts Rattan's clock),
against the trace's own 1500-byte opportunities per second.
"""

from __future__ import annotations

from pathlib import Path

import dpkt
import numpy as np
import pytest

from hsrtcp.lab import emulate
from hsrtcp.lab.scenario import mahimahi as mm
from hsrtcp.testing import pcapio

pytestmark = pytest.mark.netns

TRACE = Path(__file__).resolve().parents[3] / "data" / "mahimahi" / "Verizon-LTE-short.down"
FLOW_S = 30
OWD_S = 0.005


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("mm")
    scen = {"scenario": {"name": "verizon-standing", "duration_s": FLOW_S + 5.0},
            "trip": {"speed_kmh": 0.0},
            "link": {"base_owd_ms": OWD_S * 1000, "loss_down": 0.0, "loss_up": 0.0},
            "carriers": [{"name": "V", "trace_down": str(TRACE)}]}
    out = emulate.run(scen, d / "run", {"kind": "measure", "flow": {
        "type": "udp", "duration_s": FLOW_S, "rate_bps": 25e6, "payload_bytes": 1472}})
    assert out.ok, out.errors
    cap = d / "run" / "capture" / "phone_p1.pcap"
    t0 = pcapio.first_ip_time(cap)
    per_s = np.zeros(FLOW_S + 5)
    for rec in pcapio.read_records(cap):
        ip = dpkt.ethernet.Ethernet(rec.data).data
        if isinstance(ip, dpkt.ip.IP) and ip.p == dpkt.ip.IP_PROTO_UDP:
            k = int(rec.ts - t0 - OWD_S)  # the bandwidth cell's clock
            if 0 <= k < len(per_s):
                per_s[k] += ip.len
    return per_s


def test_udp_delivers_what_the_trace_allows(run):
    allowed = mm.bytes_per_bin(mm.read(TRACE), (FLOW_S + 5) * 1000, 1000).astype(float)
    # whole seconds inside the flow: the first second holds the request handshake, the
    # last ones the end of the flow
    sl = slice(1, FLOW_S - 1)
    got, want = run[sl], allowed[sl]
    mean_err = abs(got.mean() / want.mean() - 1)
    corr = float(np.corrcoef(got, want)[0, 1])
    print(f"1-s rates: mean {got.mean() * 8e-6:.3f} vs trace {want.mean() * 8e-6:.3f} Mbit/s "
          f"({100 * mean_err:.2f} %), correlation {corr:.4f}, "
          f"worst second {np.abs(got / want - 1).max() * 100:.1f} %")
    assert mean_err <= 0.03
    assert corr >= 0.95
