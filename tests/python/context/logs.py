"""Hand-made radio logs for the context tests (origin: written by these helpers, each test
states the handoffs and classes it builds in; nothing here is copied from a real log).

:func:`lab_log` writes the lab's radio.csv format (docs/formats/radio.md) from a list of
(ts, carrier, rat, lac, cid[, speed, rsrp, rsrq]) tuples; :func:`one_hz` expands a cell
timeline into 1-Hz rows plus one row at every change, as the scenario generator does.
"""

from __future__ import annotations

from pathlib import Path

HEADER = "ts,lat,lon,speed_kmh,carrier,rat,lac,cid,rsrp_dbm,rsrq_db"


def fmt(v) -> str:
    return "" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))


def lab_log(path: Path, rows: list[tuple]) -> Path:
    """rows: (ts, carrier, rat, lac, cid, speed=300.0, rsrp=-80.0 for LTE, rsrq=-10.0 for LTE)."""
    lines = [HEADER]
    for r in rows:
        ts, carrier, rat, lac, cid = r[:5]
        speed = r[5] if len(r) > 5 else 300.0
        lte = rat == "LTE"
        rsrp = r[6] if len(r) > 6 else (-80.0 if lte else None)
        rsrq = r[7] if len(r) > 7 else (-10.0 if lte else None)
        lines.append(",".join([f"{ts:.3f}", "39.865200", "116.378600", fmt(speed), carrier or "", rat or "",
                               fmt(lac), fmt(cid), fmt(rsrp), fmt(rsrq)]))
    path.write_text("\n".join(lines) + "\n")
    return path


def one_hz(changes: list[tuple[float, str, int, int]], end_s: float, carrier: str = "M",
           speed=300.0, skip: tuple[float, float] | None = None) -> list[tuple]:
    """Rows at every whole second of [0, end_s] plus one at each change.

    ``changes``: (t, rat, lac, cid) sorted, the first at t = 0. ``skip``: seconds (a, b)
    without rows (a GPS/log gap). ``speed``: a number or a function of t."""
    times = sorted({float(t) for t in range(int(end_s) + 1)} | {c[0] for c in changes})
    rows = []
    for t in times:
        if skip and skip[0] < t < skip[1]:
            continue
        cur = [c for c in changes if c[0] <= t][-1]
        v = speed(t) if callable(speed) else speed
        rows.append((t, carrier, cur[1], cur[2], cur[3], v))
    return rows
