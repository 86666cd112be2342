"""Where the workers of a corpus run execute: one worker per core, each on its own core.

An input's analysis is several threads (the capture readers, the flow engines, the
matcher, the Parquet writer) handing batches to each other. When a machine runs one
worker per core, letting each worker's threads wander over every core costs CPU: batches
cross between cores' caches, and two inputs' threads interleave on both cores. Pinning
each worker to a core of its own took the pool's CPU for the bench corpus from 7.95 to
7.37 s (medians of 8 alternating rounds; docs/scale.md, "One worker per core"). With fewer workers than
cores nothing is pinned: one worker's threads then use more than one core.

The local pool pins each worker as it starts (:func:`pool_initializer`); on Dask the run's
client places every worker once, from the scheduler's list of workers per host
(:func:`plan`, :func:`place_worker`).
"""

from __future__ import annotations

import os

_ORIGINAL: list[int] | None = None  # this process's cores before any placement


def usable_cores() -> list[int]:
    """The cores this process may run on (as it started, before any placement)."""
    if _ORIGINAL is not None:
        return list(_ORIGINAL)
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return []


def _set_process_cores(cores: list[int]) -> None:
    """Every thread of this process on ``cores`` (threads made later inherit their maker's)."""
    global _ORIGINAL
    if _ORIGINAL is None:
        _ORIGINAL = usable_cores()
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        tids = [0]
    for tid in tids:
        try:
            os.sched_setaffinity(tid, cores)
        except OSError:  # a thread that ended meanwhile
            pass


def pins(workers: int, cores: list[int]) -> bool:
    """The rule: pin when there is one worker per core (and more than one core)."""
    return len(cores) > 1 and workers == len(cores)


def pool_initializer(free) -> None:
    """Local pool: this worker takes the next core of the queue ``free``."""
    try:
        _set_process_cores([free.get(timeout=5)])
    except Exception:  # noqa: BLE001 - no core to take: the worker runs unpinned
        pass


def plan(workers: dict) -> dict[str, tuple[int, int]]:
    """Dask: for each worker address, (its index among the single-threaded workers of its
    host, how many there are), from ``client.scheduler_info()["workers"]``."""
    by_host: dict[str, list[str]] = {}
    for addr, info in workers.items():
        if info.get("nthreads") == 1:
            by_host.setdefault(info.get("host", addr), []).append(addr)
    return {addr: (i, len(addrs)) for addrs in by_host.values() for i, addr in enumerate(sorted(addrs))}


def place_worker(where: dict[str, tuple[int, int]], dask_worker=None) -> list[int]:
    """Dask (``client.run``): pin this worker to its core when its host has one
    single-threaded worker per core, else give it back every core; its cores."""
    cores = usable_cores()
    index, count = where.get(getattr(dask_worker, "address", None), (0, 0))
    chosen = [cores[index]] if pins(count, cores) else cores
    if chosen:
        _set_process_cores(chosen)
    return chosen
