"""Running the inputs of a corpus on this machine: :func:`run_local`.

Processes by default: a pair or bundle analysis holds the GIL for part of its time (polars
joins release it, the Python around them does not), and one process per core also keeps a
crashing input from taking the others with it. Threads are kept for small corpora, where
starting worker processes (a fork server that imports hsrtcp and polars, then the workers:
about 1 s on the loaded 2-core bench machine) costs more than it saves: the rule is
``total bytes < THREAD_BYTES`` or a single worker. bench/corpus.py at 2 workers: threads
took 0.63x the processes' time on the 18 fixture captures (2.6 MB), 0.73x on 2 bench
inputs (91 MB), 1.08x on the 32-input bench corpus (1.46 GB): the crossover is a few
hundred MB (bench/README.md, "Corpus").
"""

from __future__ import annotations

import os
from collections.abc import Callable

#: below this many bytes of input a corpus runs on threads (measured, docs/scale.md)
THREAD_BYTES = 256 << 20
#: how often a pool whose worker died is restarted for the inputs still to do
RESTARTS = 3


def choose(total_bytes: int, workers: int) -> str:
    """``"threads"`` or ``"processes"`` (see the module docstring)."""
    return "threads" if workers <= 1 or total_bytes < THREAD_BYTES else "processes"


def default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def run_local(tasks: list[tuple], on_done: Callable[[object, dict], None], *, workers: int,
              mode: str) -> None:
    """``analyze_input(*task)`` for every task; ``on_done(input, result)`` as each ends."""
    from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    from hsrtcp.scale.tasks import analyze_input

    todo = list(tasks)
    restarts = 0
    while todo:
        if mode == "threads":
            ex = ThreadPoolExecutor(workers)
        else:
            import multiprocessing as mp

            ctx = mp.get_context("forkserver")
            # workers fork from a server that already imported the analysis (once, not per worker)
            ctx.set_forkserver_preload(["hsrtcp.scale.tasks", "hsrtcp.streaming", "hsrtcp.api", "hsrtcp.pair"])
            ex = ProcessPoolExecutor(workers, mp_context=ctx)
        broken = False
        try:
            futs = {ex.submit(analyze_input, *t): t for t in todo}
            left = dict(futs)
            for fut in as_completed(futs):
                t = futs[fut]
                try:
                    res = fut.result()
                except BrokenProcessPool:
                    broken = True
                    break
                except Exception as exc:  # noqa: BLE001 - pickling or a worker's own error
                    res = dict(t[3], status="failed", kind="internal", reason=f"internal error: {exc!r}")
                del left[fut]
                on_done(t[0], res)
        except BaseException:
            ex.shutdown(wait=False, cancel_futures=True)
            raise
        ex.shutdown(wait=not broken, cancel_futures=True)
        todo = list(left.values()) if broken else []
        if broken:
            restarts += 1
            if restarts > RESTARTS:
                for t in todo:
                    on_done(t[0], dict(t[3], status="failed", kind="internal",
                                       reason="a worker process died (killed or crashed) while analyzing or "
                                              "waiting for this input, and the pool broke too often"))
                return
