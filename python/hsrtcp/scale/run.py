"""A whole corpus run: :func:`run_corpus` (what ``hsrtcp analyze CORPUS -o RESULTS`` does).

1. discover the inputs (:mod:`.discover`, :mod:`.manifest`);
2. lock RESULTS (:mod:`.lock`) and clear the staging leftovers of dead runs;
3. key every input (:mod:`.hashing`): an unreadable one, or one with the content of an
   earlier input (a duplicate), becomes a failure row; one whose partition records the
   same state key is skipped (unless ``force``);
4. analyze the rest on a local pool (:mod:`.pool`) or Dask (:mod:`.dask`);
5. write ``failures.parquet`` and ``inputs.parquet`` (one row per input of this corpus:
   id, kind, source, status of this run, bytes, seconds); exit 3 if any failure row.
"""

from __future__ import annotations

import os
import shutil
import sys
import time

from hsrtcp.scale.discover import Input, discover
from hsrtcp.scale.failures import row, write_failures
from hsrtcp.scale.hashing import content_hash, file_digest, state_key
from hsrtcp.scale.lock import ResultsLock
from hsrtcp.scale.tasks import STAGING, partition_dir, read_record


def _settings(inp: Input, window_s: float) -> dict:
    """Everything besides the capture bytes that decides an input's results."""
    radio = None
    if inp.radio:
        try:
            radio = file_digest(inp.radio)
        except OSError:
            radio = "unreadable"  # the analysis reports it; a readable log later changes the key
    return {"kind": inp.kind, "files": [os.path.abspath(f) for f in inp.files], "vantage": inp.vantage,
            "radio": inp.radio, "radio_digest": radio, "radio_format": inp.radio_format,
            "radio_offset": inp.radio_offset, "radio_map": inp.radio_map, "carrier": inp.carrier, "labels": inp.labels,
            "window_s": window_s}


#: relative cost per byte of an input kind (bench/corpus.py: a pair's matcher and its two
#: single-capture passes cost about twice a single capture's pass per byte)
COST_PER_BYTE = {"capture": 1.0, "pair": 2.0, "bundle": 2.0}


def _preload_pyarrow() -> None:
    """Import pyarrow (for the failures and inputs tables written at the end) on a
    background thread while the inputs are keyed and analyzed: on the 2-core bench host
    the import took 0.3-4 s (load-dependent), all of it in the run's serial tail before."""
    import threading

    def load() -> None:
        try:
            import pyarrow.parquet  # noqa: F401
        except ImportError:  # reported where it is used
            pass

    threading.Thread(target=load, name="hsrtcp-preload", daemon=True).start()


def run_corpus(spec: str, results: str, *, force: bool = False, workers: int | None = None,
               scheduler: str | None = None, dask_local: bool = False, quiet: bool = False,
               window_s: float = 30.0, labels: dict | None = None, mode: str | None = None,
               phases: dict | None = None) -> int:
    """Analyze every input of corpus ``spec`` into ``results``; the exit code (0, or 3 when
    the failures table has rows). ValueError for a usage problem (a corpus naming nothing).

    ``phases``: a dict to fill with where the run's wall time went (seconds: ``discover``,
    ``key`` (content hashing, skip decisions), ``analyze`` (pool or cluster start included),
    ``first_result`` (from the start of ``analyze`` to the first input done: mostly the
    pool's start), ``write`` (failures and inputs tables), ``total``; ``mode``, ``workers``,
    and ``tasks``: per analyzed input its start and end on the wall clock relative to
    ``analyze``'s start, CPU seconds and pid). bench/corpus.py reports them."""
    from hsrtcp.scale.dask import DaskCluster
    from hsrtcp.scale.pool import default_workers

    t_start = time.perf_counter()
    clock = {"start": time.perf_counter()}

    def mark(name: str) -> None:
        now = time.perf_counter()
        if phases is not None:
            phases[name] = now - clock["start"]
        clock["start"] = now

    _preload_pyarrow()
    # a cluster connects (or starts) while the inputs are found and keyed
    cluster = DaskCluster(scheduler, max(1, workers or default_workers())) if scheduler or dask_local else None
    try:
        return _run(spec, results, cluster, force=force, workers=workers, quiet=quiet, window_s=window_s,
                    labels=labels, mode=mode, phases=phases, mark=mark, t_start=t_start)
    finally:
        if cluster is not None:
            cluster.close()


def _size_guess(inputs) -> int:
    """The inputs' bytes from the file sizes (no reading): the pool's mode before keying."""
    total = 0
    for inp in inputs:
        for f in getattr(inp, "files", None) or ():
            try:
                total += os.path.getsize(f)
            except (OSError, TypeError):
                pass
    return total


def _run(spec, results, cluster, *, force, workers, quiet, window_s, labels, mode, phases, mark, t_start) -> int:
    """run_corpus after the cluster (if any) began connecting."""
    import hsrtcp
    from hsrtcp.scale.manifest import ManifestProblem
    from hsrtcp.scale.pool import choose, default_workers, prestart, run_local
    from hsrtcp.scale.progress import CorpusProgress

    inputs = discover(spec)
    mark("discover")
    for inp in inputs:
        if labels:
            inp.labels = {**labels, **inp.labels}
    results = os.path.abspath(results)
    if os.path.lexists(results) and not os.path.isdir(results):
        raise ValueError(f"{results}: exists and is not a directory")
    os.makedirs(results, exist_ok=True)
    workers = max(1, workers or default_workers())
    if cluster is None and (mode or choose(_size_guess(inputs), workers)) == "processes":
        prestart()  # the pool's fork server loads while the inputs are keyed
    version = hsrtcp.__version__
    with ResultsLock(results):
        shutil.rmtree(os.path.join(results, STAGING), ignore_errors=True)  # leftovers of dead runs
        os.makedirs(os.path.join(results, STAGING), exist_ok=True)
        failures: list[dict] = []
        index: dict[str, dict] = {}
        seen_content: dict[str, Input] = {}
        todo: list[tuple] = []
        todo_bytes = 0
        for inp in inputs:
            entry = {"input": inp.id, "kind": inp.kind, "source": inp.source, "status": None,
                     "bytes": None, "seconds": None, "content_hash": None}  # + worker fields (_write_index)
            if inp.id in index:
                failures.append(row(inp.id, inp.source, "duplicate",
                                    f"input id {inp.id!r} given twice (also {index[inp.id]['source']}); "
                                    f"the first is analyzed"))
                continue
            index[inp.id] = entry
            if isinstance(inp, ManifestProblem):
                entry["status"] = "failed"
                failures.append(row(inp.id, inp.source, "unreadable", inp.reason))
                continue
            try:
                content, nbytes, mtimes = content_hash(inp.files)
            except OSError as exc:
                entry["status"] = "failed"
                where = exc.filename or inp.source
                failures.append(row(inp.id, inp.source, "unreadable", f"{where}: {exc.strerror or exc}"))
                _drop_partition(results, inp.id)
                continue
            entry.update(content_hash=content, bytes=nbytes)
            if content in seen_content:
                first = seen_content[content]
                entry["status"] = "duplicate"
                failures.append(row(inp.id, inp.source, "duplicate",
                                    f"same content as input {first.id} ({first.source}); only that one is analyzed"))
                continue
            seen_content[content] = inp
            settings = _settings(inp, window_s)
            state = state_key(content, mtimes, settings, version)
            rec = read_record(results, inp.id)
            if not force and rec is not None and rec.get("state") == state and rec.get("status") == "done":
                entry.update(status="skipped", seconds=0.0)
                failures += [row(inp.id, e["source"], e["kind"], e["reason"]) for e in rec.get("errors", [])]
                continue
            record = {"input": inp.id, "kind": inp.kind, "files": settings["files"], "content": content,
                      "state": state, "version": version, "bytes": nbytes, "settings": settings}
            todo.append((inp, results, window_s, record))
            todo_bytes += nbytes
        how = ("dask" if cluster is not None else (mode or choose(todo_bytes, workers))) if todo else "none"
        # Largest first (by estimated cost): the last inputs to start are the small ones, so
        # the workers run out of work at about the same time instead of one finishing a big
        # input alone at the end.
        todo.sort(key=lambda t: -t[3]["bytes"] * COST_PER_BYTE.get(t[0].kind, 1.0))
        progress = CorpusProgress(len(todo), todo_bytes, enabled=not quiet)
        mark("key")
        t_analyze = time.time()
        tasks_seen: list[dict] = []

        def on_done(inp: Input, res: dict) -> None:
            entry = index[inp.id]
            entry.update({k: res.get(k) for k in ("seconds", "host", "pid", "cpu_s", "rss_peak_bytes")})
            if res.get("status") == "done":
                entry["status"] = "analyzed"
                new = [row(inp.id, e["source"], e["kind"], e["reason"]) for e in res.get("errors", [])]
            else:
                entry["status"] = "failed"
                new = [row(inp.id, inp.source, res.get("kind", "internal"), res.get("reason", "unknown error"))]
                _drop_partition(results, inp.id)
            failures.extend(new)
            progress.advance(entry["bytes"] or 0, len(new))
            if phases is not None:
                if not tasks_seen:
                    phases["first_result"] = time.time() - t_analyze
                tasks_seen.append({"input": inp.id, "kind": inp.kind, "bytes": entry["bytes"], "pid": res.get("pid"),
                                   "start": (res.get("t_start") or t_analyze) - t_analyze,
                                   "end": (res.get("t_end") or time.time()) - t_analyze, "cpu_s": res.get("cpu_s")})

        try:
            if how == "dask":
                cluster.run(todo, on_done)
            elif todo:
                run_local(todo, on_done, workers=min(workers, len(todo)), mode=how)
        finally:
            progress.close()
            mark("analyze")
            write_failures(results, failures)
            _write_index(results, list(index.values()))
            shutil.rmtree(os.path.join(results, STAGING), ignore_errors=True)
            mark("write")
    if phases is not None:
        phases.update(total=time.perf_counter() - t_start, mode=how, workers=workers, tasks=tasks_seen)
    if not quiet:
        n = {s: sum(1 for e in index.values() if e["status"] == s) for s in ("analyzed", "skipped", "failed", "duplicate")}
        gb = todo_bytes / 1e9
        wall = time.perf_counter() - t_start
        print(f"hsrtcp: corpus {spec}: {len(index)} inputs: {n['analyzed']} analyzed, {n['skipped']} skipped "
              f"(unchanged), {n['failed']} failed, {n['duplicate']} duplicate; {gb:.3f} GB in {wall:.1f} s "
              f"({how}, {workers} workers); {len(failures)} failure rows -> {results}/failures.parquet",
              file=sys.stderr)
        for f in failures[:20]:
            print(f"hsrtcp: {f['input']}: {f['kind']}: {f['reason']}", file=sys.stderr)
        if len(failures) > 20:
            print(f"hsrtcp: ... and {len(failures) - 20} more in failures.parquet", file=sys.stderr)
    return 3 if failures else 0


def _drop_partition(results: str, input_id: str) -> None:
    """An input that now fails keeps no partition from an earlier run (results and failures agree)."""
    final = partition_dir(results, input_id)
    if os.path.isdir(final):
        aside = os.path.join(results, STAGING, f"drop.{input_id}.{os.getpid()}")
        os.replace(final, aside)
        shutil.rmtree(aside, ignore_errors=True)


def _write_index(results: str, entries: list[dict]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([("input", pa.string()), ("kind", pa.string()), ("source", pa.string()),
                        ("status", pa.string()), ("bytes", pa.int64()), ("seconds", pa.float64()),
                        ("content_hash", pa.string()),
                        # where and how an analyzed input ran (bench/corpus.py): the worker's host and
                        # pid, its CPU seconds for the input, its peak RSS so far
                        ("host", pa.string()), ("pid", pa.int64()), ("cpu_s", pa.float64()),
                        ("rss_peak_bytes", pa.int64())])
    tmp = os.path.join(results, f".inputs.parquet.tmp{os.getpid()}")
    pq.write_table(pa.Table.from_pylist(entries, schema=schema), tmp)
    os.replace(tmp, os.path.join(results, "inputs.parquet"))
