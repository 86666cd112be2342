"""A run's path conditions measured from its own truth, the audit's condition columns
(docs/accuracy.md "Conditions"; docs/formats/audit.md).

Per run, over all its connections, from the two captures (same host clock in the lab; a
pair's ``time_offset_s`` applied) and the bundle's ``events.csv``:

- ``truth_base_rtt_ms``: the path's RTT without queue: the smallest one-way delay of an
  arrived data segment plus the smallest of an arrived pure ACK.
- ``truth_queue_ms``: the standing queue: the median over arrived data segments of their
  one-way delay minus the smallest (queueing, HARQ and link delay above the base).
- ``outages`` / ``dropped_outages`` / ``dropped_outage_share``: the scheduled outages that
  overlap the span of the run's data (first to last data segment sent) and how many of them
  dropped packets rather than held them; null without ``events.csv`` (a testbed pair).

Each is also put in a band (``*_band``), the level of its breakdown.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from hsrtcp.caveats import QUEUE_BANDS  # shared with the analyzer's caveats (rtt_median - rtt_min)

# Band edges (ms). RTT: 30 ms is T3-06's standing level (99.6 % of RTTs below it); queue: under
# 5 ms no standing queue, 30 ms a few packets at the lab's 1.5 Mbit/s, 100 ms a deep buffer.
RTT_BANDS = ((10, "<10 ms"), (30, "10-30 ms"), (100, "30-100 ms"), (None, ">=100 ms"))

OUTAGE_BANDS = ("no outage", "none dropped", "some dropped", "most dropped")
# every band in table order (docs: the rows of a breakdown)
LEVELS = ("<5 ms", "<10 ms", "5-30 ms", "10-30 ms", "30-100 ms", ">=100 ms", *OUTAGE_BANDS)


def band(ms: float | None, bands) -> str | None:
    if ms is None:
        return None
    return next(name for hi, name in bands if hi is None or ms < hi)


def outage_band(outages: int | None, dropped: int | None) -> str | None:
    """"no outage", "none dropped", "some dropped" (at most half), "most dropped"."""
    if outages is None:
        return None
    if outages == 0:
        return "no outage"
    if not dropped:
        return "none dropped"
    return "some dropped" if 2 * dropped <= outages else "most dropped"


def measure(truth, client_offset_s: float = 0.0, bundle: Path | None = None) -> dict:
    """The condition columns of one run (see the module's text)."""
    down, up, spans = [], [], []
    for c in truth.connections:
        for d in c.data:
            if d.arrived and d.ts_arrived is not None:
                down.append(d.ts_arrived - client_offset_s - d.ts_sent)
        for a in c.acks:
            if a.arrived and a.ts_arrived is not None:
                up.append(a.ts_arrived - (a.ts_sent - client_offset_s))
        if c.data:
            spans.append((min(d.ts_sent for d in c.data), max(d.ts_sent for d in c.data)))
    base = None if not down or not up else round(1000 * (min(down) + min(up)), 3)
    queue = None if not down else round(1000 * (statistics.median(down) - min(down)), 3)
    outages = dropped = None
    if bundle is not None and (bundle / "events.csv").is_file() and spans:
        from hsrtcp.audit.radio import scheduled

        lo, hi = min(a for a, _ in spans), max(b for _, b in spans)
        out = [e for e in scheduled(bundle) if e["kind"] == "outage" and e["ts"] <= hi and lo <= e["ts_end"]]
        outages = len(out)
        dropped = sum(1 for e in out if e.get("outage_kind") == "dropped")
    return {"truth_base_rtt_ms": base, "truth_queue_ms": queue, "outages": outages,
            "dropped_outages": dropped,
            "dropped_outage_share": None if not outages else round(dropped / outages, 4),
            "base_rtt_band": band(base, RTT_BANDS), "queue_band": band(queue, QUEUE_BANDS),
            "outage_band": outage_band(outages, dropped)}
