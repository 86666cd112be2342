"""Warnings about a scenario that compiles but probably does not do what its author meant.

A scenario with a mistake of this kind is valid (a hole may lie in a part of the trip another
window uses), so these are warnings, printed by ``hsrtcp scenario generate``, ``emulate`` and
``campaign``, not errors.
"""

from __future__ import annotations


def warnings(sc) -> list[str]:
    """Phrases for the loaded :class:`~hsrtcp.lab.scenario.Scenario` ``sc`` (its window as
    given: seed, start and duration overrides applied)."""
    out = []
    start, dur = sc.window()
    end = start + dur
    for i, h in enumerate(sc.params["holes"]):
        s, e = h["start_s"], h["start_s"] + h["duration_s"]
        if e <= start or s >= end:
            out.append(f"{sc.source}: [[holes]] #{i + 1} (trip {s:g}-{e:g} s) lies outside the emulated window "
                       f"(trip {start:g}-{end:g} s) and has no effect; move its start_s or the window "
                       f"([scenario] start_s / duration_s)")
    return out


def flow_warning(flow_s: float | None, window_s: float | None, what: str = "the flow") -> str | None:
    """A flow that outlasts the scenario's window runs its rest on the path's last values."""
    if flow_s is None or window_s is None or flow_s <= window_s:
        return None
    return (f"{what} lasts {flow_s:g} s but the scenario's window is {window_s:g} s: for the last "
            f"{flow_s - window_s:g} s the path keeps the window's last rate, delay and loss (a window that "
            f"ends in an outage holds the path at 1 bit/s); make the window longer or the flow shorter")


def end_outages(events_csv, window_s: float) -> list[str]:
    """A compiled window that ends inside an outage: the traces hold their last values, so that
    path stays down for as long as a flow outlasts the window."""
    import polars as pl

    from .compile import _events_schema

    ev = pl.read_csv(events_csv, schema=_events_schema()).filter((pl.col("kind") == "outage") & (pl.col("t_end") >= window_s - 1e-6))
    return [f"path {p}: the window ({window_s:g} s) ends inside an outage ({kind}, from {a:g} s): after the window "
            f"this path stays {'at 1 bit/s' if kind == 'held' else 'dropping every packet'} for good; end flows "
            f"before {a:g} s or make the window longer"
            for a, p, kind in ev.select("t_start", "path", "outage_kind").sort("path", "t_start").rows()]
