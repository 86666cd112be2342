"""Handoffs at fixed times: ``[handoff] times_s`` or ``count`` instead of the cell layout's draw.

For an experiment that needs to know when the handoffs come (a handoff every 10 s, exactly
three handoffs in the window) rather than draw them from the area type's cell spacing. Each
carrier's LTE cells then change exactly at those window times (``count = N``: at
(k + 1/2) · window / N, k = 0 … N−1), no ping-pongs; each cell's site stands where the train
is halfway through the cell's service, so the signal model still gives a plausible RSRP. The
impairments of every handoff (outage, loss burst, RTT spike) and the coverage holes are drawn
as for any scenario.
"""

from __future__ import annotations

import numpy as np

from .config import ScenarioError


def trip_times(params: dict, horizon_s: float) -> np.ndarray | None:
    """The fixed handoffs as trip times, or None when the scenario draws them."""
    h = params["handoff"]
    start = params["scenario"]["start_s"]
    window = horizon_s - start
    if h.get("times_s") is not None:
        t = np.array(h["times_s"], dtype=float)
        if len(t) and t[-1] >= window:
            raise ScenarioError(f"[handoff] key 'times_s' holds {t[-1]:g} s, past the window's end "
                                f"({window:g} s): times are seconds since the window start")
    elif h.get("count") is not None:
        n = int(h["count"])
        t = (np.arange(n) + 0.5) * window / n if n else np.zeros(0)
    else:
        return None
    return np.round(start + t, 3)


def relayout(lay, params: dict, ci: int, trip, times: np.ndarray, base_cid: int, base_lac: int):
    """Replace the carrier's LTE cells by one cell per interval between the fixed handoffs;
    returns the serving changes (trip times from 0, cell indices) as the layout draw does."""
    from .cells import Cell, _area_at

    carrier = params["carriers"][ci]
    areas, types = params["trip"]["areas"], params["area_types"]
    edges = np.concatenate([[0.0], times, [times[-1] + 60.0 if len(times) else 60.0]])
    lay.cells = []
    for k in range(len(edges) - 1):
        x_mid = float(trip.x_at((edges[k] + edges[k + 1]) / 2))
        at = types[_area_at(areas, x_mid)]
        lay.cells.append(Cell(base_cid + k, base_lac + k // carrier["lac_cells"], carrier["rat"], x_mid,
                              at["site_offset_m"], at["rsrp_ref_dbm"] + carrier["rsrp_offset_db"], k))
    return np.concatenate([[0.0], times]), np.arange(len(times) + 1)
