"""The corpus on a real Dask distributed cluster: a scheduler and two workers started with
the `dask` CLI on localhost (bounded in time, stopped at the end); the results equal the
local pool's, row for row, and were written by the workers. Also `--dask` (a local cluster
started by hsrtcp)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hsrtcp.scale.run import run_corpus

from .conftest import env, hsrtcp_cli
from .tables import assert_same_results, partitions

DASK = Path(sys.executable).with_name("dask")
pytestmark = pytest.mark.skipif(not DASK.exists(), reason="the dask CLI is not installed next to this python")


def _start(args: list[str], log: Path) -> subprocess.Popen:
    with open(log, "w") as f:
        return subprocess.Popen([str(DASK), *args], stdout=f, stderr=subprocess.STDOUT, env=env(),
                                start_new_session=True)


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    for p in procs:
        try:
            p.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(5)


def test_dask_cluster_equals_local_pool(corpus, tmp_path):
    from distributed import Client

    sched_file = tmp_path / "scheduler.json"
    procs = [_start(["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                     "--scheduler-file", str(sched_file)], tmp_path / "scheduler.log")]
    try:
        deadline = time.monotonic() + 60
        while not sched_file.exists():
            assert time.monotonic() < deadline and procs[0].poll() is None, (tmp_path / "scheduler.log").read_text()
            time.sleep(0.2)
        time.sleep(0.2)  # the file is written whole before the scheduler listens; be gentle anyway
        address = json.loads(sched_file.read_text())["address"]
        for i in (1, 2):
            # w2 as docs/scale.md deploys it (the preload); w1 plain: both must work
            preload = ["--preload", "hsrtcp.scale.preload"] if i == 2 else []
            procs.append(_start(["worker", "--scheduler-file", str(sched_file), "--nthreads", "1", "--no-nanny",
                                 "--no-dashboard", "--host", "127.0.0.1", "--name", f"w{i}", *preload],
                                tmp_path / f"worker{i}.log"))
        with Client(address, timeout="60s") as c:
            c.wait_for_workers(2, timeout=90)
            # the preload turned the worker's statistical profiler off (samples of a frame
            # waiting on native code, at a CPU cost); the plain worker still has it
            profiling = c.run(lambda dask_worker: (dask_worker.name, "profile" in dask_worker.periodic_callbacks))
            assert sorted(profiling.values()) == [("w1", True), ("w2", False)], profiling
            # and slowed its health probes (tick 20 ms -> 1 s, system monitor 0.5 -> 5 s)
            probes = c.run(lambda dask_worker: (dask_worker.name, dask_worker.periodic_callbacks["tick"].callback_time,
                                                dask_worker.periodic_callbacks["monitor"].callback_time))
            assert sorted(probes.values()) == [("w1", 20, 500), ("w2", 1000, 5000)], probes
        dres = tmp_path / "dask_res"
        p = hsrtcp_cli("analyze", corpus, "-o", dres, "-q", "--scheduler", address, timeout=300, check=0)
        lres = tmp_path / "local_res"
        assert run_corpus(str(corpus), str(lres), quiet=True, workers=2, mode="processes") == 0
        dparts, lparts = partitions(dres), partitions(lres)
        assert set(dparts) == set(lparts) and len(dparts) == 6, p.stderr
        rows = sum(assert_same_results(dparts[i], lparts[i]) for i in dparts)
        assert rows > 100
        worker_pids = {w.pid for w in procs[1:]}
        pids = {json.loads((d / "_input.json").read_text())["pid"] for d in dparts.values()}
        assert pids <= worker_pids, (pids, worker_pids)
        # hsrtcp's client placed the two single-threaded workers of this host: one core each
        # when the host has two (hsrtcp.scale.placement), every thread of the worker on it
        cores = sorted(os.sched_getaffinity(0))
        placed = sorted(sorted({tuple(sorted(os.sched_getaffinity(int(t)))) for t in os.listdir(f"/proc/{w.pid}/task")})
                        for w in procs[1:])
        want = [[(c,)] for c in cores] if len(cores) == 2 else [[tuple(cores)]] * 2
        assert placed == want, placed
    finally:
        _stop(procs)


def test_dask_local_cluster(corpus, tmp_path):
    res = tmp_path / "res"
    lres = tmp_path / "local"
    assert run_corpus(str(corpus), str(res), quiet=True, workers=2, dask_local=True) == 0
    assert run_corpus(str(corpus), str(lres), quiet=True, workers=1) == 0
    parts, lparts = partitions(res), partitions(lres)
    assert set(parts) == set(lparts)
    for i in parts:
        assert_same_results(parts[i], lparts[i])
    pids = {json.loads((d / "_input.json").read_text())["pid"] for d in parts.values()}
    assert os.getpid() not in pids
    # the workers imported the analysis at start (hsrtcp.scale.preload), not in the first input
    # a re-run has nothing left to do: the cluster it started while keying is stopped all the same
    assert run_corpus(str(corpus), str(res), quiet=True, workers=2, dask_local=True) == 0
    assert not _children(), _children()


def _children() -> list[str]:
    """Processes whose parent is this one (the local cluster's nannies while it runs),
    except multiprocessing's resource tracker and fork server, which live as long as we do."""
    me, found = str(os.getpid()), []
    for d in Path("/proc").iterdir():
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        cmd = (d / "cmdline").read_bytes()
        if fields[1] == me and b"resource_tracker" not in cmd and b"forkserver" not in cmd:
            found.append(f"{d.name}: {(d / 'cmdline').read_bytes()[:80]!r}")
    return found


def test_unreachable_scheduler_is_an_error_not_a_traceback(corpus, tmp_path):
    p = hsrtcp_cli("analyze", corpus, "-o", tmp_path / "r", "-q", "--scheduler", "tcp://127.0.0.1:9",
                   timeout=120)
    assert p.returncode == 3 and "Traceback" not in p.stderr and "127.0.0.1:9" in p.stderr, p.stderr
