"""The one human format (hsrtcp.units, issue 31): rates in kbit/s or Mbit/s, shares in %,
times in µs/ms/s, never exponent notation, missing values as "-"."""

from __future__ import annotations

import math
import re

import pytest

from hsrtcp.report.summary import matched_line, summary_text
from hsrtcp.units import (axis_scale, human, human_bytes, human_count, human_duration, human_rate, human_share,
                          plain, unit_of)

EXPONENT = re.compile(r"\d[eE][+-]?\d")


@pytest.mark.parametrize("s, shown", [(45e-6, "45 µs"), (1.708e-5, "17.1 µs"), (0.0, "0 s"), (0.1708, "171 ms"),
                                      (0.04, "40 ms"), (2.5, "2.5 s"), (3600.0, "3600 s"), (0.9996, "1 s"),
                                      (float("nan"), "-"), (None, "-")])
def test_durations(s, shown):
    assert human_duration(s) == shown


@pytest.mark.parametrize("bps, shown", [(1.5e6, "1.5 Mbit/s"), (1.53421e6, "1.53 Mbit/s"), (250e3, "250 kbit/s"),
                                        (999_960.0, "1 Mbit/s"), (0, "0 bit/s"), (812, "812 bit/s"),
                                        (5.705e8, "570 Mbit/s"), (2.4e9, "2.4 Gbit/s"), (float("nan"), "-")])
def test_rates(bps, shown):
    assert human_rate(bps) == shown


@pytest.mark.parametrize("x, shown", [(0.0580302, "5.8 %"), (0.0216, "2.16 %"), (1.0, "100 %"), (0.0, "0 %"),
                                      (6.6e-6, "0.00066 %"), (float("nan"), "-"), (None, "-")])
def test_shares(x, shown):
    assert human_share(x) == shown


def test_bytes_counts_and_plain_numbers():
    assert human_bytes(5.705e8) == "570 MB" and human_bytes(812) == "812 B" and human_bytes(0) == "0 B"
    assert human_count(1234567) == "1,234,567" and human_count(None) == "-"
    assert plain(1e20) == "100000000000000000000" and plain(-0.000045678) == "-0.0000457"
    assert plain(9.996) == "10" and plain(0.0) == "0" and plain(math.inf) == "inf"


def test_no_exponent_anywhere():
    for v in (1e-12, 3.3e-9, 4.5e-5, 0.1, 1.0, 12345.678, 5.705e8, 1e15, 1e21, -2e-7):
        for text in (plain(v), human_rate(v), human_duration(v), human_share(v), human_bytes(v)):
            assert not EXPONENT.search(text), (v, text)


def test_units_from_column_names():
    assert unit_of("throughput_bps") == "bit/s" and unit_of("rtt_mean") == "s" and unit_of("rtt_mean_s") == "s"
    assert unit_of("p_d") == "share" and unit_of("spurious_rto_rate") == "share" and unit_of("fraction") == "share"
    assert unit_of("data_bytes") == "B" and unit_of("retransmissions") is None
    assert human(0.0580302, "share") == "5.8 %" and human(1.53421e6, "bit/s") == "1.53 Mbit/s"
    assert human(45e-6, "rtt_mean") == "45 µs" and human(12, None) == "12" and human("x", "s") == "x"


def test_axis_scales():
    assert axis_scale(3.5e6, "bit/s") == (1e6, "Mbit/s") and axis_scale(900e3, "bit/s") == (1e3, "kbit/s")
    assert axis_scale(0.9, "s") == (1e-3, "ms") and axis_scale(1.1, "s") == (1.0, "s")
    assert axis_scale(1.0, "share") == (0.01, "%") and axis_scale(3e6, "bytes") == (1e6, "MB")


def test_summary_rtt_vantage_and_loss_names():
    """The summary printed RTT "0.0 ms" for 45 µs, "(?)" for an unknown vantage, and "ACK loss
    p_a" for the per-ACK rate next to "ACK burst loss P_a" (users pasted the wrong one)."""
    row = {"flow_id": 7, "capture": "/x/a.pcap", "vantage": None, "client_addr": "10.0.0.1", "client_port": 1,
           "server_addr": "10.0.0.2", "server_port": 2, "roles_from_syn": True, "data_dir": "s2c",
           "duration_s": 0.0123, "s2c_payload_bytes": 570_500_000, "c2s_packets": 3, "s2c_packets": 9,
           "retransmissions": 0, "timeouts": 0, "spurious_timeouts": 0, "rtt_mean": 45e-6, "end_reason": "fin",
           "truncated": False}
    text = summary_text([row], [{"capture": "/x/a.pcap", "packets": 12, "tcp_packets": 12, "flows": 1,
                                 "malformed_packets": 0, "error": None}])
    assert "45 µs" in text and "0.0 ms" not in text
    assert "12.3 ms" in text and "570 MB" in text
    assert "(?)" not in text and "a.pcap (vantage unknown)" in text
    assert not EXPONENT.search(text)
    line = matched_line({"flow_id": 1, "p_d": 0.0075, "p_a": 0.0216, "ack_burst_loss": 0.05})
    assert "per-ACK loss rate p_a 2.16 %" in line and "ACK burst loss probability P_a 5 %" in line
    assert "ACK loss p_a" not in line
