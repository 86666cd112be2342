"""Cell layout along the route, serving-cell changes (handoffs) and the radio signal.

Per carrier, the route is cut into serving areas: handoff boundaries are spaced by a log-normal
distance whose median and spread depend on the area type (``config.AREA_TYPES``), and each
area's cell site stands near the middle of it, ``site_offset_m`` beside the track. A boundary is
a ping-pong with probability ``pingpong_p``: the phone hands over, returns to the old cell a
short distance later and hands over again — which is where most handoff intervals under 10 s
come from at 300 km/h. Coverage holes (``[[holes]]``) replace LTE by a 2G network type for a
time window: one inter-system handoff in, 2G cell changes inside (large cells), one out.

The signal model: RSRP = rsrp_ref(area) + carrier offset − 10·n·log10(d / 1 km) + shadowing,
d = 3-D distance from the train to the serving site (antenna 30 m high), shadowing a
Gudmundson (exponentially correlated in distance) Gaussian process. Interference = the two
neighbouring sites of the same carrier with an independent shadowing process. SINR =
S / (load·I + N); RSRQ = RSRP − 10·log10(12·(load·(S + I) + N)) clipped to [−19.5, −3] dB;
bandwidth = peak · min(1, eff·log2(1 + SINR) / se_max), floored at ``min_bps``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .speed import FINE_DT, Trip

ANTENNA_M = 30.0
_SHADOW_GRID_M = 10.0

# RNG stream ids: every random quantity comes from its own stream so that changing one part
# of a scenario (e.g. the impairment parameters) leaves the others (e.g. the cell layout) as is.
STREAM_LAYOUT, STREAM_IMPAIR, STREAM_HOLE_BW, STREAM_HOLE_LAYOUT, STREAM_SHADOW, STREAM_JITTER = range(1, 7)
STREAM_SPEED_CHANNEL = 7  # [speed_channel] spikes and fades (channel.py)


def rng(seed: int, *stream: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([seed, *stream]))


@dataclass
class Cell:
    cid: int
    lac: int
    rat: str
    site_x: float        # m along the route
    site_off: float      # m beside the track
    rsrp_ref: float      # dBm at 1 km (LTE only)
    lte_index: int | None  # position in the carrier's LTE layout (neighbours = ±1)
    generation: str | None = None  # a recorded cell's (recorded.py); radio.csv then says it
    arfcn: int | None = None


@dataclass
class Handoff:
    """A serving-cell change of one carrier at trip time ``t``."""

    carrier: int         # carrier index (path = carrier + 1)
    t: float
    from_cell: int       # indices into CarrierLayout.cells
    to_cell: int
    inter_system: bool
    pingpong: bool
    kind: str | None = None          # [recorded]: the log's 3GPP type, its outage class and
    outage_class: str | None = None  # execution time (recorded.py); None for drawn handoffs
    execution_s: float | None = None


@dataclass
class CarrierLayout:
    index: int
    name: str
    cells: list[Cell] = field(default_factory=list)
    change_t: np.ndarray = field(default_factory=lambda: np.zeros(0))   # trip times of changes
    change_cell: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    handoffs: list[Handoff] = field(default_factory=list)
    holes: list[tuple[float, float, dict]] = field(default_factory=list)  # (start, end, params)

    def serving_at(self, ts) -> np.ndarray:
        """Index of the serving cell at each trip time (the cell after all changes at <= t)."""
        i = np.searchsorted(self.change_t, np.asarray(ts, dtype=float), side="right") - 1
        return self.change_cell[np.clip(i, 0, None)]


def _area_at(areas: list[dict], x_m: float) -> str:
    t = areas[0]["type"]
    for a in areas:
        if a["from_km"] * 1000.0 <= x_m:
            t = a["type"]
    return t


def _next_area(areas: list[dict], x_m: float) -> tuple[float, str] | None:
    for a in areas:
        if a["from_km"] * 1000.0 > x_m:
            return a["from_km"] * 1000.0, a["type"]
    return None


def layout_carrier(params: dict, ci: int, trip: Trip, horizon_s: float) -> CarrierLayout:
    """Generate one carrier's cells and serving-cell changes up to ``horizon_s`` trip seconds."""
    seed = params["scenario"]["seed"]
    carrier = params["carriers"][ci]
    areas, types = params["trip"]["areas"], params["area_types"]
    r = rng(seed, STREAM_LAYOUT, ci)
    x_end = float(trip.x_at(horizon_s)) + 1.0
    lay = CarrierLayout(ci, carrier["name"])
    base_cid = (ci + 1) * 1_000_000
    base_lac = (ci + 1) * 1000
    from . import recorded as _recorded

    if _recorded.applies(params, ci):  # [recorded]: this path's cells and handoffs come from a log
        return _recorded.layout(lay, params, ci, trip, horizon_s, base_cid, base_lac)

    # LTE serving areas along the route, as (x_start, cell) changes
    changes: list[tuple[float, int]] = []
    first = types[_area_at(areas, 0.0)]
    pos = -float(r.uniform(0.0, 1.0)) * first["median_spacing_m"]
    k = 0
    while True:
        at = types[_area_at(areas, max(pos, 0.0))]
        spacing = float(np.clip(at["median_spacing_m"] * np.exp(at["spacing_sigma"] * r.standard_normal()),
                                max(50.0, 0.1 * at["median_spacing_m"]), 8.0 * at["median_spacing_m"]))
        # a cell does not reach far into the next area type: cut it one median spacing past it
        nxt = _next_area(areas, max(pos, 0.0))
        u_cut = float(r.uniform())
        if nxt is not None and pos + spacing > nxt[0]:
            spacing = max(50.0, min(spacing, nxt[0] - pos + u_cut * types[nxt[1]]["median_spacing_m"]))
        site_x = pos + spacing * float(r.uniform(0.3, 0.7))
        site_off = at["site_offset_m"] * float(r.uniform(0.5, 1.5))
        pp = float(r.uniform()) < at["pingpong_p"]
        d1, d2 = float(r.uniform(60.0, 400.0)), float(r.uniform(60.0, 400.0))
        lay.cells.append(Cell(base_cid + k, base_lac + k // carrier["lac_cells"], carrier["rat"],
                              site_x, site_off, at["rsrp_ref_dbm"] + carrier["rsrp_offset_db"], k))
        changes.append((max(pos, 0.0), k))
        # ping-pong at the entry boundary of this area: back to the previous cell, then here again
        if k > 0 and pp and pos > 0 and d1 + d2 < spacing - 20.0:
            changes.append((pos + d1, k - 1))
            changes.append((pos + d1 + d2, k))
        pos += spacing
        k += 1
        if pos > x_end:
            break
    n_lte = len(lay.cells)
    xs = np.array([c[0] for c in changes])
    ts = trip.time_at_x(xs)
    ts[0] = 0.0
    keep = np.isfinite(ts) & (ts <= horizon_s)
    lte_t = ts[keep]
    lte_cell = np.array([c[1] for c in changes])[keep]
    # several changes at the same instant (standing still exactly on a boundary): keep the last
    lte_t, lte_cell = _dedupe(lte_t, lte_cell)
    from . import fixed as _fixed

    fixed_t = _fixed.trip_times(params, horizon_s)
    if fixed_t is not None:  # [handoff] times_s / count: the LTE cells change exactly then
        lte_t, lte_cell = _fixed.relayout(lay, params, ci, trip, fixed_t, base_cid, base_lac)
        n_lte = len(lay.cells)

    # coverage holes of this carrier (merged), each with its own 2G layout
    holes = sorted((h["start_s"], h["start_s"] + h["duration_s"], h) for h in params["holes"]
                   if carrier["name"] in h["carriers"])
    merged: list[list] = []
    for s, e, h in holes:
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e, h])
    # drop the LTE changes inside any hole in one pass (the merged holes are sorted and
    # disjoint; a per-hole scan of every change made many holes compile in quadratic time)
    cut = [(s, min(e, horizon_s + 1.0)) for s, e, _ in merged if s < horizon_s]
    hs = np.array([a for a, _ in cut])
    he = np.array([b for _, b in cut])
    k = np.searchsorted(hs, lte_t, side="right") - 1
    inside = (k >= 0) & (lte_t < he[np.clip(k, 0, None)]) if len(cut) else np.zeros(len(lte_t), dtype=bool)
    t_all, c_all = list(lte_t[~inside]), list(lte_cell[~inside])
    for hi, (s, e, h) in enumerate(merged):
        if s >= horizon_s:
            continue
        e = min(e, horizon_s + 1.0)
        lay.holes.append((s, e, h))
        rr = rng(seed, STREAM_HOLE_LAYOUT, ci, hi)
        # add the 2G cells (the LTE changes inside the hole are gone, above)
        x_s, x_e = float(trip.x_at(s)), float(trip.x_at(e))
        xpos, j = x_s, 0
        in_hole = []  # this hole's change times strictly inside (s, e)
        while True:
            spacing = float(h["median_spacing_m"] * np.exp(0.5 * rr.standard_normal()))
            idx = len(lay.cells)
            lay.cells.append(Cell(base_cid + 500_000 + hi * 1000 + j, base_lac + 900 + hi, h["rat"],
                                  xpos + spacing / 2, 200.0, float("nan"), None))
            tt = s if j == 0 else float(trip.time_at_x(np.array([xpos]))[0])
            if not np.isfinite(tt) or tt >= e:
                lay.cells.pop()
                break
            t_all.append(tt)
            c_all.append(idx)
            if s < tt < e:
                in_hole.append(tt)
            xpos += spacing
            j += 1
            if xpos >= x_e:
                break
        # back to the LTE cell that serves at the hole's end
        li_end = int(lte_cell[max(np.searchsorted(lte_t, e, side="right") - 1, 0)])
        if e <= horizon_s:
            t_all.append(e)
            c_all.append(li_end)
        # inter-system ping-pong at the hole's edges (S3 counts 6 inter-system handoffs in its
        # hole, T3-15/17): entry LTE->2G->LTE->2G, exit 2G->LTE->2G->LTE, a few seconds apart.
        # Own stream: the draws do not depend on how much of the hole lies in the window.
        rp = rng(seed, STREAM_HOLE_LAYOUT, ci, hi, 1)
        u_in, u_out = rp.uniform(size=2)
        d = rp.uniform(2.0, 8.0, size=4)
        in_hole.sort()
        first_2g = len(lay.cells) - j if j > 0 else None  # index of the hole's first 2G cell
        if first_2g is not None:
            li_start = int(lte_cell[max(np.searchsorted(lte_t, s, side="right") - 1, 0)]) if s > 0 else None
            nxt = in_hole[0] if in_hole else e
            if li_start is not None and u_in < h["edge_pingpong_p"] and s + d[0] + d[1] < min(nxt, horizon_s) - 1.0:
                t_all += [s + d[0], s + d[0] + d[1]]
                c_all += [li_start, first_2g]
            prev = in_hole[-1] if in_hole else s
            last_2g = len(lay.cells) - 1
            if e <= horizon_s and u_out < h["edge_pingpong_p"] and e - d[2] - d[3] > prev + 1.0 \
                    and e - d[2] - d[3] > s + d[0] + d[1] + 1.0:
                t_all += [e - d[2] - d[3], e - d[3]]
                c_all += [li_end, last_2g]
    order = np.argsort(np.array(t_all), kind="stable")
    # change times are whole milliseconds everywhere (traces, events, radio log use ms)
    ct, cc = _dedupe(np.round(np.array(t_all)[order], 3), np.array(c_all, dtype=int)[order])
    lay.change_t, lay.change_cell = ct, cc
    for i in range(1, len(ct)):
        a, b = int(cc[i - 1]), int(cc[i])
        if a == b:
            continue
        ca, cb = lay.cells[a], lay.cells[b]
        pp = (ca.lte_index is not None and cb.lte_index is not None and cb.lte_index < ca.lte_index)
        # the return leg and the re-entry of a ping-pong both count as ping-pong handoffs
        if not pp and i >= 2 and int(cc[i - 2]) == b and ca.lte_index is not None and cb.lte_index is not None:
            pp = True
        lay.handoffs.append(Handoff(ci, float(ct[i]), a, b, ca.rat != cb.rat, pp))
    assert n_lte > 0
    return lay


def _dedupe(t: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Collapse changes at the same instant (keep the last) and drop non-changes."""
    if len(t) == 0:
        return t, c
    keep = np.ones(len(t), dtype=bool)
    keep[:-1] = t[1:] != t[:-1]
    t, c = t[keep], c[keep]
    keep = np.ones(len(t), dtype=bool)
    keep[1:] = c[1:] != c[:-1]
    return t[keep], c[keep]


def _shadow_process(r: np.random.Generator, n: int, sigma: float, corr_m: float) -> np.ndarray:
    rho = np.exp(-_SHADOW_GRID_M / corr_m)
    z = r.standard_normal(n)
    out = np.empty(n)
    out[0] = sigma * z[0]
    k = sigma * np.sqrt(1 - rho * rho)
    for i in range(1, n):
        out[i] = rho * out[i - 1] + k * z[i]
    return out


@dataclass
class Signal:
    """Per fine sample (``FINE_DT``) of one carrier: serving cell, RSRP/RSRQ and capacity."""

    t: np.ndarray
    cell: np.ndarray
    rsrp: np.ndarray      # dBm, nan outside LTE
    rsrq: np.ndarray      # dB, nan outside LTE
    bw_down: np.ndarray   # bit/s (LTE model; nan in 2G, filled per step by the compiler)
    bw_up: np.ndarray


def signal(params: dict, lay: CarrierLayout, trip: Trip, horizon_s: float, t: np.ndarray | None = None) -> Signal:
    """The carrier's signal on the ``FINE_DT`` grid up to ``horizon_s``, or at the times ``t``
    (the same field: shadowing is a function of position, generated up to the horizon)."""
    radio = params["radio"]
    carrier = params["carriers"][lay.index]
    seed = params["scenario"]["seed"]
    if t is None:
        t = np.arange(int(np.floor(horizon_s / FINE_DT + 1e-9)) + 1) * FINE_DT
    t = np.asarray(t, dtype=float)
    n = len(t)
    x = trip.x_at(t)
    cell = lay.serving_at(t)
    lte = np.array([c.lte_index is not None for c in lay.cells])[cell]
    site_x = np.array([c.site_x for c in lay.cells])
    site_off = np.array([c.site_off for c in lay.cells])
    ref = np.array([c.rsrp_ref for c in lay.cells])
    lte_ids = np.array([i for i, c in enumerate(lay.cells) if c.lte_index is not None])
    n_lte = len(lte_ids)

    grid_n = int(np.ceil((float(trip.x_at(horizon_s)) + 1.0) / _SHADOW_GRID_M)) + 2
    sh_s = _shadow_process(rng(seed, STREAM_SHADOW, lay.index, 0), grid_n, radio["shadowing_db"], radio["shadowing_corr_m"])
    sh_i = _shadow_process(rng(seed, STREAM_SHADOW, lay.index, 1), grid_n, radio["shadowing_db"], radio["shadowing_corr_m"])
    gx = np.arange(grid_n) * _SHADOW_GRID_M
    shadow_s = np.interp(x, gx, sh_s)
    shadow_i = np.interp(x, gx, sh_i)

    def rx(ci_idx, shadow):
        d = np.sqrt((x - site_x[ci_idx]) ** 2 + site_off[ci_idx] ** 2 + ANTENNA_M ** 2)
        return ref[ci_idx] - 10 * radio["pathloss_exponent"] * np.log10(d / 1000.0) + shadow

    safe = np.where(lte, cell, lte_ids[0])
    s_dbm = np.clip(rx(safe, shadow_s), -140.0, -44.0)  # the RSRP reporting range of 3GPP TS 36.133
    li = np.array([c.lte_index if c.lte_index is not None else 0 for c in lay.cells])[safe]
    prev_i = lte_ids[np.clip(li - 1, 0, n_lte - 1)]
    next_i = lte_ids[np.clip(li + 1, 0, n_lte - 1)]
    i_mw = 10 ** (rx(prev_i, shadow_i) / 10) * (li > 0) + 10 ** (rx(next_i, shadow_i) / 10) * (li < n_lte - 1)
    s_mw = 10 ** (s_dbm / 10)
    n_mw = 10 ** (radio["noise_dbm"] / 10)
    sinr = s_mw / (radio["load"] * i_mw + n_mw)
    rsrq = s_dbm - 10 * np.log10(12 * (radio["load"] * (s_mw + i_mw) + n_mw))
    rsrq = np.clip(rsrq, -19.5, -3.0)
    se = np.minimum(radio["se_max"], radio["se_efficiency"] * np.log2(1 + sinr))
    frac = se / radio["se_max"]
    bw_down = np.maximum(radio["min_bps"], carrier["peak_down_bps"] * frac)
    bw_up = np.maximum(radio["min_bps"], carrier["peak_up_bps"] * frac)
    nan = np.full(n, np.nan)
    return Signal(t, cell, np.where(lte, s_dbm, nan), np.where(lte, rsrq, nan),
                  np.where(lte, bw_down, nan), np.where(lte, bw_up, nan))
