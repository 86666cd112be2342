"""Running the inputs of a corpus on a Dask distributed cluster: :class:`DaskCluster`.

The same task as the local pool (:func:`hsrtcp.scale.tasks.analyze_input`), submitted
one per input; each worker writes its partition itself, so the results directory must be
the same path on every worker (a shared mount) and hsrtcp must be importable there
(docs/scale.md, "On a cluster"). Only the small records travel back to this process.
``scheduler`` None starts a local cluster (``--dask``): one single-threaded worker
process per core, like the local pool, each importing the analysis at start
(:mod:`.preload`). On connecting, the client pins each single-threaded worker to a core
of its own where a host has one per core (:mod:`.placement`).

The connection is made on a background thread from the start of the run: importing
``distributed`` takes about 0.4 s and a local cluster's start 1-2 s on the 2-core bench
host, and both then overlap the discovery and content keying of the inputs instead of
adding to them (bench/corpus.py, ``dask_*`` rows).
"""

from __future__ import annotations

import itertools
import threading
import uuid
from collections.abc import Callable, Iterable

from hsrtcp.errors import HsrtcpError


class SchedulerError(HsrtcpError, OSError):
    """The Dask scheduler cannot be reached (exit 3, with its address)."""


def _place(client) -> None:
    """One worker per core on a host: each on its own core, as in the local pool
    (:mod:`.placement`); the workers of other hosts and other counts keep every core."""
    from hsrtcp.scale.placement import place_worker, plan

    try:
        client.run(place_worker, plan(client.scheduler_info()["workers"]))
    except Exception:  # noqa: BLE001 - placement is a speed-up; a worker without it still runs the tasks
        pass


class DaskCluster:
    """A client of ``scheduler`` (or of a local cluster of ``workers`` processes when it is
    None), connected on a background thread as soon as this is made. :meth:`run` waits for
    it; :meth:`close` (or leaving the ``with`` block) stops what was started, also when it
    was never used (nothing left to analyze)."""

    def __init__(self, scheduler: str | None, workers: int, timeout_s: float = 30.0) -> None:
        self.scheduler, self.workers, self.timeout_s = scheduler, workers, timeout_s
        self._client = self._cluster = self._error = None
        self._closed = self._connected = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._connect, name="hsrtcp-dask-connect", daemon=True)
        self._thread.start()

    def _connect(self) -> None:
        try:
            import logging

            from distributed import Client, LocalCluster

            cluster = None
            if self.scheduler is None:
                import dask

                from hsrtcp.scale.preload import QUIET_CONFIG

                # the scheduler (in this process) and the workers probe less often
                with dask.config.set(QUIET_CONFIG):
                    cluster = LocalCluster(n_workers=self.workers, threads_per_worker=1, processes=True,
                                           dashboard_address=None, silence_logs=logging.ERROR,
                                           preload=["hsrtcp.scale.preload"])
            with self._lock:
                self._cluster = cluster
            try:
                client = Client(cluster if cluster is not None else self.scheduler, timeout=f"{self.timeout_s}s")
            except OSError as exc:
                raise SchedulerError(f"cannot reach the Dask scheduler {self.scheduler}: {exc} (is it running, and "
                                     f"is the address the one it printed?)") from None
            _place(client)
            with self._lock:
                self._client = client
        except BaseException as exc:  # noqa: BLE001 - handed to the caller of run()
            self._error = exc
        finally:
            with self._lock:
                self._connected = True
                if self._closed:  # closed while connecting: nobody else will shut it down
                    self._shutdown()

    def run(self, tasks: Iterable[tuple], on_done: Callable[[object, dict], None]) -> None:
        """``analyze_input(*task)`` on the cluster for every task, in the given order of
        priority (the first task first); ``on_done(input, result)`` as each ends. ``tasks``
        may be a generator that works for each task (the corpus run keys its inputs in it):
        it is drawn while the connection is still being made, then as tasks are submitted."""
        from distributed import as_completed

        from hsrtcp.scale.tasks import analyze_input

        tasks = iter(tasks)
        ready = []
        while self._thread.is_alive():  # connecting: make tasks ready meanwhile
            t = next(tasks, None)
            if t is None:
                break
            ready.append(t)
        self._thread.join()
        if self._error is not None:
            raise self._error
        client = self._client
        run_id = uuid.uuid4().hex[:8]
        futs = {}
        done = as_completed()
        for i, t in enumerate(itertools.chain(ready, tasks)):
            # the caller's order (largest first) as the scheduler's priority: higher runs sooner
            f = client.submit(analyze_input, *t, key=f"hsrtcp-{t[0].id}-{run_id}", pure=False, retries=0,
                              priority=-i)
            futs[f.key] = (f, t)
            done.add(f)
        for fut in done:
            t = futs[fut.key][1]
            try:
                res = fut.result()
            except Exception as exc:  # noqa: BLE001 - KilledWorker, a worker without hsrtcp ...
                res = dict(t[3], status="failed", kind="internal", reason=f"dask: {exc!r}")
            fut.release()
            on_done(t[0], res)

    def close(self) -> None:
        if self.scheduler is None:
            # a local cluster is being started: wait for it (bounded) so that no worker
            # process outlives the run
            self._thread.join()
        with self._lock:
            self._closed = True
            if self._connected:
                self._shutdown()
            # else: still connecting to a remote scheduler; _connect closes the client when done

    def _shutdown(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    def __enter__(self) -> DaskCluster:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
