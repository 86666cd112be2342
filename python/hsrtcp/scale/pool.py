"""Running the inputs of a corpus on this machine: :func:`run_local`.

Processes by default: one process per core keeps a crashing input from taking the others
with it, and no GIL is shared between workers. Threads are kept for small corpora, where
starting the pool (a fork server that imports the analysis, then the workers: 1-1.5 s on
the 2-core bench machine while it imported polars for the pair path, which now streams
without it) costs more than it saves: the rule is
``total bytes < THREAD_BYTES`` or a single worker. bench/corpus.py at 2 workers, wall time
of threads over processes: 0.53-0.68x on the 18 fixture captures (2.6 MB), 0.51-0.73x on 2
bench inputs (91 MB), 0.78-1.08x on the 32-input bench corpus (1.46 GB) over three runs:
the threads' advantage is the pool's start, which is above 10 % of a 2-worker run below
about 1 GB. Above it processes are kept for what threads cannot give: a crash in one
input does not end the run, and no GIL between the workers on many-core machines
(bench/README.md, "Corpus").

A pool of one worker per usable core pins each worker to its own core
(:mod:`.placement`); with ``-j`` below the core count nothing is pinned.

The workers end with the run, however it ends (docs/scale.md, "Stopping a run"). Their
parent is the pool's fork server, not the run, so the run's death is not their parent's:
each worker holds the read end of a pipe whose only write end is the run's, and a thread
of the worker ends the process when that pipe closes (the run stops them, or the kernel
closed it because the run died, even of SIGKILL). Once the workers are gone the fork
server and the resource tracker end by themselves (their pipes close). A worker ignores
Ctrl-C: the terminal sends it to the whole process group, and the run decides.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from hsrtcp.scale.placement import pins, pool_initializer, usable_cores

#: below this many bytes of input a corpus runs on threads (measured, docs/scale.md)
THREAD_BYTES = 1 << 30


def choose(total_bytes: int, workers: int) -> str:
    """``"threads"`` or ``"processes"`` (see the module docstring)."""
    return "threads" if workers <= 1 or total_bytes < THREAD_BYTES else "processes"


def default_workers() -> int:
    return len(usable_cores()) or os.cpu_count() or 1


#: forces the kind of local pool of a corpus run: ``threads`` or ``processes`` (docs/scale.md)
POOL_ENV = "HSRTCP_CORPUS_POOL"


def forced_mode() -> str | None:
    """The pool kind :data:`POOL_ENV` asks for, or None; ValueError for another value."""
    v = os.environ.get(POOL_ENV, "").strip()
    if v in ("", "threads", "processes"):
        return v or None
    raise ValueError(f"{POOL_ENV}={v!r}: use threads or processes")


def worker_init(life, free) -> None:
    """A process-pool worker's start: Ctrl-C left to the run, the end of the run watched
    (the module docstring), then its core (``free``: the queue of cores, or None)."""
    import signal
    import threading

    from hsrtcp.scale import tasks

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    tasks.LIFE = life  # the commit checks it too (tasks.run_holds)

    def watch() -> None:
        try:
            life.recv_bytes()  # the run never sends: this returns when its end closes
        except (EOFError, OSError):
            pass
        os._exit(1)

    threading.Thread(target=watch, name="hsrtcp-life", daemon=True).start()
    if free is not None:
        pool_initializer(free)


def _executor(mode: str, workers: int, life=None):
    from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

    if mode == "threads":
        return ThreadPoolExecutor(workers)
    import multiprocessing as mp

    from hsrtcp.scale.preload import MODULES

    ctx = mp.get_context("forkserver")
    # workers fork from a server that already imported the analysis (once, not per worker)
    ctx.set_forkserver_preload(list(MODULES))
    cores = usable_cores()
    free = None
    if pins(workers, cores):
        free = ctx.Queue()  # each worker takes a core of its own (hsrtcp.scale.placement)
        for core in cores:
            free.put(core)
    return ProcessPoolExecutor(workers, mp_context=ctx, initializer=worker_init, initargs=(life, free))


def prestart() -> None:
    """Start the fork server of the process pool (it imports the analysis, about 0.2 s) on a
    background thread, so that it loads while the caller keys the inputs instead of after.
    The pool's first worker then forks at once; ``ensure_running`` holds the server's lock,
    so a pool that starts before the server is up waits for it."""
    import multiprocessing as mp
    import threading
    from multiprocessing import forkserver

    from hsrtcp.scale.preload import MODULES

    mp.get_context("forkserver").set_forkserver_preload(list(MODULES))
    threading.Thread(target=forkserver.ensure_running, name="hsrtcp-forkserver", daemon=True).start()


def run_local(tasks: Iterable[tuple], on_done: Callable[[object, dict], None], *, workers: int,
              mode: str, fn: Callable[..., dict] | None = None, on_stop: Callable[[], None] | None = None) -> None:
    """``fn(*task)`` (default :func:`hsrtcp.scale.tasks.analyze_input`) for every task;
    ``on_done(input, result)`` as each ends.

    At most two tasks per worker are in flight: the one it runs and the next, queued, so a
    worker that finishes starts its next input at once instead of waiting for a round trip
    through this process (4-25 ms a hand-over on the bench host, with this process
    competing for a core with the workers). So when a worker process dies (a crash in the
    native code, the OOM killer) the suspects are known: the pool is restarted and they are
    run again one at a time; the one whose run breaks the pool again becomes an
    ``internal`` failure, the others go on. Each break costs a pool start, and every
    break in careful mode settles one input, so the run always ends.

    ``tasks`` may be a generator that does work for each task (the corpus run keys its
    inputs in it): it is drawn one task ahead, while the workers are busy, and not before
    the first tasks start.

    An exception from here or from ``on_done`` (Ctrl-C, SIGTERM, a full disk) stops the
    pool before it propagates: ``on_stop()`` first (the run's tasks commit nothing more),
    then the worker processes end and are waited for (threads: the running tasks are
    waited for), so nothing is renamed into the results after this returns.
    """
    if fn is None:
        from hsrtcp.scale.tasks import analyze_input as fn

    life = None
    if mode != "threads":
        import multiprocessing as mp

        life = mp.get_context("forkserver").Pipe(duplex=False)  # (reader, writer): the run's life
    try:
        _run_pools(tasks, on_done, workers, mode, fn, on_stop, life)
    finally:
        if life is not None:
            life[1].close()  # whatever is left of the workers ends now
            life[0].close()


def _run_pools(tasks, on_done, workers, mode, fn, on_stop, life) -> None:
    """:func:`run_local`'s loop: one pool, then a new one after each break."""
    from collections import deque
    from concurrent.futures import FIRST_COMPLETED, wait
    from concurrent.futures.process import BrokenProcessPool

    pending, careful = _Ahead(tasks), deque()
    while pending or careful:
        ex = _executor(mode, workers, life[0] if life else None)
        inflight: dict = {}
        broken = False
        try:
            while (pending or careful or inflight) and not broken:
                cap = 1 if careful else 2 * workers
                while len(inflight) < cap and (careful or pending):
                    t = (careful or pending).popleft()
                    inflight[ex.submit(fn, *t)] = t
                pending.draw()  # the next task made ready while these run
                done, _ = wait(inflight, return_when=FIRST_COMPLETED)
                for fut in done:
                    t = inflight[fut]
                    try:
                        res = fut.result()
                    except BrokenProcessPool:
                        broken = True
                        continue
                    except Exception as exc:  # noqa: BLE001 - pickling or a worker's own error
                        res = dict(t[3], status="failed", kind="internal", reason=f"internal error: {exc!r}")
                    del inflight[fut]
                    on_done(t[0], res)
        except BaseException:
            _stop(ex, mode, on_stop, life)
            raise
        ex.shutdown(wait=not broken, cancel_futures=True)
        if broken:
            suspects = list(inflight.values())
            if cap == 1:  # alone in the pool when it broke: this input kills its worker
                t = suspects[0]
                on_done(t[0], dict(t[3], status="failed", kind="internal",
                                   reason=f"{t[0].source}: the worker process died (crashed or killed) while "
                                          f"analyzing this input"))
            else:
                careful.extend(suspects)


def _stop(ex, mode: str, on_stop, life) -> None:
    """End the pool ``ex`` now and wait until none of its tasks can still commit."""
    if on_stop is not None:
        on_stop()
    if mode == "threads":
        ex.shutdown(wait=True, cancel_futures=True)  # each running task commits nothing (on_stop)
        return
    import time

    procs = list((getattr(ex, "_processes", None) or {}).values())
    life[1].close()  # every worker's watcher ends its process
    deadline = time.monotonic() + 30
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
        if p.exitcode is None:  # (stuck in the kernel: never seen)
            p.kill()
            p.join(5)
    ex.shutdown(wait=False, cancel_futures=True)


class _Ahead:
    """A task source drawn at most one task ahead: ``popleft`` and truth like a deque, and
    :meth:`draw` to make the next task ready (the work of making it overlaps the running
    ones)."""

    def __init__(self, tasks: Iterable[tuple]) -> None:
        from collections import deque

        self._it = iter(tasks)
        self._ready = deque()
        self._ended = False

    def draw(self) -> None:
        if not self._ready and not self._ended:
            nxt = next(self._it, None)
            if nxt is None:
                self._ended = True
            else:
                self._ready.append(nxt)

    def __bool__(self) -> bool:
        self.draw()
        return bool(self._ready)

    def popleft(self) -> tuple:
        self.draw()
        return self._ready.popleft()
