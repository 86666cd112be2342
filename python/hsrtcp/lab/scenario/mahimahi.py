"""Mahimahi packet-delivery traces: read them, turn them into rates Rattan can replay, write them.

A Mahimahi trace (``mm-link``) is one integer per line: a millisecond timestamp at which one
1500-byte packet may cross the link (several identical lines = several packets in that
millisecond; a millisecond with no line delivers nothing; the trace repeats after its last
timestamp). It records the capacity a real cellular link offered, e.g. the Saturator traces
shipped in the repository's ``data/mahimahi`` (origin and license in its README).

Rattan 0.1.1 can read such files itself, but turns every empty millisecond into a 0 bit/s
segment and panics (stack-rs/rattan#194). Here a trace becomes piecewise-constant rates instead:
the opportunities of each ``step_ms`` interval are delivered at an even rate
(``n × 1500 × 8 / step_ms`` bit/s) and an interval with none gets :data:`FLOOR_BPS` (1 bit/s: a
packet waits in the queue, as in Mahimahi). Bytes per interval are exactly the trace's; only
the timing *inside* one interval is smoothed (by at most ``step_ms``), see :func:`fidelity`.

Rattan's bandwidth cell carries a packet that is half sent across a rate change at the new
rate (rattan-core ``calculate_bw_change``), so the delivered bytes follow the rates as a fluid.

:func:`from_segments` goes the other way: the capacity of a compiled scenario (any carrier,
including held outages) as a Mahimahi trace for other tools. A Mahimahi trace has no loss and no
delay: dropped outages, loss bursts and RTT spikes are not in it (the caller says so).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .config import ScenarioError

PACKET_BYTES = 1500          # one delivery opportunity (mm-link's fixed MTU)
FLOOR_BPS = 1                # never 0 bit/s: rattan#194 (see impair.OUTAGE_BW_BPS)
MAX_LINES = 50_000_000       # a bound on what we read (≈ 20 h of 100 Mbit/s)


def read(path: str | Path) -> np.ndarray:
    """Delivery-opportunity timestamps (int64 ms, non-decreasing) of a Mahimahi trace file.

    Errors name the file and the line: not an integer, negative, going backwards, empty, or a
    trace whose last timestamp is 0 (Mahimahi needs a positive period to repeat it).
    """
    path = Path(path)
    out: list[int] = []
    prev = 0
    try:
        with open(path, "rb") as f:
            for lineno, raw in enumerate(f, 1):
                s = raw.strip()
                if not s:
                    continue
                if len(out) >= MAX_LINES:
                    raise ScenarioError(f"{path}:{lineno}: more than {MAX_LINES} opportunities, refusing to read on")
                try:
                    v = int(s)
                except ValueError:
                    txt = s[:40].decode("utf-8", "replace")
                    raise ScenarioError(f"{path}:{lineno}: not a millisecond timestamp: {txt!r}") from None
                if v < 0:
                    raise ScenarioError(f"{path}:{lineno}: negative timestamp {v}")
                if v < prev:
                    raise ScenarioError(f"{path}:{lineno}: timestamp {v} goes back (previous {prev})")
                prev = v
                out.append(v)
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read Mahimahi trace: {exc.strerror or exc}") from exc
    if not out:
        raise ScenarioError(f"{path}: empty Mahimahi trace (no timestamps)")
    if out[-1] <= 0:
        raise ScenarioError(f"{path}: last timestamp must be > 0 (it is the period the trace repeats with)")
    return np.asarray(out, dtype=np.int64)


def period_ms(ts: np.ndarray) -> int:
    """Mahimahi repeats a trace every ``last timestamp`` milliseconds."""
    return int(ts[-1])


def tile(ts: np.ndarray, duration_ms: int) -> np.ndarray:
    """Opportunity timestamps over ``[0, duration_ms)``, repeating the trace like mm-link does
    (the n-th repetition is shifted by n periods)."""
    per = period_ms(ts)
    reps = int(math.ceil(duration_ms / per)) + 1
    allts = (ts[None, :] + per * np.arange(reps, dtype=np.int64)[:, None]).ravel()
    return allts[allts < duration_ms]


def counts(ts: np.ndarray, duration_ms: int, step_ms: int) -> np.ndarray:
    """Opportunities per ``step_ms`` interval over ``[0, duration_ms)`` (last interval may be short)."""
    n = int(math.ceil(duration_ms / step_ms))
    return np.bincount(tile(ts, duration_ms) // step_ms, minlength=n)[:n]


def rates_bps(ts: np.ndarray, duration_ms: int, step_ms: int) -> np.ndarray:
    """Per-interval rate (int64 bit/s, ≥ :data:`FLOOR_BPS`) delivering each interval's
    opportunities evenly over it. The last interval, when shorter, uses its real length."""
    c = counts(ts, duration_ms, step_ms)
    lengths = np.full(len(c), step_ms, dtype=np.int64)
    if len(c) and duration_ms % step_ms:
        lengths[-1] = duration_ms % step_ms
    bps = np.rint(c * PACKET_BYTES * 8 * 1000.0 / lengths).astype(np.int64)
    return np.maximum(bps, FLOOR_BPS)


def bytes_per_bin(ts: np.ndarray, duration_ms: int, bin_ms: int = 1000) -> np.ndarray:
    """What the trace allows: 1500 × opportunities per ``bin_ms`` bin."""
    return counts(ts, duration_ms, bin_ms) * PACKET_BYTES


def fluid_bytes_per_bin(rates: np.ndarray, step_ms: int, duration_ms: int, bin_ms: int) -> np.ndarray:
    """Bytes the piecewise-constant rates deliver per ``bin_ms`` bin (a link that never idles)."""
    edges = np.minimum(np.arange(len(rates) + 1, dtype=np.int64) * step_ms, duration_ms)
    cum = np.concatenate([[0.0], np.cumsum(rates * np.diff(edges) / 8000.0)])  # bytes at each edge
    nb = int(math.ceil(duration_ms / bin_ms))
    at = np.minimum(np.arange(nb + 1, dtype=np.int64) * bin_ms, duration_ms)
    return np.diff(np.interp(at, edges, cum))


def fidelity(ts: np.ndarray, duration_ms: int, step_ms: int, bin_ms: int) -> dict:
    """How faithful the conversion at ``step_ms`` is when looked at in ``bin_ms`` bins.

    Returns ``total_ratio`` (converted bytes / trace bytes), ``correlation`` of the per-bin
    bytes (null when a side is constant), ``mean_abs_error`` (mean |difference| per bin as a
    share of the trace's mean bytes per bin) and ``floor_bytes`` (what the 1 bit/s floor adds).
    """
    want = bytes_per_bin(ts, duration_ms, bin_ms).astype(float)
    r = rates_bps(ts, duration_ms, step_ms)
    got = fluid_bytes_per_bin(r, step_ms, duration_ms, bin_ms)
    floor = fluid_bytes_per_bin(np.where(counts(ts, duration_ms, step_ms) == 0, r, 0), step_ms, duration_ms, bin_ms)
    corr = None
    if want.std() > 0 and got.std() > 0:
        corr = float(np.corrcoef(want, got)[0, 1])
    return {"step_ms": step_ms, "bin_ms": bin_ms, "total_ratio": float(got.sum() / want.sum()),
            "correlation": corr, "mean_abs_error": float(np.abs(got - want).mean() / want.mean()),
            "floor_bytes": float(floor.sum())}


def from_segments(start_ms: np.ndarray, end_ms: np.ndarray, bw_bps: np.ndarray) -> np.ndarray:
    """Mahimahi timestamps (int64 ms) for a piecewise-constant capacity: one line each time the
    cumulative capacity passes another 1500 bytes (rates at or below 1 bit/s count as 0)."""
    start_ms = np.asarray(start_ms, dtype=np.int64)
    end_ms = np.asarray(end_ms, dtype=np.int64)
    bw = np.where(np.asarray(bw_bps, dtype=float) <= FLOOR_BPS, 0.0, np.asarray(bw_bps, dtype=float))
    byt = bw * (end_ms - start_ms) / 8000.0
    cum = np.concatenate([[0.0], np.cumsum(byt)])
    n = int(math.floor(cum[-1] / PACKET_BYTES + 1e-9))
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    targets = np.arange(1, n + 1, dtype=float) * PACKET_BYTES
    # segment holding each target, then the instant inside it where the target is reached
    k = np.searchsorted(cum, targets - 1e-6, "left") - 1
    k = np.clip(k, 0, len(bw) - 1)
    t = start_ms[k] + (targets - cum[k]) * 8000.0 / np.where(bw[k] > 0, bw[k], 1.0)
    # a packet may cross once its last byte is available: round the instant up to the ms
    return np.minimum(np.ceil(t - 1e-6).astype(np.int64), end_ms[-1])


def write(path: str | Path, ts: np.ndarray) -> Path:
    """Write timestamps as a Mahimahi trace (one per line). The last line must be > 0."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{int(v)}\n" for v in ts), encoding="ascii")
    return path


def export(compiled, outdir: str | Path) -> list[Path]:
    """Write the capacity of every path and direction of a compiled scenario as Mahimahi traces
    ``p<k>.down`` / ``p<k>.up`` in ``outdir``; return the files.

    Only bandwidth is carried over (held outages become gaps); a Mahimahi trace has no loss and
    no delay, so dropped outages, loss bursts, background loss and RTT spikes are left out.
    mm-link repeats a trace after its last timestamp, which can be up to one packet time before
    the window's end.
    """
    outdir = Path(outdir)
    seg = compiled.segments()
    files = []
    for p in range(1, compiled.paths + 1):
        for d in ("down", "up"):
            g = seg.filter((seg["path"] == p) & (seg["direction"] == d))
            s = np.rint(g["t_start"].to_numpy() * 1000).astype(np.int64)
            e = np.rint(g["t_end"].to_numpy() * 1000).astype(np.int64)
            ts = from_segments(s, e, g["bw_bps"].to_numpy())
            if len(ts) == 0 or ts[-1] <= 0:
                raise ScenarioError(f"{compiled.outdir}: path {p} {d} carries less than one 1500-byte packet: "
                                    "no Mahimahi trace can express it")
            files.append(write(outdir / f"p{p}.{d}", ts))
    return files
