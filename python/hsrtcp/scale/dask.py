"""Running the inputs of a corpus on a Dask distributed cluster: :func:`run_dask`.

The same task as the local pool (:func:`hsrtcp.scale.tasks.analyze_input`), submitted
one per input; each worker writes its partition itself, so the results directory must be
the same path on every worker (a shared mount) and hsrtcp must be importable there
(docs/scale.md, "On a cluster"). Only the small records travel back to this process.
``scheduler`` None starts a local cluster (``--dask``): one single-threaded worker
process per core, like the local pool.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from hsrtcp.errors import HsrtcpError


class SchedulerError(HsrtcpError, OSError):
    """The Dask scheduler cannot be reached (exit 3, with its address)."""


def run_dask(tasks: list[tuple], on_done: Callable[[object, dict], None], *, scheduler: str | None,
             workers: int, timeout_s: float = 30.0) -> None:
    import logging

    from distributed import Client, LocalCluster, as_completed

    from hsrtcp.scale.tasks import analyze_input

    cluster = None
    if scheduler is None:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=logging.ERROR)
    try:
        try:
            client = Client(cluster if cluster is not None else scheduler, timeout=f"{timeout_s}s")
        except OSError as exc:
            raise SchedulerError(f"cannot reach the Dask scheduler {scheduler}: {exc} (is it running, and is "
                                 f"the address the one it printed?)") from None
        try:
            run_id = uuid.uuid4().hex[:8]
            futs = {}
            for t in tasks:
                f = client.submit(analyze_input, *t, key=f"hsrtcp-{t[0].id}-{run_id}", pure=False, retries=0)
                futs[f.key] = (f, t)
            for fut in as_completed([f for f, _ in futs.values()]):
                t = futs[fut.key][1]
                try:
                    res = fut.result()
                except Exception as exc:  # noqa: BLE001 - KilledWorker, a worker without hsrtcp ...
                    res = dict(t[3], status="failed", kind="internal", reason=f"dask: {exc!r}")
                fut.release()
                on_done(t[0], res)
        finally:
            client.close()
    finally:
        if cluster is not None:
            cluster.close()
