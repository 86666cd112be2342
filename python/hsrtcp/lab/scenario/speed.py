"""Speed profile of a trip: where the train is at every instant.

Two forms:

- constant speed (``trip.stations_km = []``): x(t) = v·t from t = 0, optionally after standing
  ``depart_after_s`` at the start (then accelerating at ``accel_mps2``);
- stop-to-stop (``trip.stations_km = [0, 115]`` …): the train stands ``depart_after_s`` at the
  first station, then on every leg accelerates at ``accel_mps2`` up to the lower of the cruise
  speed and the area's speed limit, brakes at ``decel_mps2`` so that it stops exactly at the next
  station (and slows down before a lower speed limit), stands ``dwell_s`` at intermediate stations
  and ``end_dwell_s`` at the last one.

The profile is computed on a distance grid (forward pass for traction, backward pass for
braking: the classic speed envelope), integrated to time, then resampled on a fixed time grid
of ``FINE_DT`` seconds; beyond the end of the trip the train stands still.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

FINE_DT = 0.1  # s; the time grid every model quantity is sampled on
_DX = 2.0      # m; distance grid of the speed envelope
_LEG_CACHE: dict = {}


@dataclass(frozen=True)
class Trip:
    """The train's motion sampled every ``FINE_DT`` seconds from trip time 0."""

    t: np.ndarray        # s, trip time
    x: np.ndarray        # m, distance along the route (non-decreasing)
    v: np.ndarray        # m/s
    trip_end_s: float    # arrival time at the last station (inf for constant speed)

    def x_at(self, ts) -> np.ndarray:
        return np.interp(ts, self.t, self.x)

    def v_at(self, ts) -> np.ndarray:
        return np.interp(ts, self.t, self.v)

    def time_at_x(self, xs) -> np.ndarray:
        """First trip time at which the train reaches each position (nan if never)."""
        xs = np.asarray(xs, dtype=float)
        i = np.searchsorted(self.x, xs, side="left")
        out = np.full(xs.shape, np.nan)
        ok = i < len(self.x)
        i0 = np.clip(i - 1, 0, len(self.x) - 1)
        i1 = np.clip(i, 0, len(self.x) - 1)
        x0, x1 = self.x[i0], self.x[i1]
        frac = np.where(x1 > x0, (xs - x0) / np.where(x1 > x0, x1 - x0, 1.0), 0.0)
        out[ok] = (self.t[i0] + frac * (self.t[i1] - self.t[i0]))[ok]
        out[xs <= self.x[0]] = self.t[0]
        return out


def speed_limit_at(areas: list[dict], area_types: dict, cruise_mps: float, x_m: np.ndarray) -> np.ndarray:
    """Speed limit (m/s) at each position: min(cruise, area or area-type limit)."""
    starts = np.array([a["from_km"] * 1000.0 for a in areas])
    idx = np.clip(np.searchsorted(starts, x_m, side="right") - 1, 0, len(areas) - 1)
    lim = []
    for a in areas:
        kmh = a["speed_limit_kmh"] if a["speed_limit_kmh"] is not None else area_types[a["type"]]["speed_limit_kmh"]
        lim.append(min(cruise_mps, kmh / 3.6))
    return np.array(lim)[idx]


def _leg(length_m: float, vlim_fn, x0: float, a: float, b: float) -> tuple[np.ndarray, np.ndarray]:
    """Times and positions over one stop-to-stop leg (starting at rest, ending at rest)."""
    n = max(2, int(np.ceil(length_m / _DX)) + 1)
    xs = np.linspace(0.0, length_m, n)
    dx = xs[1] - xs[0]
    vlim = vlim_fn(x0 + xs)
    v = np.empty(n)
    v[0] = 0.0
    for i in range(1, n):  # traction envelope
        v[i] = min(vlim[i], np.sqrt(v[i - 1] ** 2 + 2 * a * dx))
    v[-1] = 0.0
    for i in range(n - 2, -1, -1):  # braking envelope
        v[i] = min(v[i], np.sqrt(v[i + 1] ** 2 + 2 * b * dx))
    dt = 2 * dx / np.maximum(v[1:] + v[:-1], 1e-9)
    t = np.concatenate([[0.0], np.cumsum(dt)])
    return t, x0 + xs


def build_trip(trip: dict, area_types: dict, horizon_s: float) -> Trip:
    """Sample the trip on the ``FINE_DT`` grid up to ``horizon_s`` trip seconds."""
    cruise = trip["speed_kmh"] / 3.6
    a, b = trip["accel_mps2"], trip["decel_mps2"]
    n = int(np.floor(horizon_s / FINE_DT + 1e-9)) + 2
    tt = np.arange(n) * FINE_DT
    stations = trip["stations_km"]

    def vlim_fn(x):
        return speed_limit_at(trip["areas"], area_types, cruise, x)

    if not stations:
        t0 = trip["depart_after_s"]
        limits = speed_limit_at(trip["areas"], area_types, cruise, np.array([a_["from_km"] * 1000.0 for a_ in trip["areas"]]))
        if t0 <= 0.0 and limits.min() >= cruise:
            return Trip(tt, cruise * tt, np.full(n, cruise), float("inf"))
        if t0 <= 0.0 and cruise > 0:
            # Constant speed from the start, but area speed limits still apply (piecewise).
            xs = np.zeros(n)
            x = 0.0
            for i in range(1, n):
                x += float(vlim_fn(np.array([x]))[0]) * FINE_DT
                xs[i] = x
            v = np.concatenate([[xs[1] / FINE_DT], np.diff(xs) / FINE_DT])
            return Trip(tt, xs, v, float("inf"))
        # stand, then accelerate to cruise (no braking: the route is open-ended)
        v = np.where(tt < t0, 0.0, np.minimum(cruise, a * np.maximum(tt - t0, 0.0)))
        x = np.concatenate([[0.0], np.cumsum((v[1:] + v[:-1]) / 2 * FINE_DT)])
        return Trip(tt, x, v, float("inf"))

    # stop-to-stop: assemble (time, position) knots, then resample
    kt, kx = [0.0], [stations[0] * 1000.0]
    now = trip["depart_after_s"]
    kt.append(now)
    kx.append(kx[-1])
    limits_key = json.dumps([trip["areas"], {k: v["speed_limit_kmh"] for k, v in area_types.items()}], sort_keys=True)
    for i, (s0, s1) in enumerate(zip(stations, stations[1:])):
        key = (limits_key, cruise, s0, s1, a, b)
        if key not in _LEG_CACHE:  # legs do not depend on the seed: compute once per process
            if len(_LEG_CACHE) > 64:
                _LEG_CACHE.clear()
            _LEG_CACHE[key] = _leg((s1 - s0) * 1000.0, vlim_fn, s0 * 1000.0, a, b)
        lt, lx = _LEG_CACHE[key]
        kt.extend((now + lt[1:]).tolist())
        kx.extend(lx[1:].tolist())
        now += lt[-1]
        if i < len(stations) - 2:
            now += trip["dwell_s"]
            kt.append(now)
            kx.append(kx[-1])
    trip_end = now
    kt_a, kx_a = np.array(kt), np.array(kx)
    x = np.interp(tt, kt_a, kx_a)  # constant (standing) after the last knot
    v = np.concatenate([np.diff(x) / FINE_DT, [0.0]])
    v = np.maximum(v, 0.0)
    return Trip(tt, x, v, trip_end)


def nominal_duration(trip: dict, area_types: dict) -> float | None:
    """Length of a stop-to-stop trip including dwells (None for a constant-speed trip)."""
    if not trip["stations_km"]:
        return None
    probe = build_trip(trip, area_types, 1.0)  # cheap: only the knots matter
    return probe.trip_end_s + trip["end_dwell_s"]
