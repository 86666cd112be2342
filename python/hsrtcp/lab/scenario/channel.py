"""The speed-dependent channel (``[speed_channel]``): what motion itself does to the link.

Without this table, speed acts on the emulated link only through the signal (bandwidth) and
the handoffs. The seeds measured more: at 280–310 km/h *without* handoffs, loss, RTT and
their variability are higher than when the train stands (S0 §V, T0-35; Tables VII–IX,
T0-40…45) — Doppler, fast fading and link-layer retransmission delays. This module turns
the train's instantaneous speed v into link quantities, each interpolated between its
stationary value and its value at the reference speed (``ref_speed_kmh``, 300 km/h, the
B-T cruise speed of S1/S3, T1-01)::

    s(v) = (v / ref_speed_kmh) ** exponent          # 0 standing, 1 at cruise
    X(v) = X_static + (X_ref - X_static) * s(v)

- background loss per direction: ``X_static`` = ``loss_{down,up}_static`` (the seeds'
  stationary loss), ``X_ref`` = ``[link] loss_{down,up}`` (the seeds' HSR loss);
- per-step one-way jitter (half-normal scale): ``jitter_ms_static`` → ``[link] jitter_ms``;
- optionally the downlink capacity: ``down_bps_static`` → ``down_bps_ref`` (the seeds'
  radio-limited throughput standing and between handoffs at cruise, T3-03/04), taken as a
  cap on the signal model's capacity;
- two Poisson event processes whose rate is ``X(v)`` (events per second):
  *stalls* (the radio link delivers nothing in either direction for D seconds, D log-normal
  with median ``stall_median_s``; packets wait in the queue and arrive late, as in a held
  handoff outage: the link-layer retransmission stalls behind the seeds' RTT tail, T3-05/18,
  and what fires their RTO-estimation-inaccuracy spurious timeouts, T0-42/43) and *fades* (a
  window of ``fade_s`` whose loss is the conditional chain ``fade_pattern`` in both
  directions: burst loss, the seeds' q, T1-09).

``exponent`` = 2 makes the effect slight at low speed (S0 §V: below 100 km/h speed "has only
a slight effect", s(100) = 0.11). The values and their anchors are in
docs/formats/scenario.md §2 "[speed_channel]". The events are drawn on trip time (not window
time) by time-rescaling a unit-rate Poisson process, one fixed group of draws per event from
their own random stream, so a later window start or a shorter window keeps the earlier events.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .cells import STREAM_SPEED_CHANNEL, rng
from .speed import FINE_DT, Trip

STALL, FADE = 0, 1


@dataclass(frozen=True)
class SpeedEvent:
    """One stall or fade of the speed channel, in trip seconds."""

    kind: str            # "stall" | "fade"
    t: float             # start (trip time)
    duration_s: float


def factor(sc: dict, speed_kmh) -> np.ndarray:
    """s(v): 0 when standing, 1 at the reference speed, (v/ref)^exponent in between and beyond."""
    v = np.maximum(np.asarray(speed_kmh, dtype=float), 0.0)
    return (v / sc["ref_speed_kmh"]) ** sc["exponent"]


def blend(static: float, at_ref: float, s) -> np.ndarray:
    """X(v) = static + (at_ref − static) · s(v), clipped at 0."""
    return np.maximum(static + (at_ref - static) * np.asarray(s, dtype=float), 0.0)


def loss_at(params: dict, direction: str, speed_kmh) -> np.ndarray:
    sc = params["speed_channel"]
    return np.clip(blend(sc[f"loss_{direction}_static"], params["link"][f"loss_{direction}"],
                         factor(sc, speed_kmh)), 0.0, 1.0)


def jitter_ms_at(params: dict, speed_kmh) -> np.ndarray:
    sc = params["speed_channel"]
    return blend(sc["jitter_ms_static"], params["link"]["jitter_ms"], factor(sc, speed_kmh))


def down_bps_at(params: dict, speed_kmh) -> np.ndarray:
    """Radio-limited downlink capacity X(v) between ``down_bps_static`` and ``down_bps_ref``
    (the caller takes the minimum with the signal model's capacity)."""
    sc = params["speed_channel"]
    return blend(sc["down_bps_static"], sc["down_bps_ref"], factor(sc, speed_kmh))


def _poisson_times(r: np.random.Generator, t: np.ndarray, rate: np.ndarray, horizon_s: float,
                   n_extra: int) -> list[tuple[float, np.ndarray]]:
    """Event times of an inhomogeneous Poisson process with ``rate`` (1/s) sampled on ``t``,
    by time-rescaling: cumulative intensity Λ, unit exponentials, t = Λ⁻¹(Σ E). Each event
    takes one exponential and ``n_extra`` standard normals (its marks), in that order."""
    lam = np.concatenate([[0.0], np.cumsum(rate[:-1] * np.diff(t))])
    total = lam[-1]
    out = []
    acc = 0.0
    while True:
        acc += float(r.standard_exponential())
        marks = r.standard_normal(n_extra)
        if acc >= total:
            return out
        ti = float(np.interp(acc, lam, t))
        if ti >= horizon_s:
            return out
        out.append((ti, marks))


def draw(params: dict, trip: Trip, carrier: int, horizon_s: float) -> list[SpeedEvent]:
    """Stalls and fades of one carrier from trip time 0 to ``horizon_s`` (sorted by start)."""
    sc = params["speed_channel"]
    t = np.arange(0.0, horizon_s + FINE_DT, FINE_DT)
    s = factor(sc, trip.v_at(t) * 3.6)
    seed = params["scenario"]["seed"]
    out: list[SpeedEvent] = []
    rate = blend(sc["stall_rate_static"], sc["stall_rate_ref"], s)
    for ti, (z,) in _poisson_times(rng(seed, STREAM_SPEED_CHANNEL, carrier, STALL), t, rate, horizon_s, 1):
        d = min(sc["stall_max_s"], round(float(sc["stall_median_s"] * np.exp(sc["stall_sigma"] * z)), 3))
        if d > 0:
            out.append(SpeedEvent("stall", round(ti, 3), d))
    if sc["fade_s"] > 0:
        rate = blend(sc["fade_rate_static"], sc["fade_rate_ref"], s)
        for ti, _ in _poisson_times(rng(seed, STREAM_SPEED_CHANNEL, carrier, FADE), t, rate, horizon_s, 0):
            out.append(SpeedEvent("fade", round(ti, 3), sc["fade_s"]))
    out.sort(key=lambda e: (e.t, e.kind))
    return out
