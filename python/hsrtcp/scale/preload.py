"""What a worker imports before its first input, so that no input pays for it.

:data:`MODULES` is the analysis one input needs (no polars: single captures, pairs and
bundles all stream to Parquet without it; the context layer imports it in the worker when
an input has a radio log or labels). The local pool's fork server imports them once
(:mod:`.pool`); a Dask worker imports them at start when given this module as a preload:
``dask worker ... --preload hsrtcp.scale.preload`` (docs/scale.md), and the local cluster
of ``--dask`` does so itself (:mod:`.dask`).
"""

from __future__ import annotations

import importlib

MODULES = ("hsrtcp.scale.tasks", "hsrtcp.streaming", "hsrtcp.pair", "hsrtcp.output")


#: Dask's own periodic work in a worker, slowed down (milliseconds): the event loop's
#: responsiveness probe (every 20 ms by default) and the system monitor (psutil, every
#: 0.5 s) feed the dashboard's health charts only. An idle worker spent 3 % of a core on
#: them on the bench host, taken from the analysis beside it. Dask's own settings
#: ``distributed.admin.tick.interval`` and ``distributed.admin.system-monitor.interval``.
SLOWED = {"tick": 1000, "monitor": 5000}
#: The same as Dask settings, for clusters hsrtcp starts itself (``--dask``).
QUIET_CONFIG = {"distributed.admin.tick.interval": f"{SLOWED['tick']}ms",
                "distributed.admin.system-monitor.interval": f"{SLOWED['monitor']}ms"}


def dask_setup(worker=None) -> None:
    """Dask calls this once when the worker starts: the imports, the worker's statistical
    profiler off, and its health probes slowed (:data:`SLOWED`). The profiler samples every
    thread's Python stack every 10 ms for the dashboard; an hsrtcp task is one Python frame
    waiting on native code, so the samples show nothing and cost CPU beside every input
    (docs/scale.md, "On Dask")."""
    for name in MODULES:
        importlib.import_module(name)
    callbacks = getattr(worker, "periodic_callbacks", None)
    if callbacks is not None:
        for name in ("profile", "profile-cycle"):
            pc = callbacks.pop(name, None)
            if pc is not None:
                pc.stop()
        for name, ms in SLOWED.items():
            pc = callbacks.get(name)
            if pc is not None:
                pc.callback_time = max(pc.callback_time, ms)
