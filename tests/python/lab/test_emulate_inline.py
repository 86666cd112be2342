"""emulate's inline options: a combination that drops a value says so (no lab needed)."""

from __future__ import annotations

from hsrtcp.cli.lab import _inline_scenario, _inline_warnings


def test_rate_with_a_trace_names_the_ignored_downlink():
    trace = "data/mahimahi/ATT-LTE-driving.down"
    (w,) = _inline_warnings("20Mbps/3Mbps", trace)
    assert "20 Mbit/s down is not used" in w and "uplink is 3 Mbit/s" in w
    carrier = _inline_scenario("20Mbps/3Mbps", None, None, trace, None, 10.0)["carriers"][0]
    assert carrier["peak_up_bps"] == 3e6 and carrier["trace_down"].endswith("ATT-LTE-driving.down")


def test_no_warning_without_the_combination():
    assert _inline_warnings("20Mbps", None) == []
    assert _inline_warnings(None, "data/mahimahi/ATT-LTE-driving.down") == []
