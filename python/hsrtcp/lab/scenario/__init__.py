"""HSR scenario generator: a seeded model of a high-speed-rail trip compiled for Rattan.

A scenario (TOML, see ``scenarios/`` and ``docs/formats/scenario.md``) describes a trip — speed
profile, cell layout by area type, per-handoff outages / loss bursts / RTT spikes, background
loss per direction, signal-driven bandwidth, coverage holes with 2G fallback, one emulated path
per carrier — and a seed. Compiling it writes everything ``rattan run`` needs plus ground truth.

Contract with the lab runtime (``hsrtcp emulate/measure/campaign``)::

    from hsrtcp.lab import scenario
    sc = scenario.load("scenarios/bt-300kmh.toml")        # or a dict, or a compiled dir
    cs = sc.compile(outdir, duration=None)                 # -> CompiledScenario
    cs.rattan_config   # Path of rattan.toml: Isolated mode, left_veth_count = cs.paths,
                       # NO [commands] section -> pass --left/--right to `rattan run`
    cs.paths           # number of emulated paths (= carriers); phone side 10.1.<p>.1 on
                       # veth vL<p>-L-$RATTAN_ID, server side 10.2.1.1 (one right veth)
    cs.duration_s      # length of every trace (s); rattan keeps the last value afterwards
    cs.radio_csv       # radio log (docs/formats/radio.md), ts = seconds since window start
    cs.events_csv      # ground truth: handoff, outage, loss_burst, rtt_spike, coverage_hole
    cs.timeline()      # polars DataFrame, expected per-second bw/delay/loss per path+direction
    cs.segments()      # the exact piecewise-constant segments behind timeline()

All times in the outputs are seconds since the start of the emulated window, which is trace time
0 in rattan, i.e. the first unicast packet entering the emulator (start the flow promptly and
take that packet's capture time as t0). ``CompiledScenario.open(dir)`` reopens a compiled
directory. Same parameters + same seed -> byte-identical files.
"""

from __future__ import annotations

from .compile import CompiledScenario
from .config import FORMAT_VERSION, ScenarioError, from_options, resolve
from .model import Realization, Scenario, load

__all__ = ["load", "Scenario", "CompiledScenario", "Realization", "ScenarioError", "resolve",
           "from_options", "FORMAT_VERSION"]
