"""The lab tests' own helpers that judge kernel state (labtools.send_buffer_stall)."""

from __future__ import annotations

import polars as pl

from labtools import send_buffer_stall

T0 = 1_000.0


def _tcpinfo(limited: dict[int, float], held: dict[int, int]) -> pl.DataFrame:
    """Rows of the MPTCP flow at 10 samples a second: subflow 0's cumulative
    sndbuf_limited_s and subflow 1's notsent_bytes per second (a single-path flow beside)."""
    rows = []
    for sec in range(30, 50):
        for k in range(10):
            ts = T0 + sec + k / 10
            rows.append(("0001-conjunction-mptcp", ts, 0, limited.get(sec, 0.012), 0))
            rows.append(("0001-conjunction-mptcp", ts, 1, 0.692, held.get(sec, 0)))
            rows.append(("0002-conjunction-sp-p1", ts, None, 5.0, 3_000_000))
    return pl.DataFrame(rows, schema=["flow_id", "ts", "subflow", "sndbuf_limited_s", "notsent_bytes"], orient="row")


# per-second maxima of the loop run that failed (s12 run 7): path 1's subflow starved from 39 s
# while path 2's held 2.4-0.3 MB it had queued in the outage
FAILED_LIMITED = {39: 0.388, 40: 0.608, 41: 1.288, 42: 1.536, 43: 1.764, 44: 1.976, 45: 2.004}
FAILED_LIMITED.update({s: 2.22 for s in range(46, 50)})
FAILED_HELD = {38: 2_542_144, 39: 2_360_384, 40: 2_184_304, 41: 2_001_124, 42: 1_816_524}


def test_the_stall_of_the_failed_loop_run_is_found_at_its_second():
    assert send_buffer_stall(_tcpinfo(FAILED_LIMITED, FAILED_HELD), T0, 33) == 39


def test_no_stall_without_growth_or_without_data_held_on_the_other_subflow():
    # a clean run: the counter never grows after the return
    assert send_buffer_stall(_tcpinfo({}, FAILED_HELD), T0, 33) is None
    # the counter grows, but path 2's subflow holds nothing: not this starvation
    assert send_buffer_stall(_tcpinfo(FAILED_LIMITED, {}), T0, 33) is None
    # growth before the search starts does not count
    assert send_buffer_stall(_tcpinfo(FAILED_LIMITED, FAILED_HELD), T0, 40) == 40
    # a single 0.05-s blip is not a stall
    assert send_buffer_stall(_tcpinfo({s: 0.062 for s in range(39, 50)}, FAILED_HELD), T0, 33) is None
