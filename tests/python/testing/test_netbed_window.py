"""The testbed's drop window switches on, then off, whatever the scheduling delays (issue 30:
as two timer threads, at load 16 the 0.2-s 'on' of cubic_ack_blackout ran after the 0.5-s
'off', every ACK was dropped for good and the transfer hung for 120 s). No namespaces are
needed: the nft call is replaced by a recorder whose 'on' is slow, as a starved thread is."""

from __future__ import annotations

import threading
import time

from hsrtcp.testing.netbed import Testbed


def _bed(tmp_path, calls, slow_on_s):
    bed = Testbed(p_ack=1.0, drop_window=(0.05, 0.1), workdir=tmp_path)
    done = threading.Event()

    def record(on):
        if on:
            time.sleep(slow_on_s)
        calls.append(on)
        if not on:
            done.set()

    bed._drops_active = record
    return bed, done


def test_a_late_on_still_comes_before_the_off(tmp_path):
    calls: list[bool] = []
    bed, done = _bed(tmp_path, calls, slow_on_s=0.3)
    bed._schedule_window(time.time(), *bed.drop_window)
    assert done.wait(10)
    assert calls == [True, False]


def test_cancelled_window_does_not_switch_off_later(tmp_path):
    calls: list[bool] = []
    bed, _ = _bed(tmp_path, calls, slow_on_s=0.0)
    bed._schedule_window(time.time(), 0.0, 30.0)
    time.sleep(0.05)
    for t in bed._timers:
        t.cancel()
    bed._timers[-1].join(5)
    assert not bed._timers[-1].is_alive() and calls == []


def test_an_error_in_a_scheduled_change_is_kept(tmp_path):
    bed = Testbed(p_ack=1.0, drop_window=(0.0, 0.01), workdir=tmp_path)

    def fail(on):
        raise RuntimeError("nft: no such table")

    bed._drops_active = fail
    bed._schedule_window(time.time(), *bed.drop_window)
    bed._timers[-1].join(5)
    assert bed._timer_errors and "no such table" in bed._timer_errors[0]


def test_path_changes_run_ahead_of_ordinary_work(tmp_path):
    """The window's switches (and the nft they start) run SCHED_FIFO when the testbed may set
    it (root): at load 8-9 two of eight witness runs had the 'on' so late that a 0.3-0.5 s
    window dropped nothing or ran 0.46-0.59 s."""
    import os

    import pytest

    if os.geteuid() != 0:
        pytest.skip("SCHED_FIFO needs root")
    policies: list[int] = []
    bed, done = _bed(tmp_path, [], slow_on_s=0.0)
    record = bed._drops_active
    bed._drops_active = lambda on: (policies.append(os.sched_getscheduler(0)), record(on))
    bed._schedule_window(time.time(), *bed.drop_window)
    assert done.wait(10)
    assert policies == [os.SCHED_FIFO, os.SCHED_FIFO]
    assert os.sched_getscheduler(0) == os.SCHED_OTHER  # the caller's own thread is left as it was
