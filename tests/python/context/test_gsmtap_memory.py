"""Reading a GSMTAP capture holds what it must, not the messages (issue 33): the reader's
memory is one phone's state, the messages of the reorder window (2 s), one radio row a
second of signalling and one row a handoff. bench/gsmtap_bench.py measures the whole program
at 1 M messages; this test makes a reader that starts to hold every message fail.

Ten times the messages at the same rate (1,000 a second, measurement reports: no handoff)
must leave the peak of Python allocations (tracemalloc) flat within :data:`MARGIN`; a
message held costs about 250 bytes here, so holding all of 100,000 would add some 25 MB."""

from __future__ import annotations

import tracemalloc

from hsrtcp.context import rrc
from hsrtcp.context.gsmtap import gsmtap_v2, read_gsmtap, udp_ipv4, write_gsmtap

T0 = 1_700_000_000.0
RATE = 1000.0  # messages a second: the window holds 2,000 of them
MARGIN = 1_000_000  # bytes: 90,000 more messages may add 200 rows of samples, not the messages


def _capture(path, n: int):
    reports = [udp_ipv4(gsmtap_v2("UL_DCCH", rrc.lte_measurement_report(1, 30 + k, 18), 1300)) for k in range(16)]
    write_gsmtap(path, ((T0 + k / RATE, reports[k % 16]) for k in range(n)))
    return path


def _peak(path) -> int:
    tracemalloc.start()
    try:
        s = read_gsmtap(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert s.messages == {"LTE measurementReport": s.packets}  # every message read
    return peak


def test_reading_ten_times_the_messages_keeps_the_peak_flat(tmp_path):
    small, large = _capture(tmp_path / "10k.pcap", 10_000), _capture(tmp_path / "100k.pcap", 100_000)
    _peak(small)  # warm: pycrate's tables and the message-type tables load once
    p_small, p_large = _peak(small), _peak(large)
    assert p_large - p_small < MARGIN, (p_small, p_large)
