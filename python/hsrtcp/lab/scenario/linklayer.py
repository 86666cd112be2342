"""Bursty loss and link-layer retransmission (issue 35): ``[ge_loss]``, ``[handoff_episode]``, ``[harq]``.

- ``[ge_loss]``: Gilbert–Elliott background loss in time. The state (good/bad) is a Markov
  chain over slots of ``slot_ms`` (P(good -> bad) = ``p_gb``, P(bad -> good) = ``p_bg`` per
  slot), drawn at compile time from the seed; each slot's loss trace value is ``loss_good`` or
  ``loss_bad`` (i.i.d. per packet inside the slot, rattan's LossReplay). It replaces the
  background loss of ``[link]`` / ``[speed_channel]`` in its directions.
- ``[handoff_episode]``: a loss episode around each handoff, [h - before_s, h + outage + after_s),
  with its own Gilbert–Elliott chain (an independent stream). Outages and the ``[handoff]``
  burst window take precedence inside it.
- ``[harq]``: radio loss hidden as delay. In every slot of ``slot_ms`` whose loss comes from
  the background, ``[ge_loss]`` or an episode (one probability q per transmission), a packet
  needs k + 1 transmissions with P(k) = q^k (1 - q); it is lost only when all ``max_attempts``
  fail (per packet probability q^max_attempts, the slot's new loss value) and otherwise
  delivered k x ``rtt_ms`` late. rattan's DelayReplay gives one delay per ingress time and
  keeps order (FIFO), so one k is drawn per slot from P(k | delivered) and a packet behind a
  retransmitted one waits for it, as in-order RLC delivery does. The approximation: packets
  that share a slot share its k (with 1-ms slots, one LTE TTI, that is one transport block).
  Outages, holes, ``[handoff]`` bursts and ``[speed_channel]`` fades are not hidden, except
  that ``held_outages = true`` lets HARQ (and RLC) act on the loss under a held outage or a
  stall: the packets still in the delay line when the link is held were sent on the radio
  before it, so their link layer retransmits them as at any other time.
- ``[rlc]`` (needs ``[harq]``, same slots and directions): RLC acknowledged mode above HARQ
  (3GPP TS 36.322). A packet whose HARQ attempts all failed (per-slot probability r = q^M) is
  sent again by RLC after ``rtt_ms`` (status report and retransmission), up to
  ``max_attempts`` RLC transmissions: j ~ P(j | delivered) with P(j) = r^j (1 - r) (the same
  draw as HARQ's, own stream), delay j x ``rtt_ms`` more, residual loss r^max_attempts. The
  approximation: each RLC round fails independently (a deep fade longer than a round is not
  remembered).

Draws are made on trip time from 0 (slot grid anchored there), so a shorter window keeps the
earlier draws.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .cells import rng

STREAM_GE = 8          # [ge_loss] state path (cells.py uses 1..7)
STREAM_EPISODE = 9     # [handoff_episode] state path
STREAM_HARQ = 10       # [harq] per-slot retransmission draws
STREAM_RLC = 11        # [rlc] per-slot retransmission draws

GE_DEFAULTS: dict[str, Any] = {
    "slot_ms": 10,
    "p_gb": 0.001,
    "p_bg": 0.2,
    "loss_good": 0.0,
    "loss_bad": 0.5,
    "directions": ["down", "up"],
}
# an episode is a [ge_loss] chain of its own around each handoff: its window and its defaults
EPISODE_DEFAULTS: dict[str, Any] = {
    "before_s": 0.5,
    "after_s": 2.0,
    **GE_DEFAULTS,
    "p_gb": 0.1,
    "p_bg": 0.1,
    "loss_bad": 1.0,
}
HARQ_DEFAULTS: dict[str, Any] = {
    "rtt_ms": 8,             # LTE FDD HARQ round trip: 8 TTIs of 1 ms (3GPP TS 36.213)
    "max_attempts": 4,       # transmissions including the first (a common LTE setting)
    "slot_ms": 1,            # one TTI
    "directions": ["down", "up"],
    "held_outages": False,   # v1-v3 behaviour: raw loss under held outages and stalls
}
RLC_DEFAULTS: dict[str, Any] = {
    "rtt_ms": 40,            # status report and retransmission round (assumption, see scenario.md)
    "max_attempts": 4,       # RLC transmissions including the first
}
MAX_SLOTS = 50_000_000       # slots per chain over the trip (12 h at 1 ms is 43.2 M)


def resolve_tables(src: str, user: dict, p: dict) -> None:
    """Check ``[ge_loss]``, ``[handoff_episode]``, ``[harq]`` and ``[rlc]`` into ``p`` (only those given)."""
    from .config import DIRECTIONS, _err, _merge_table, _num, _prob

    def dirs(w, v):
        if not isinstance(v, list) or not v or any(x not in DIRECTIONS for x in v) or len(set(v)) != len(v):
            raise _err(src, w, f"key 'directions' must be a non-empty list of 'down'/'up', got {v!r}")
        return list(v)

    def ge(w, t):
        t["slot_ms"] = _num(src, w, "slot_ms", t["slot_ms"], lo=1, hi=10_000, integer=True)
        # both transitions > 0: a chain stuck in one state has no bursts to speak of
        t["p_gb"] = _num(src, w, "p_gb", t["p_gb"], lo=0.0, lo_open=True, hi=1.0)
        t["p_bg"] = _num(src, w, "p_bg", t["p_bg"], lo=0.0, lo_open=True, hi=1.0)
        t["loss_good"] = _prob(src, w, "loss_good", t["loss_good"])
        t["loss_bad"] = _prob(src, w, "loss_bad", t["loss_bad"])
        t["directions"] = dirs(w, t["directions"])
        return t

    if user.get("ge_loss") is not None:
        w = "[ge_loss]"
        p["ge_loss"] = ge(w, _merge_table(src, w, user["ge_loss"], GE_DEFAULTS))
    if user.get("handoff_episode") is not None:
        w = "[handoff_episode]"
        t = _merge_table(src, w, user["handoff_episode"], EPISODE_DEFAULTS)
        t["before_s"] = _num(src, w, "before_s", t["before_s"], lo=0.0, hi=60.0)
        t["after_s"] = _num(src, w, "after_s", t["after_s"], lo=0.0, hi=60.0)
        p["handoff_episode"] = ge(w, t)
    if user.get("harq") is not None:
        w = "[harq]"
        t = _merge_table(src, w, user["harq"], HARQ_DEFAULTS)
        t["rtt_ms"] = _num(src, w, "rtt_ms", t["rtt_ms"], lo=1, hi=1000, integer=True)
        t["max_attempts"] = _num(src, w, "max_attempts", t["max_attempts"], lo=1, hi=64, integer=True)
        t["slot_ms"] = _num(src, w, "slot_ms", t["slot_ms"], lo=1, hi=10_000, integer=True)
        t["directions"] = dirs(w, t["directions"])
        if not isinstance(t["held_outages"], bool):
            raise _err(src, w, f"key 'held_outages' must be true or false, got {t['held_outages']!r}")
        p["harq"] = t
    if user.get("rlc") is not None:
        w = "[rlc]"
        if "harq" not in p:
            raise _err(src, w, "needs [harq]: RLC retransmits what HARQ's attempts did not deliver")
        t = _merge_table(src, w, user["rlc"], RLC_DEFAULTS)
        t["rtt_ms"] = _num(src, w, "rtt_ms", t["rtt_ms"], lo=1, hi=10_000, integer=True)
        t["max_attempts"] = _num(src, w, "max_attempts", t["max_attempts"], lo=1, hi=64, integer=True)
        p["rlc"] = t


def ge_stationary(t: dict) -> tuple[float, float]:
    """(share of slots in the bad state, long-run loss) of a Gilbert–Elliott table."""
    pi_b = t["p_gb"] / (t["p_gb"] + t["p_bg"])
    return pi_b, pi_b * t["loss_bad"] + (1 - pi_b) * t["loss_good"]


def ge_bad_runs(t: dict, seed: int, stream: int, carrier: int, horizon_s: float) -> np.ndarray:
    """Bad-state periods [(start_ms, end_ms)] in trip time over [0, horizon_s), int64 (n, 2).

    Runs alternate: good runs ~ Geometric(p_gb), bad runs ~ Geometric(p_bg) slots (support
    >= 1); the first state is drawn from the stationary distribution, and by memorylessness
    the first run is then geometric too, so the path is stationary from slot 0."""
    slot = int(t["slot_ms"])
    n = int(math.ceil(horizon_s * 1000.0 / slot))
    if n > MAX_SLOTS:
        raise ValueError(f"{n} slots of {slot} ms: more than {MAX_SLOTS}; use a longer slot_ms")
    r = rng(seed, stream, carrier)
    pi_b, _ = ge_stationary(t)
    bad = bool(r.uniform() < pi_b)
    lens: list[np.ndarray] = []
    states: list[np.ndarray] = []
    total = 0
    while total < n:
        # batches of a fixed size, so a longer horizon extends the path and keeps its start
        k = 4096
        g = r.geometric(t["p_gb"], size=k)
        b = r.geometric(t["p_bg"], size=k)
        pair = np.empty(2 * k, dtype=np.int64)
        st = np.empty(2 * k, dtype=bool)
        if bad:
            pair[0::2], pair[1::2] = b, g
            st[0::2], st[1::2] = True, False
        else:
            pair[0::2], pair[1::2] = g, b
            st[0::2], st[1::2] = False, True
        lens.append(pair)
        states.append(st)
        total += int(pair.sum())
    ln = np.concatenate(lens)
    stt = np.concatenate(states)
    ends = np.minimum(np.cumsum(ln), n)
    starts = np.concatenate(([0], ends[:-1]))
    keep = stt & (starts < n)
    return np.stack([starts[keep] * slot, ends[keep] * slot], axis=1).astype(np.int64)


def harq_draw(q: np.ndarray, u: np.ndarray, max_attempts: int) -> tuple[np.ndarray, np.ndarray]:
    """(retransmissions k of the slot's delivered packets, per-packet residual loss) for
    per-transmission loss ``q`` and uniforms ``u``: k ~ P(k | k < M) with P(k) = q^k (1 - q),
    by inverting its distribution function (1 - q^(k+1)) / (1 - q^M); residual loss q^M."""
    q = np.asarray(q, dtype=float)
    m = int(max_attempts)
    resid = q ** m
    k = np.zeros(len(q), dtype=np.int64)
    inner = (q > 0) & (q < 1)
    if inner.any():
        qi, ui = q[inner], u[inner]
        # smallest k with (1 - q^(k+1)) >= u (1 - q^M)
        x = np.log1p(-ui * (1 - qi ** m)) / np.log(qi) - 1.0
        k[inner] = np.clip(np.ceil(x - 1e-12), 0, m - 1).astype(np.int64)
    return k, resid
