"""Unit conversion and the model deviation D (docs/metrics.md M35)."""

from __future__ import annotations

import numpy as np

from hsrtcp.models._domain import Domain, Floats, broadcast, finish

__all__ = ["deviation", "rto_from_recovery_duration", "to_bits_per_second"]


def to_bits_per_second(packets_per_s: Floats, mss_bytes: Floats) -> Floats:
    """Convert a model throughput in packets/s to bit/s: packets/s · MSS bytes · 8.

    The models count MSS-sized segments; ``mss_bytes`` is the payload size of one segment
    (e.g. 1448 for a 1500-byte MTU with TCP timestamps).
    """
    a, scalar = broadcast(tp=packets_per_s, mss=mss_bytes)
    dom = Domain(a["tp"].shape)
    dom.check_range("packets_per_s", a["tp"], 0.0, np.inf, unit="packets/s")
    dom.check_range("mss_bytes", a["mss"], 0.0, np.inf, lo_open=True, unit="bytes")
    dom.raise_first("to_bits_per_second", scalar)
    return finish(a["tp"] * a["mss"] * 8.0, scalar)


def deviation(tp_model: Floats, tp_trace: Floats) -> Floats:
    """Model deviation D = |TP_model − TP_trace| / TP_trace (seed 001 eq. 22; docs/metrics.md M35).

    Returned as a **fraction** (ruling A20): 0.05 means 5 %, 1.0 means 100 %. Seed 001
    reports mean D of 0.2196 for PFTK and 0.0566 for its enhanced model. Both throughputs
    must be in the same unit; ``tp_trace`` must be > 0.
    """
    a, scalar = broadcast(model=tp_model, trace=tp_trace)
    dom = Domain(a["model"].shape)
    dom.check_range("tp_model", a["model"], 0.0, np.inf)
    dom.check_range("tp_trace", a["trace"], 0.0, np.inf, lo_open=True)
    dom.raise_first("deviation", scalar)
    return finish(np.abs(a["model"] - a["trace"]) / a["trace"], scalar)


def rto_from_recovery_duration(duration: Floats, p: Floats) -> Floats:
    """Invert E[A^TO] = T·f(p)/(1−p): the first timeout T implied by a mean recovery duration.

    ``duration`` in seconds, ``p`` the per-retransmission failure probability (eq. 11).
    Seed 001's HSR mean 5.05 s at p = 0.2726 implies T = 2.31957 s (models.md §4.1).
    """
    from hsrtcp.models.pftk import _f

    a, scalar = broadcast(duration=duration, p=p)
    dom = Domain(a["p"].shape)
    dom.check_range("duration", a["duration"], 0.0, np.inf, unit="s")
    dom.check_range("p", a["p"], 0.0, 1.0, hi_open=True)
    dom.raise_first("rto_from_recovery_duration", scalar)
    return finish(a["duration"] * (1.0 - a["p"]) / _f(a["p"]), scalar)
