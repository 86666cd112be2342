"""Putting messages stamped out of order back into time order within a bounded window.

A Qualcomm diagnostic port stamps each log entry in the modem and hands them out in batches,
so the packets of a QCSuper/SCAT capture are not in time order: the public QCSuper sample
(tests/data/radio/qcsuper) goes back 327 times, by up to 0.92 s. The RRC state must be
followed in the order the messages happened, so :class:`Reorder` holds each message until no
earlier one can still come — the newest time seen minus :data:`WINDOW_S` — and then releases
it in (time, packet) order. Memory: the messages of one window, whatever the capture's
length. A message older than what was already released (late by more than the window) cannot
be put back: the caller counts it as a problem and leaves it aside.
"""

from __future__ import annotations

import heapq

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
        self._heap: list[tuple] = []
        self._newest = float("-inf")
        self._released = float("-inf")  # time of the last message released
        self.peak = 0  # most messages held at once (the memory bound, for the tests)

    def push(self, ts: float, seq: int, item) -> list[tuple] | None:
        if ts < self._released:
            return None
        heapq.heappush(self._heap, (ts, seq, item))
        self.peak = max(self.peak, len(self._heap))
        self._newest = max(self._newest, ts)
        out = []
        edge = self._newest - self.window_s
        while self._heap and self._heap[0][0] < edge:
            out.append(heapq.heappop(self._heap))
        if out:
            self._released = out[-1][0]
        return out

    def flush(self) -> list[tuple]:
        out = [heapq.heappop(self._heap) for _ in range(len(self._heap))]
        if out:
            self._released = out[-1][0]
        return out
