"""Scenario parameters: the TOML schema, its defaults and its validation.

A scenario file is TOML with the sections below (every key optional; ``docs/formats/scenario.md``
documents each one with its seed anchor). :func:`resolve` turns a user dict into the fully
resolved parameter dict (defaults filled in, every value checked), which is what
``scenario.json`` records. Errors name the file and the key path, e.g.
``scenarios/x.toml: [handoff] unknown key 'outage_medain_s' (did you mean 'outage_median_s'?)``.

Sections: ``[scenario]`` (name, seed, window), ``[trip]`` (speed profile, route), ``[[trip.areas]]``
(area type by route kilometre), ``[area_types.<type>]`` (overrides of the cell-layout presets),
``[link]`` (base delay, queue, background loss), ``[handoff]`` (per-handoff impairments),
``[radio]`` (signal and bandwidth model), ``[[carriers]]`` (one emulated path each),
``[[holes]]`` (coverage holes with 2G fallback) and ``[speed_channel]`` (loss, jitter, link
stalls and fades as functions of speed, channel.py; only in the resolved parameters when the
scenario has the table, so scenarios without it compile to the same files as before);
``[ge_loss]``, ``[handoff_episode]`` and ``[harq]`` likewise only when given (linklayer.py).
"""

from __future__ import annotations

import copy
import difflib
import math
import tomllib
from pathlib import Path
from typing import Any

from hsrtcp.errors import InputError

FORMAT_VERSION = 1

# Cell-layout presets per area type. Handoff boundaries along the track are spaced by a
# log-normal distance (median_spacing_m, spacing_sigma); a boundary is a ping-pong (the phone
# goes back to the old cell and returns) with probability pingpong_p. Calibration (see
# docs/formats/scenario.md and tests/python/scenario/test_handoff_stats.py): "rural" at
# 300 km/h gives S3's cruise window (mean interval 12.9 s, 45.1 % of intervals <= 10 s, T3-18/19);
# "dense_urban" at Beijing in-city speeds gives up to 12 handoffs per 3 min (T0-20);
# "farmland" sometimes gives none in 3 min (T0-21).
AREA_TYPES: dict[str, dict[str, float]] = {
    "dense_urban": {"median_spacing_m": 650.0, "spacing_sigma": 0.55, "pingpong_p": 0.10,
                    "site_offset_m": 60.0, "rsrp_ref_dbm": -96.0, "speed_limit_kmh": 160.0},
    "urban": {"median_spacing_m": 900.0, "spacing_sigma": 0.6, "pingpong_p": 0.08,
              "site_offset_m": 80.0, "rsrp_ref_dbm": -98.0, "speed_limit_kmh": 250.0},
    "suburban": {"median_spacing_m": 950.0, "spacing_sigma": 0.6, "pingpong_p": 0.08,
                 "site_offset_m": 100.0, "rsrp_ref_dbm": -100.0, "speed_limit_kmh": 350.0},
    "rural": {"median_spacing_m": 1030.0, "spacing_sigma": 0.6, "pingpong_p": 0.08,
              "site_offset_m": 120.0, "rsrp_ref_dbm": -101.0, "speed_limit_kmh": 350.0},
    "farmland": {"median_spacing_m": 3500.0, "spacing_sigma": 1.0, "pingpong_p": 0.05,
                 "site_offset_m": 150.0, "rsrp_ref_dbm": -92.0, "speed_limit_kmh": 350.0},
}
AREA_KEYS = set(next(iter(AREA_TYPES.values())))

# Defaults. Numbers carry their seed anchor (docs/metrics.md ids) in a comment.
DEFAULTS: dict[str, Any] = {
    "scenario": {
        "name": "unnamed",
        "seed": 1,
        "duration_s": None,      # None = the whole trip (plus end dwell)
        "start_s": 0.0,          # window start inside the trip
        "step_s": 1.0,           # resolution of signal-driven bandwidth segments
    },
    "trip": {
        "speed_kmh": 300.0,      # cruise speed, B-T line (T1-01, T3-01, A28)
        "accel_mps2": 0.4,       # CRH-class traction
        "decel_mps2": 0.5,       # service braking
        "stations_km": [],       # [] = constant speed from t=0; else stop-to-stop profile
        "dwell_s": 120.0,        # stop at intermediate stations
        "depart_after_s": 0.0,   # time standing at the first station before departure
        "end_dwell_s": 0.0,      # time standing at the last station after arrival
        "origin": [39.8652, 116.3786],   # Beijing South
        "bearing_deg": 125.0,            # roughly towards Tianjin
        "areas": [],             # [{from_km, type, speed_limit_kmh?}], default one area
        "area": "rural",         # area type when `areas` is empty
    },
    "area_types": {},            # overrides: {type: {key: value}}
    "link": {
        "base_owd_ms": 30.0,     # one-way delay of most packets ≈ 30 ms (T1-04)
        "jitter_ms": 0.0,        # std-dev of a per-step extra one-way delay (half-normal), 0 = off
        "loss_down": 0.0075,     # data loss p_d = 0.7526 % (T1-10)
        "loss_up": 0.0066,       # ACK loss p_a = 0.661 % (T1-12)
        "queue_packets": 1000,   # DropTail limit per direction and path
        "queue_bytes": None,     # optional byte limit as well
        "queue_ms": None,        # byte limit = this many ms at the path's nominal rate (compile.py)
    },
    "handoff": {
        # Radio-level interruption per handoff. The TCP-level suspension (M24, 27.8 % > 10 s,
        # T3-20) is longer because RTO back-off stacks on top of it; see scenario.md.
        "outage_median_s": 0.3,
        "outage_sigma": 1.0,
        "outage_max_s": 20.0,
        "rlf_p": 0.1,            # share of handoffs that fail into a radio link failure
        "rlf_median_s": 4.0,     # ... with a long re-establishment outage
        "inter_system_median_s": 2.0,   # LTE <-> 2G handoffs (T3-15/17)
        "outage_kind": "held",   # held (bandwidth 1 bps both ways) | dropped (loss 1.0) | mixed
        "dropped_p": 0.3,        # share of dropped outages when outage_kind = "mixed"
        "burst_s": 1.0,          # loss-burst window after the outage (H2)
        # Conditional chain, 27.6 % loss in the window in emulation.md T2, cf. q = 27.26 % (T1-09)
        "burst_pattern": [0.1, 0.9, 0.9, 0.9, 0.9, 0.0],
        "burst_directions": ["down", "up"],
        "spike_p": 0.5,          # share of handoffs preceded by an RTT spike (H3)
        "spike_median_ms": 400.0,   # extra RTT (split evenly over both directions)
        "spike_sigma": 0.8,
        "spike_s": 1.0,          # spike length, ending at the handoff instant
    },
    "radio": {
        "pathloss_exponent": 3.6,
        "shadowing_db": 6.0,          # log-normal shadowing std-dev
        "shadowing_corr_m": 50.0,     # Gudmundson decorrelation distance
        "noise_dbm": -125.0,          # thermal noise per 15 kHz resource element, NF 7 dB
        "load": 0.5,                  # resource-element load (sets the RSRQ scale)
        "se_efficiency": 0.75,        # fraction of Shannon capacity achieved
        "se_max": 5.5,                # bit/s/Hz at which the peak rate is reached
        "min_bps": 64000.0,           # floor inside LTE coverage
    },
    "carriers": [],              # default: one carrier named "M"
    "holes": [],
    # "speed_channel": SPEED_CHANNEL_DEFAULTS below; off unless the scenario has the table
}

# [speed_channel] (channel.py): X(v) = X_static + (X_ref - X_static) * (v / ref_speed_kmh)^exponent,
# with X_ref the [link] value for loss and jitter. Anchors in docs/formats/scenario.md.
SPEED_CHANNEL_DEFAULTS: dict[str, Any] = {
    "ref_speed_kmh": 300.0,      # B-T cruise speed, where the seeds' HSR values were measured (T1-01)
    "exponent": 2.0,             # below 100 km/h speed has "only a slight effect" (T0-35): s(100) = 0.11
    "loss_down_static": 0.000818,    # D: p_d (T1-10) x stationary/HSR ACK-loss ratio 0.0718/0.661 (T1-12)
    "loss_up_static": 0.000718,      # stationary ACK loss p_a = 0.0718 % (T1-12)
    "jitter_ms_static": 3.3,     # >= 90 % of stationary RTT jitter <= 7.6 ms (T3-07): sigma_RTT 4.6 ms, /sqrt 2
    "stall_rate_static": 0.005,  # 1/s; 0.3 % of time stalled: 99.6 % of stationary RTTs are low (T3-06)
    "stall_rate_ref": 0.1,       # 1/s at ref speed: 5.5 % of time stalled, half of T3-05's 11.4 % RTT >= 0.4 s
    "stall_median_s": 0.4,       # stall length: T3-05's 0.4 s RTT-tail threshold
    "stall_sigma": 0.8,
    "stall_max_s": 20.0,         # as [handoff] outage_max_s (T3-18: RTTs up to 25 s)
    "fade_rate_static": 0.0,     # 1/s; fading needs motion (level-crossing rate ~ Doppler ~ v)
    "fade_rate_ref": 0.02,       # 1/s at ref speed (assumption: adds 0.28 % mean loss at 300 km/h, scenario.md)
    "fade_s": 0.5,               # fade window (s)
    # the [handoff] burst chain: 27.6 % loss in the window, cf. q = 27.26 % (T1-09)
    "fade_pattern": [0.1, 0.9, 0.9, 0.9, 0.9, 0.0],
    # radio-limited downlink capacity (bit/s) standing and at ref speed; None: no cap (the
    # signal model's capacity alone). When set, the step's capacity is min(signal, X(v)).
    "down_bps_static": None,
    "down_bps_ref": None,
}
DEFAULTS["speed_channel"] = SPEED_CHANNEL_DEFAULTS

CARRIER_DEFAULTS: dict[str, Any] = {
    "name": "M",
    "rat": "LTE",
    "peak_down_bps": 20e6,
    "peak_up_bps": 5e6,
    "rsrp_offset_db": 0.0,       # added to the area's rsrp_ref_dbm
    "lac_cells": 24,             # cells per tracking area (lac changes)
    # Capacity from a recorded Mahimahi trace instead of the radio model (mahimahi.py);
    # paths relative to the scenario file. Handoff outages, bursts and spikes still apply.
    "trace_down": None,
    "trace_up": None,
    "trace_step_ms": 10,         # conversion interval: opportunities per interval -> one rate
}

HOLE_DEFAULTS: dict[str, Any] = {
    "start_s": None,             # trip time of the hole start (S3: 462 s, T3-11)
    "duration_s": 129.0,         # S3: 129 s without LTE (T3-11)
    "carriers": None,            # None = all carriers
    "rat": "EDGE",
    "down_bps": [20000.0, 30000.0],   # 20–30 kbit/s (T3-17), uniform per step
    "up_bps": [10000.0, 20000.0],
    "extra_owd_ms": 150.0,       # 2G adds latency
    "loss_down": 0.01,
    "loss_up": 0.01,
    "median_spacing_m": 4000.0,  # 2G cells are large
    "edge_pingpong_p": 0.5,      # chance of an LTE<->2G ping-pong at the entry and at the exit
}

# Bounds on what a scenario may ask for: the compiler's time and memory grow with the
# emulated window (per step_s step and carrier), the route length (cell boundaries) and the
# number of stops. 12 h covers the longest high-speed train services (Beijing-Guangzhou,
# about 8 h) and compiles in a few seconds per carrier; beyond them a typo (1e7 s, a route of
# 100,000 km) ran out of memory or ran for hours. docs/formats/scenario.md lists them.
MAX_WINDOW_S = 12 * 3600.0      # scenario.duration_s, and the whole trip when it is the window
MAX_TRIP_S = 12 * 3600.0        # start_s, and a stop-to-stop trip with its dwells
MAX_ROUTE_KM = 5000.0           # stations_km, trip.areas from_km
MAX_STATIONS = 100
MAX_STOP_S = 3600.0             # dwell_s, depart_after_s, end_dwell_s
MAX_RATE_BPS = 100e9            # peak rates, 2G hole rates, min_bps: 100 Gbit/s
MAX_SEED = 2**63 - 1
# Counts of every list or table a scenario may repeat. Holes: a real trip has a few (S3: one
# in 115 km), and each hole's 2G cells get tracking-area codes from a block of 100 per carrier
# (cells.py), which more holes would overrun. Areas: a 5,000-km route cut every 5 km. Loss
# patterns: real chains have a handful of states; each one is repeated in every loss segment.
MAX_HOLES = 100                 # [[holes]]
MAX_AREAS = 1000                # [[trip.areas]]
MAX_AREA_TYPES = 100            # [area_types.<type>]
MAX_PATTERN = 100               # burst_pattern, fade_pattern
MAX_CARRIERS = 8                # [[carriers]] (emulated paths)

AREA_ENTRY_KEYS = {"from_km", "type", "speed_limit_kmh"}
DIRECTIONS = ("down", "up")
OUTAGE_KINDS = ("held", "dropped", "mixed")


class ScenarioError(InputError):
    """A scenario file or dict is invalid; the message names the source and the key."""


def _err(src: str, where: str, msg: str) -> ScenarioError:
    return ScenarioError(f"{src}: {where} {msg}")


def _unknown(src: str, where: str, key: str, known) -> ScenarioError:
    hint = difflib.get_close_matches(key, sorted(known), n=1)
    extra = f" (did you mean {hint[0]!r}?)" if hint else f" (known keys: {', '.join(sorted(known))})"
    return _err(src, where, f"unknown key {key!r}{extra}")


def _num(src, where, key, v, *, lo=None, hi=None, lo_open=False, integer=False, allow_none=False):
    if v is None and allow_none:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _err(src, where, f"key {key!r} must be a number, got {v!r}")
    if integer and (not float(v).is_integer()):
        raise _err(src, where, f"key {key!r} must be an integer, got {v!r}")
    if not math.isfinite(v):
        raise _err(src, where, f"key {key!r} must be finite, got {v!r}")
    if lo is not None and (v < lo or (lo_open and v == lo)):
        raise _err(src, where, f"key {key!r} must be {'>' if lo_open else '>='} {lo}, got {v!r}")
    if hi is not None and v > hi:
        raise _err(src, where, f"key {key!r} must be <= {hi}, got {v!r}")
    return int(v) if integer else float(v)


def _prob(src, where, key, v):
    return _num(src, where, key, v, lo=0.0, hi=1.0)


def _pattern(src, where, key, v):
    if not isinstance(v, list) or not v:
        raise _err(src, where, f"key {key!r} must be a non-empty list of probabilities, got {v!r}")
    if len(v) > MAX_PATTERN:
        raise _err(src, where, f"key {key!r} holds {len(v)} probabilities, at most {MAX_PATTERN}")
    return [_prob(src, where, f"{key}[{i}]", x) for i, x in enumerate(v)]


def _table_array(src, user: dict, key: str, most: int, too_many) -> list:
    """The array of tables ``[[key]]`` of ``user`` (empty when absent), at most ``most`` long
    (``too_many(n)`` says why not)."""
    arr = user.get(key, [])
    if not isinstance(arr, list):
        raise _err(src, f"[[{key}]]", "must be an array of tables")
    if len(arr) > most:
        raise _err(src, f"[[{key}]]", too_many(len(arr)))
    return arr


def _merge_table(src: str, where: str, user: Any, defaults: dict) -> dict:
    if not isinstance(user, dict):
        raise _err(src, where, f"must be a table, got {type(user).__name__}")
    for k in user:
        if k not in defaults:
            raise _unknown(src, where, k, defaults)
    out = copy.deepcopy(defaults)
    out.update(copy.deepcopy(user))
    return out


def _check_range_pair(src, where, key, v):
    if (not isinstance(v, list) or len(v) != 2):
        raise _err(src, where, f"key {key!r} must be [low, high], got {v!r}")
    lo = _num(src, where, key, v[0], lo=1.0, hi=MAX_RATE_BPS)
    hi = _num(src, where, key, v[1], lo=1.0, hi=MAX_RATE_BPS)
    if hi < lo:
        raise _err(src, where, f"key {key!r} must be [low, high] with low <= high, got {v!r}")
    return [lo, hi]


def _trace_path(src, where, key, v):
    """A Mahimahi trace file: absolute, or relative to the scenario file's directory."""
    if v is None:
        return None
    if not isinstance(v, str) or not v:
        raise _err(src, where, f"key {key!r} must be a Mahimahi trace file path, got {v!r}")
    p = Path(v).expanduser()
    if not p.is_absolute() and Path(src).is_file():
        p = Path(src).resolve().parent / p
    if not p.is_file():
        raise _err(src, where, f"key {key!r}: Mahimahi trace {str(p)!r} not found")
    return str(p.resolve())


def resolve(user: dict, src: str = "<dict>") -> dict:
    """Return the fully resolved, validated parameters of a scenario given as a (TOML) dict.

    ``src`` names the origin (a file path) in error messages.
    """
    if not isinstance(user, dict):
        raise ScenarioError(f"{src}: a scenario must be a table, got {type(user).__name__}")
    optional = {"recorded", "ge_loss", "handoff_episode", "harq", "rlc"}  # tables only when given
    for k in user:
        if k not in DEFAULTS and k not in optional:
            raise _unknown(src, "top level:", k, set(DEFAULTS) | optional)
    p: dict[str, Any] = {}

    # [scenario]
    w = "[scenario]"
    s = _merge_table(src, w, user.get("scenario", {}), DEFAULTS["scenario"])
    if not isinstance(s["name"], str) or not s["name"]:
        raise _err(src, w, f"key 'name' must be a non-empty string, got {s['name']!r}")
    s["seed"] = _num(src, w, "seed", s["seed"], lo=0, hi=MAX_SEED, integer=True)
    s["duration_s"] = _num(src, w, "duration_s", s["duration_s"], lo=0.0, lo_open=True, hi=MAX_WINDOW_S,
                           allow_none=True)
    s["start_s"] = _num(src, w, "start_s", s["start_s"], lo=0.0, hi=MAX_TRIP_S)
    s["step_s"] = _num(src, w, "step_s", s["step_s"], lo=0.1, hi=60.0)
    p["scenario"] = s

    # [trip]
    w = "[trip]"
    t = _merge_table(src, w, user.get("trip", {}), DEFAULTS["trip"])
    t["speed_kmh"] = _num(src, w, "speed_kmh", t["speed_kmh"], lo=0.0, hi=450.0)
    t["accel_mps2"] = _num(src, w, "accel_mps2", t["accel_mps2"], lo=0.01, hi=5.0)
    t["decel_mps2"] = _num(src, w, "decel_mps2", t["decel_mps2"], lo=0.01, hi=5.0)
    for k in ("dwell_s", "depart_after_s", "end_dwell_s"):
        t[k] = _num(src, w, k, t[k], lo=0.0, hi=MAX_STOP_S)
    t["bearing_deg"] = _num(src, w, "bearing_deg", t["bearing_deg"], lo=0.0, hi=360.0)
    o = t["origin"]
    if not (isinstance(o, list) and len(o) == 2):
        raise _err(src, w, f"key 'origin' must be [lat, lon], got {o!r}")
    t["origin"] = [_num(src, w, "origin[0]", o[0], lo=-89.0, hi=89.0),
                   _num(src, w, "origin[1]", o[1], lo=-180.0, hi=180.0)]
    st = t["stations_km"]
    if not isinstance(st, list):
        raise _err(src, w, f"key 'stations_km' must be a list of kilometre positions, got {st!r}")
    if len(st) > MAX_STATIONS:
        raise _err(src, w, f"key 'stations_km' holds {len(st)} stations, at most {MAX_STATIONS}")
    st = [_num(src, w, f"stations_km[{i}]", x, lo=0.0, hi=MAX_ROUTE_KM) for i, x in enumerate(st)]
    if len(st) == 1 or any(b <= a for a, b in zip(st, st[1:])):
        raise _err(src, w, f"key 'stations_km' must hold >= 2 strictly increasing positions, got {st!r}")
    t["stations_km"] = st
    if t["speed_kmh"] == 0.0 and st:
        raise _err(src, w, "key 'speed_kmh' must be > 0 when 'stations_km' is given")
    # area types first, so trip.areas can refer to user-defined ones
    at = user.get("area_types", {})
    if not isinstance(at, dict):
        raise _err(src, "[area_types]", "must be a table of area types")
    if len(at) > MAX_AREA_TYPES:
        raise _err(src, "[area_types]", f"defines {len(at)} area types, at most {MAX_AREA_TYPES}")
    area_types = copy.deepcopy(AREA_TYPES)
    for name, ov in at.items():
        wa = f"[area_types.{name}]"
        base = area_types.get(name, AREA_TYPES["rural"])
        merged = _merge_table(src, wa, ov, base)
        merged["median_spacing_m"] = _num(src, wa, "median_spacing_m", merged["median_spacing_m"], lo=50.0)
        merged["spacing_sigma"] = _num(src, wa, "spacing_sigma", merged["spacing_sigma"], lo=0.0, hi=3.0)
        merged["pingpong_p"] = _prob(src, wa, "pingpong_p", merged["pingpong_p"])
        merged["site_offset_m"] = _num(src, wa, "site_offset_m", merged["site_offset_m"], lo=5.0)
        merged["rsrp_ref_dbm"] = _num(src, wa, "rsrp_ref_dbm", merged["rsrp_ref_dbm"], lo=-150.0, hi=-30.0)
        merged["speed_limit_kmh"] = _num(src, wa, "speed_limit_kmh", merged["speed_limit_kmh"], lo=1.0)
        area_types[name] = merged
    p["area_types"] = area_types
    if t["area"] not in area_types:
        raise _err(src, w, f"key 'area' must be one of {sorted(area_types)}, got {t['area']!r}")
    areas = t["areas"]
    if not isinstance(areas, list):
        raise _err(src, w, "key 'areas' must be an array of tables ([[trip.areas]])")
    if len(areas) > MAX_AREAS:
        raise _err(src, "[[trip.areas]]", f"holds {len(areas)} areas, at most {MAX_AREAS}")
    out_areas = []
    for i, a in enumerate(areas):
        wa = f"[[trip.areas]] #{i + 1}"
        if not isinstance(a, dict):
            raise _err(src, wa, "must be a table")
        for k in a:
            if k not in AREA_ENTRY_KEYS:
                raise _unknown(src, wa, k, AREA_ENTRY_KEYS)
        if "from_km" not in a or "type" not in a:
            raise _err(src, wa, "needs keys 'from_km' and 'type'")
        if a["type"] not in area_types:
            raise _err(src, wa, f"key 'type' must be one of {sorted(area_types)}, got {a['type']!r}")
        e = {"from_km": _num(src, wa, "from_km", a["from_km"], lo=0.0, hi=MAX_ROUTE_KM), "type": a["type"],
             "speed_limit_kmh": _num(src, wa, "speed_limit_kmh", a.get("speed_limit_kmh"), lo=1.0,
                                     allow_none=True)}
        if out_areas and e["from_km"] <= out_areas[-1]["from_km"]:
            raise _err(src, wa, "key 'from_km' must increase from one area to the next")
        out_areas.append(e)
    if out_areas and out_areas[0]["from_km"] != 0.0:
        raise _err(src, "[[trip.areas]] #1", "key 'from_km' must be 0 for the first area")
    if not out_areas:
        out_areas = [{"from_km": 0.0, "type": t["area"], "speed_limit_kmh": None}]
    t["areas"] = out_areas
    _check_trip_length(src, t, area_types)
    p["trip"] = t

    # [link]
    w = "[link]"
    ln = _merge_table(src, w, user.get("link", {}), DEFAULTS["link"])
    ln["base_owd_ms"] = _num(src, w, "base_owd_ms", ln["base_owd_ms"], lo=0.0, hi=10000.0)
    ln["jitter_ms"] = _num(src, w, "jitter_ms", ln["jitter_ms"], lo=0.0, hi=1000.0)
    ln["loss_down"] = _prob(src, w, "loss_down", ln["loss_down"])
    ln["loss_up"] = _prob(src, w, "loss_up", ln["loss_up"])
    ln["queue_packets"] = _num(src, w, "queue_packets", ln["queue_packets"], lo=1, integer=True)
    ln["queue_bytes"] = _num(src, w, "queue_bytes", ln["queue_bytes"], lo=1500, integer=True, allow_none=True)
    ln["queue_ms"] = _num(src, w, "queue_ms", ln["queue_ms"], lo=0.0, lo_open=True, hi=60000.0, allow_none=True)
    if ln["queue_ms"] is not None and ln["queue_bytes"] is not None:
        raise _err(src, w, "keys 'queue_ms' and 'queue_bytes' both set a byte limit: give one")
    p["link"] = ln

    # [handoff]
    w = "[handoff]"
    uh = user.get("handoff", {})
    fixed = {}
    if isinstance(uh, dict):  # times_s / count: in the resolved parameters only when given
        for k in uh:
            if k not in DEFAULTS["handoff"] and k not in FIXED_HANDOFF_KEYS and k not in DROPPED_KEYS:
                raise _unknown(src, w, k, set(DEFAULTS["handoff"]) | FIXED_HANDOFF_KEYS | set(DROPPED_KEYS))
        fixed = fixed_handoffs(src, w, uh.get("times_s"), uh.get("count"), s["duration_s"])
        fixed |= dropped_keys(src, w, uh)
        uh = {k: v for k, v in uh.items() if k not in FIXED_HANDOFF_KEYS and k not in DROPPED_KEYS}
    h = _merge_table(src, w, uh, DEFAULTS["handoff"])
    h.update(fixed)
    for k in ("outage_median_s", "rlf_median_s", "inter_system_median_s", "spike_median_ms"):
        h[k] = _num(src, w, k, h[k], lo=0.0)
    for k in ("outage_sigma", "spike_sigma"):
        h[k] = _num(src, w, k, h[k], lo=0.0, hi=3.0)
    h["outage_max_s"] = _num(src, w, "outage_max_s", h["outage_max_s"], lo=0.0)
    h["burst_s"] = _num(src, w, "burst_s", h["burst_s"], lo=0.0)
    h["spike_s"] = _num(src, w, "spike_s", h["spike_s"], lo=0.0)
    for k in ("rlf_p", "dropped_p", "spike_p"):
        h[k] = _prob(src, w, k, h[k])
    if h["outage_kind"] not in OUTAGE_KINDS:
        raise _err(src, w, f"key 'outage_kind' must be one of {list(OUTAGE_KINDS)}, got {h['outage_kind']!r}")
    h["burst_pattern"] = _pattern(src, w, "burst_pattern", h["burst_pattern"])
    bd = h["burst_directions"]
    if not isinstance(bd, list) or any(d not in DIRECTIONS for d in bd) or len(set(bd)) != len(bd):
        raise _err(src, w, f"key 'burst_directions' must be a list drawn from {list(DIRECTIONS)}, "
                   f"each at most once, got {bd!r}")
    p["handoff"] = h

    # [radio]
    w = "[radio]"
    r = _merge_table(src, w, user.get("radio", {}), DEFAULTS["radio"])
    r["pathloss_exponent"] = _num(src, w, "pathloss_exponent", r["pathloss_exponent"], lo=1.5, hi=6.0)
    r["shadowing_db"] = _num(src, w, "shadowing_db", r["shadowing_db"], lo=0.0, hi=20.0)
    r["shadowing_corr_m"] = _num(src, w, "shadowing_corr_m", r["shadowing_corr_m"], lo=1.0)
    r["noise_dbm"] = _num(src, w, "noise_dbm", r["noise_dbm"], lo=-200.0, hi=-50.0)
    r["load"] = _num(src, w, "load", r["load"], lo=0.01, hi=1.0)
    r["se_efficiency"] = _num(src, w, "se_efficiency", r["se_efficiency"], lo=0.01, hi=1.0)
    r["se_max"] = _num(src, w, "se_max", r["se_max"], lo=0.1, hi=30.0)
    r["min_bps"] = _num(src, w, "min_bps", r["min_bps"], lo=1.0, hi=MAX_RATE_BPS)
    p["radio"] = r

    # [[carriers]]
    cs = _table_array(src, user, "carriers", MAX_CARRIERS,
                      lambda n: f"at most {MAX_CARRIERS} carriers (emulated paths), got {n}")
    if not cs:
        cs = [{}]
    carriers = []
    for i, c in enumerate(cs):
        wc = f"[[carriers]] #{i + 1}"
        c = _merge_table(src, wc, c, CARRIER_DEFAULTS)
        if not isinstance(c["name"], str) or not c["name"].isidentifier():
            raise _err(src, wc, f"key 'name' must be a short identifier, got {c['name']!r}")
        if not isinstance(c["rat"], str) or not c["rat"]:
            raise _err(src, wc, f"key 'rat' must be a network-type name, got {c['rat']!r}")
        c["peak_down_bps"] = _num(src, wc, "peak_down_bps", c["peak_down_bps"], lo=1000.0, hi=MAX_RATE_BPS)
        c["peak_up_bps"] = _num(src, wc, "peak_up_bps", c["peak_up_bps"], lo=1000.0, hi=MAX_RATE_BPS)
        c["rsrp_offset_db"] = _num(src, wc, "rsrp_offset_db", c["rsrp_offset_db"], lo=-60.0, hi=60.0)
        c["lac_cells"] = _num(src, wc, "lac_cells", c["lac_cells"], lo=1, integer=True)
        for k in ("trace_down", "trace_up"):
            c[k] = _trace_path(src, wc, k, c[k])
        c["trace_step_ms"] = _num(src, wc, "trace_step_ms", c["trace_step_ms"], lo=1, hi=1000, integer=True)
        carriers.append(c)
    names = [c["name"] for c in carriers]
    if len(set(names)) != len(names):
        raise _err(src, "[[carriers]]", f"carrier names must be unique, got {names}")
    p["carriers"] = carriers

    # [[holes]]
    hs = _table_array(src, user, "holes", MAX_HOLES, lambda n: f"holds {n} holes, at most {MAX_HOLES}")
    holes = []
    for i, hh in enumerate(hs):
        wh = f"[[holes]] #{i + 1}"
        hh = _merge_table(src, wh, hh, HOLE_DEFAULTS)
        if hh["start_s"] is None:
            raise _err(src, wh, "needs key 'start_s' (trip seconds)")
        hh["start_s"] = _num(src, wh, "start_s", hh["start_s"], lo=0.0, hi=MAX_TRIP_S)
        hh["duration_s"] = _num(src, wh, "duration_s", hh["duration_s"], lo=0.0, lo_open=True, hi=MAX_TRIP_S)
        if hh["carriers"] is None:
            hh["carriers"] = list(names)
        if not isinstance(hh["carriers"], list) or any(n not in names for n in hh["carriers"]) \
                or len(set(hh["carriers"])) != len(hh["carriers"]):
            raise _err(src, wh, f"key 'carriers' must list carrier names from {names}, each at most once, "
                       f"got {hh['carriers']!r}")
        hh["down_bps"] = _check_range_pair(src, wh, "down_bps", hh["down_bps"])
        hh["up_bps"] = _check_range_pair(src, wh, "up_bps", hh["up_bps"])
        hh["extra_owd_ms"] = _num(src, wh, "extra_owd_ms", hh["extra_owd_ms"], lo=0.0)
        hh["loss_down"] = _prob(src, wh, "loss_down", hh["loss_down"])
        hh["loss_up"] = _prob(src, wh, "loss_up", hh["loss_up"])
        hh["median_spacing_m"] = _num(src, wh, "median_spacing_m", hh["median_spacing_m"], lo=100.0)
        hh["edge_pingpong_p"] = _prob(src, wh, "edge_pingpong_p", hh["edge_pingpong_p"])
        if not isinstance(hh["rat"], str) or not hh["rat"]:
            raise _err(src, wh, f"key 'rat' must be a network-type name, got {hh['rat']!r}")
        holes.append(hh)
    p["holes"] = holes

    # [speed_channel]: present in the resolved parameters only when given (see module doc)
    if user.get("speed_channel") is not None:
        w = "[speed_channel]"
        sc = _merge_table(src, w, user["speed_channel"], SPEED_CHANNEL_DEFAULTS)
        sc["ref_speed_kmh"] = _num(src, w, "ref_speed_kmh", sc["ref_speed_kmh"], lo=1.0, hi=450.0)
        sc["exponent"] = _num(src, w, "exponent", sc["exponent"], lo=0.0, hi=6.0)
        for k in ("loss_down_static", "loss_up_static"):
            sc[k] = _prob(src, w, k, sc[k])
        sc["jitter_ms_static"] = _num(src, w, "jitter_ms_static", sc["jitter_ms_static"], lo=0.0, hi=1000.0)
        for k in ("stall_rate_static", "stall_rate_ref", "fade_rate_static", "fade_rate_ref"):
            sc[k] = _num(src, w, k, sc[k], lo=0.0, hi=10.0)
        for k in ("stall_median_s", "stall_max_s", "fade_s"):
            sc[k] = _num(src, w, k, sc[k], lo=0.0, hi=60.0)
        sc["stall_sigma"] = _num(src, w, "stall_sigma", sc["stall_sigma"], lo=0.0, hi=3.0)
        sc["fade_pattern"] = _pattern(src, w, "fade_pattern", sc["fade_pattern"])
        for k in ("down_bps_static", "down_bps_ref"):
            sc[k] = _num(src, w, k, sc[k], lo=1000.0, hi=MAX_RATE_BPS, allow_none=True)
        if (sc["down_bps_static"] is None) != (sc["down_bps_ref"] is None):
            raise _err(src, w, "keys 'down_bps_static' and 'down_bps_ref' go together (both or neither)")
        p["speed_channel"] = sc

    # [ge_loss], [handoff_episode], [harq], [rlc] (linklayer.py): only when given
    from .linklayer import resolve_tables

    resolve_tables(src, user, p)

    # [recorded]: one path's handoffs from a radio log (recorded.py); only when given
    if user.get("recorded") is not None:
        from .recorded import resolve_recorded

        p["recorded"] = resolve_recorded(src, user["recorded"], p)
    return p


#: [handoff] keys that fix the handoffs instead of the cell layout (fixed.py)
FIXED_HANDOFF_KEYS = {"times_s", "count"}
# How a dropped outage treats the link (channel v6, docs/lab.md "Channel v6"); in the resolved
# parameters only when given, so the scenarios without them resolve (and compile) as before.
# dropped_uplink: "dropped" (loss 1.0, the default) or "held" (the phone keeps its uplink and
# sends it after the outage, as a held outage); dropped_flush_bps: the bandwidth of a dropped
# direction during the outage (0 = the radio's): a high rate empties the eNodeB queue into the
# outage's total loss, so what it held when the outage began is lost, not delivered after it.
DROPPED_KEYS = {"dropped_uplink": "dropped", "dropped_flush_bps": 0.0}
DROPPED_UPLINK = ("dropped", "held")


def dropped_keys(src, where, uh: dict) -> dict:
    """The given :data:`DROPPED_KEYS` of a [handoff] table, checked."""
    out = {}
    if "dropped_uplink" in uh:
        if uh["dropped_uplink"] not in DROPPED_UPLINK:
            raise _err(src, where, f"key 'dropped_uplink' must be one of {list(DROPPED_UPLINK)}, "
                       f"got {uh['dropped_uplink']!r}")
        out["dropped_uplink"] = uh["dropped_uplink"]
    if "dropped_flush_bps" in uh:
        out["dropped_flush_bps"] = _num(src, where, "dropped_flush_bps", uh["dropped_flush_bps"], lo=0.0, hi=1e10)
    return out
MAX_FIXED_HANDOFFS = 10000


def fixed_handoffs(src: str, where: str, times, count, window_s: float | None) -> dict:
    """Check ``times_s`` (window seconds, increasing) and ``count`` (that many handoffs evenly
    spread over the window); at most one of them. Returns the given ones, checked."""
    if times is not None and count is not None:
        raise _err(src, where, "keys 'times_s' and 'count' exclude each other (give the times or a count)")
    out: dict[str, Any] = {}
    if times is not None:
        if not isinstance(times, list) or len(times) > MAX_FIXED_HANDOFFS:
            raise _err(src, where, f"key 'times_s' must be a list of at most {MAX_FIXED_HANDOFFS} window "
                       f"times in seconds, got {times!r}")
        ts = [_num(src, where, f"times_s[{i}]", t, lo=0.0, lo_open=True, hi=MAX_WINDOW_S) for i, t in enumerate(times)]
        if any(b <= a for a, b in zip(ts, ts[1:])):
            raise _err(src, where, f"key 'times_s' must increase strictly, got {times!r}")
        if window_s is not None and ts and ts[-1] >= window_s:
            raise _err(src, where, f"key 'times_s' holds {ts[-1]:g} s, past the window's end ({window_s:g} s): "
                       "times are seconds since the window start")
        out["times_s"] = [round(t, 3) for t in ts]
    if count is not None:
        out["count"] = _num(src, where, "count", count, lo=0, hi=MAX_FIXED_HANDOFFS, integer=True)
    return out


def _check_trip_length(src: str, trip: dict, area_types: dict) -> None:
    """A stop-to-stop trip must end within MAX_TRIP_S. Estimated from above (every leg at
    the lowest speed any of its areas allows, a full stop at every station) so that no
    trip the compiler would take hours over gets through."""
    st = trip["stations_km"]
    if not st:
        return
    limits = [trip["speed_kmh"]]
    for a in trip["areas"]:
        limits.append(a["speed_limit_kmh"] or area_types[a["type"]]["speed_limit_kmh"])
    v = min(limits) / 3.6  # m/s
    stops = len(st) - 1
    est = ((st[-1] - st[0]) * 1000.0 / v + stops * (v / trip["accel_mps2"] + v / trip["decel_mps2"])
           + (stops - 1) * trip["dwell_s"] + trip["depart_after_s"] + trip["end_dwell_s"])
    if est > MAX_TRIP_S:
        raise _err(src, "[trip]", f"key 'stations_km' ({st[0]:g} to {st[-1]:g} km at {min(limits):g} km/h, "
                   f"the lowest speed allowed on the route) makes a trip of up to {est / 3600:.1f} h; "
                   f"at most {MAX_TRIP_S / 3600:g} h")


def check_overrides(src: str, *, seed: int | None = None, duration_s: float | None = None,
                    start_s: float | None = None) -> None:
    """Check command-line overrides of [scenario] (``--seed``, ``--duration``, ``--start``)
    against the same bounds as the file's keys; the message names the option."""
    def opt(name: str, key: str, v, **bounds) -> None:
        try:
            _num(src, "[scenario]", key, v, **bounds)
        except ScenarioError as exc:
            raise ScenarioError(str(exc).replace(f"[scenario] key {key!r}", f"option {name} ([scenario] {key})")) \
                from None

    if seed is not None:
        opt("--seed", "seed", seed, lo=0, hi=MAX_SEED, integer=True)
    if duration_s is not None:
        opt("--duration", "duration_s", duration_s, lo=0.0, lo_open=True, hi=MAX_WINDOW_S)
    if start_s is not None:
        opt("--start", "start_s", start_s, lo=0.0, hi=MAX_TRIP_S)


def read_toml(path: str | Path, what: str = "scenario file", error: type[InputError] = ScenarioError) -> dict:
    """Parse the TOML file of ``what`` (a scenario, and the lab's campaign files and Rattan
    configs); a file that cannot be read, is not UTF-8 or not TOML is ``error`` naming the
    file (and the line and column of a syntax error)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise error(f"{path}: cannot read {what}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text at byte {exc.start}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: not valid TOML: {exc}") from exc


def from_options(*, speed_kmh: float | None = None, area: str | None = None,
                 duration_s: float | None = None, carriers: int | None = None,
                 seed: int | None = None, name: str | None = None) -> dict:
    """A scenario dict from command-line options alone: constant speed through one area type."""
    d: dict[str, Any] = {"scenario": {}, "trip": {}}
    d["scenario"]["name"] = name or (f"{area or 'rural'}-{speed_kmh:g}kmh" if speed_kmh is not None else (area or "rural"))
    if seed is not None:
        d["scenario"]["seed"] = seed
    d["scenario"]["duration_s"] = 60.0 if duration_s is None else duration_s
    if speed_kmh is not None:
        d["trip"]["speed_kmh"] = speed_kmh
    if area is not None:
        d["trip"]["area"] = area
    if speed_kmh is not None and speed_kmh > 0:
        # an explicit speed wins over the area type's speed limit
        d["trip"]["areas"] = [{"from_km": 0.0, "type": area or "rural", "speed_limit_kmh": float(speed_kmh)}]
    if carriers:
        names = ["M", "U", "T", "C4", "C5", "C6", "C7", "C8"]
        d["carriers"] = [{"name": names[i]} for i in range(carriers)]
    return d
