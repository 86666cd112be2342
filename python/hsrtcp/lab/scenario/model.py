"""The Scenario object: resolved parameters -> a realized trip (motion, cells, handoffs,
impairments) -> compiled files."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import cells as _cells
from . import channel as _channel
from . import impair as _impair
from .config import ScenarioError, read_toml, resolve
from .speed import Trip, build_trip, nominal_duration


@dataclass
class Realization:
    """Everything random about a scenario, drawn once from its seed (trip-time based)."""

    params: dict
    window_start_s: float
    duration_s: float
    trip: Trip
    layouts: list[_cells.CarrierLayout]
    impairments: list[list[_impair.Impairment]]
    # [speed_channel] spikes and fades per carrier (empty lists without the table)
    speed_events: list[list[_channel.SpeedEvent]] | None = None

    @property
    def horizon_s(self) -> float:
        return self.window_start_s + self.duration_s

    def handoff_times(self, carrier: int = 0, *, window_only: bool = True) -> np.ndarray:
        """Trip times of the carrier's handoffs (inside the window by default)."""
        t = np.array([h.t for h in self.layouts[carrier].handoffs])
        if window_only:
            t = t[(t >= self.window_start_s) & (t < self.horizon_s)]
        return t


class Scenario:
    """A validated HSR scenario. Build it with :func:`load`."""

    def __init__(self, params: dict, source: str = "<dict>"):
        self.params = params
        self.source = source

    # -- basic facts -----------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.params["scenario"]["name"]

    @property
    def seed(self) -> int:
        return self.params["scenario"]["seed"]

    @property
    def paths(self) -> int:
        return len(self.params["carriers"])

    def with_overrides(self, *, seed: int | None = None, duration_s: float | None = None,
                       start_s: float | None = None) -> "Scenario":
        p = copy.deepcopy(self.params)
        if seed is not None:
            p["scenario"]["seed"] = int(seed)
        if duration_s is not None:
            if duration_s <= 0:
                raise ScenarioError(f"{self.source}: duration must be > 0 s, got {duration_s}")
            p["scenario"]["duration_s"] = float(duration_s)
        if start_s is not None:
            p["scenario"]["start_s"] = float(start_s)
        return Scenario(p, self.source)

    def window(self) -> tuple[float, float]:
        """(start, duration) of the emulated window in trip seconds."""
        s = self.params["scenario"]
        start = s["start_s"]
        dur = s["duration_s"]
        if dur is None:
            total = nominal_duration(self.params["trip"], self.params["area_types"])
            if total is None:
                raise ScenarioError(
                    f"{self.source}: [scenario] key 'duration_s' is required for a constant-speed trip "
                    "(no [trip] stations_km)")
            dur = total - start
            if dur <= 0:
                raise ScenarioError(f"{self.source}: [scenario] key 'start_s' ({start}) is after the trip's end ({total:.1f} s)")
        return start, float(dur)

    def realize(self) -> Realization:
        start, dur = self.window()
        horizon = start + dur
        trip = build_trip(self.params["trip"], self.params["area_types"], horizon + 1.0)
        layouts = [_cells.layout_carrier(self.params, ci, trip, horizon) for ci in range(self.paths)]
        imps = [_impair.draw(self.params, lay) for lay in layouts]
        sev = [(_channel.draw(self.params, trip, ci, horizon) if self.params.get("speed_channel") else [])
               for ci in range(self.paths)]
        return Realization(self.params, start, dur, trip, layouts, imps, sev)

    def compile(self, outdir: str | Path, duration: float | None = None):
        """Write rattan.toml, traces, radio.csv, events.csv and scenario.json into ``outdir``.

        ``duration`` (s) overrides ``[scenario] duration_s``. Returns a CompiledScenario.
        """
        from .compile import compile_scenario

        sc = self.with_overrides(duration_s=duration) if duration is not None else self
        return compile_scenario(sc, Path(outdir))

    def __repr__(self) -> str:
        return f"Scenario(name={self.name!r}, seed={self.seed}, paths={self.paths}, source={self.source!r})"


def load(source: str | Path | dict[str, Any]) -> Scenario:
    """Load a scenario from a TOML file path, a ``scenario.json`` of a compiled directory, or a dict."""
    if isinstance(source, dict):
        return Scenario(resolve(source, "<dict>"), "<dict>")
    path = Path(source)
    if path.is_dir():
        path = path / "scenario.json"
    if path.suffix == ".json":
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ScenarioError(f"{path}: cannot read compiled scenario: {exc}") from exc
        return Scenario(resolve(doc["params"], str(path)), str(path))
    return Scenario(resolve(read_toml(path), str(path)), str(path))
