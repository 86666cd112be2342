"""The local pool's placement: one worker per core, each on its own core, when the pool
has as many workers as the run may use cores (the default); with fewer workers (``-j``
below the core count) the kernel places them. Witness: each worker's own affinity mask,
read by the worker with ``os.sched_getaffinity``."""

from __future__ import annotations

import os

import pytest

from hsrtcp.scale.placement import plan
from hsrtcp.scale.pool import default_workers, run_local

PROBE = '''
import os, time

def where(i):
    time.sleep(0.3)  # long enough that every worker of the pool takes a task
    return {"pid": os.getpid(), "cores": sorted(os.sched_getaffinity(0))}
'''


@pytest.fixture
def probe(tmp_path, monkeypatch):
    (tmp_path / "pool_probe.py").write_text(PROBE)
    monkeypatch.syspath_prepend(str(tmp_path))  # forkserver children get this sys.path
    import pool_probe

    return pool_probe.where


def placements(probe, workers: int, n: int = 6) -> dict[int, list[int]]:
    got: list[dict] = []
    run_local([(i,) for i in range(n)], lambda _t, res: got.append(res), workers=workers, mode="processes", fn=probe)
    assert len(got) == n
    return {r["pid"]: r["cores"] for r in got}


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_one_worker_per_core_each_on_its_own(probe):
    cores = sorted(os.sched_getaffinity(0))
    by_pid = placements(probe, default_workers())
    assert len(by_pid) == len(cores)
    assert all(len(c) == 1 for c in by_pid.values()), by_pid
    assert sorted(c[0] for c in by_pid.values()) == cores


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_fewer_workers_than_cores_are_not_pinned(probe):
    cores = sorted(os.sched_getaffinity(0))
    by_pid = placements(probe, len(cores) - 1, n=3)
    assert all(c == cores for c in by_pid.values()), by_pid


def test_dask_plan_numbers_the_single_threaded_workers_of_each_host():
    workers = {"tcp://a:2": {"host": "a", "nthreads": 1}, "tcp://a:1": {"host": "a", "nthreads": 1},
               "tcp://b:1": {"host": "b", "nthreads": 1}, "tcp://b:2": {"host": "b", "nthreads": 4}}
    assert plan(workers) == {"tcp://a:1": (0, 2), "tcp://a:2": (1, 2), "tcp://b:1": (0, 1)}
