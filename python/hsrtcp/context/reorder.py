"""Putting messages stamped out of order back into time order within a bounded window.

A Qualcomm diagnostic port stamps each log entry in the modem and hands them out in batches,
so the packets of a QCSuper/SCAT capture are not in time order: the public QCSuper sample
(tests/data/radio/qcsuper) goes back 327 times, by up to 0.92 s. The RRC state must be
followed in the order the messages happened, so :class:`Reorder` holds each message until the
capture has reached :data:`WINDOW_S` past it (no message later than that is waited for) and
then releases it in (time, packet) order. Memory: the messages of one window, whatever the capture's
length. A message older than what was already released (late by more than the window) cannot
be put back: the caller counts it as a problem and leaves it aside.
"""

from __future__ import annotations

from bisect import insort
from collections import deque

#: how late (s) a message may come and still be put in its place; twice the QCSuper sample's
#: largest lateness, 0.92 s
WINDOW_S = 2.0


class Reorder:
    """Feed ``push(ts, seq, item)`` in capture order; each call returns the (ts, seq, item)
    now safe to release, in time order (``seq`` breaks ties: capture order); :meth:`flush`
    returns the rest at the end. ``push`` returns None, releasing nothing, for a message too
    late to put back (older than one already released)."""

    def __init__(self, window_s: float = WINDOW_S):
        self.window_s = window_s
        # held messages, in time order: mostly they come in order and are appended (a heap
        # cost a quarter more CPU a message on the 1 M-message bench)
        self._held: deque = deque()
        self._newest = float("-inf")
        self._released = float("-inf")  # time of the last message released

    def push(self, ts: float, seq: int, item) -> list[tuple] | tuple | None:
        if ts < self._released:
            return None
        held = self._held
        if ts >= self._newest:
            held.append((ts, seq, item))
            self._newest = ts
        else:
            insort(held, (ts, seq, item))  # (seq is unique: items are never compared)
        edge = self._newest - self.window_s
        if held[0][0] >= edge:
            return ()
        out = []
        while held and held[0][0] < edge:
            out.append(held.popleft())
        self._released = out[-1][0]
        return out

    def flush(self) -> list[tuple]:
        out = list(self._held)
        self._held.clear()
        if out:
            self._released = out[-1][0]
        return out
