"""A whole corpus run: :func:`run_corpus` (what ``hsrtcp analyze CORPUS -o RESULTS`` does).

1. discover the inputs (:mod:`.discover`, :mod:`.manifest`);
2. lock RESULTS (:mod:`.lock`) and clear the staging leftovers of dead runs;
3. key every input (:mod:`.hashing`): an unreadable one, or one with the content of an
   earlier input (a duplicate), becomes a failure row; one whose partition records the
   same state key is skipped (unless ``force``);
4. analyze the rest on a local pool (:mod:`.pool`) or Dask (:mod:`.dask`);
5. write ``failures.parquet`` and ``inputs.parquet`` (one row per input of this corpus:
   id, kind, source, status of this run, bytes, seconds); exit 3 if any failure row.

A run that stops early (Ctrl-C, SIGTERM, RESULTS that cannot be written: a full disk)
first makes sure no task of it can still commit a partition (:func:`hsrtcp.scale.pool.run_local`),
then counts as analyzed every input whose partition of this run is there, removes the
staging directory and writes both tables, and lets the exception go on.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import threading
import time
import uuid

from hsrtcp.errors import ExitCode, OutputError
from hsrtcp.output import shown
from hsrtcp.scale.discover import Input, discover
from hsrtcp.scale.failures import row, write_failures
from hsrtcp.scale.hashing import content_hash, file_digest, state_key
from hsrtcp.scale.lock import ResultsLock
from hsrtcp.scale.tasks import STAGING, partition_dir, read_record, stop_run


class Terminated(KeyboardInterrupt):
    """SIGTERM: the run stops as on Ctrl-C (partitions kept, tables written)."""


def _on_sigterm(signum, frame) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    raise Terminated


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
    background thread while the inputs are analyzed: on the 2-core bench host the import
    took 0.3-4 s (load-dependent), all of it in the run's serial tail before. Called when
    the first input is done, not at the start: the import holds the GIL for most of its
    0.2 s, and at the start that delayed the first tasks' hand-over to the workers by
    0.07-0.13 s, a time in which a second core had nothing to do."""
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
    from hsrtcp.scale.pool import default_workers, forced_mode

    mode = mode or forced_mode()
    t_start = time.perf_counter()
    clock = {"start": time.perf_counter()}

    def mark(name: str) -> None:
        now = time.perf_counter()
        if phases is not None:
            phases[name] = now - clock["start"]
        clock["start"] = now

    # a cluster connects (or starts) while the inputs are found and keyed
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if main else None
    try:
        cluster = DaskCluster(scheduler, max(1, workers or default_workers())) if scheduler or dask_local else None
        try:
            return _run(spec, results, cluster, force=force, workers=workers, quiet=quiet, window_s=window_s,
                        labels=labels, mode=mode, phases=phases, mark=mark, t_start=t_start)
        finally:
            if cluster is not None:
                cluster.close()
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)


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
    guess = _size_guess(inputs)
    how = "dask" if cluster is not None else (mode or choose(guess, workers))
    if how == "processes":
        prestart()  # the pool's fork server loads while the first inputs are keyed
    with ResultsLock(results):
        shutil.rmtree(os.path.join(results, STAGING), ignore_errors=True)  # leftovers of dead runs
        _reserve(results, len(inputs))
        try:
            os.makedirs(os.path.join(results, STAGING), exist_ok=True)
        except OSError:
            _unlink(os.path.join(results, RESERVE))
            raise
        failures: list[dict] = []
        index: dict[str, dict] = {}  # one entry per input id, in discovery order
        to_key = []
        for inp in inputs:
            entry = {"input": inp.id, "kind": inp.kind, "source": inp.source, "status": None,
                     "bytes": None, "seconds": None, "content_hash": None,  # + worker fields (_write_index)
                     "source_bytes": [os.fsencode(f) for f in inp.files]}
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
            to_key.append(inp)
        # Largest first (by estimated cost, from the file sizes): the last inputs to start
        # are the small ones, so the workers run out of work at about the same time instead
        # of one finishing a big input alone at the end. The order is known before any input
        # is read, so keying (content hashes, skip decisions) runs one input ahead of the
        # workers instead of before all of them (_keyed). Equal content has equal size, and
        # the sort is stable: of two duplicates the one found first is still analyzed.
        to_key.sort(key=lambda inp: -_size_guess([inp]) * COST_PER_BYTE.get(inp.kind, 1.0))
        progress = CorpusProgress(len(to_key), _size_guess(to_key), enabled=not quiet)
        todo_bytes = [0, 0]  # bytes and number of the inputs to analyze, as they are keyed
        mark("key")  # up to the first input's keying (the rest of it overlaps the analysis)
        t_analyze = time.time()
        tasks_seen: list[dict] = []
        preloading = False
        run = {"pid": os.getpid(), "token": uuid.uuid4().hex}  # what a task checks before its commit
        dispatched: dict[str, str] = {}  # input id -> state key of its task
        todo = _keyed(to_key, index, failures, progress, todo_bytes, results=results, force=force,
                      window_s=window_s, version=hsrtcp.__version__, phases=phases, run=run,
                      dispatched=dispatched)

        def on_done(inp: Input, res: dict) -> None:
            nonlocal preloading
            if not preloading:
                preloading = True
                _preload_pyarrow()
            if res.get("status") == "stopped":  # the run is stopping: the input did not end
                return
            if res.get("kind") == "output":  # RESULTS cannot take more: no input's fault
                raise OutputError(f"{shown(results)}: cannot write the results, the corpus run stopped: "
                                  f"{res.get('reason')}")
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

        stopped: BaseException | None = None
        try:
            if how == "dask":
                cluster.run(todo, on_done)
            else:
                run_local(todo, on_done, workers=min(workers, len(inputs)), mode=how,
                          on_stop=lambda: stop_run(run["token"]))
        except BaseException as exc:
            stopped = exc
            raise
        finally:
            progress.close()
            mark("analyze")
            stop_run(run["token"])
            if todo_bytes[1] == 0:
                how = "none"  # every input skipped, duplicate or unreadable
            _found_committed(results, index, dispatched, failures)
            failures = [dict(f, source=shown(f["source"]), reason=shown(f["reason"])) for f in failures]
            problem = _write_tables(results, failures, list(index.values()))
            mark("write")
            if stopped is not None and not quiet:
                _summary(spec, results, index, failures, stopped=stopped)
            if problem is not None:
                if stopped is None:
                    raise problem
                print(f"hsrtcp: {problem}", file=sys.stderr)  # the stop's own error follows
    if phases is not None:
        phases.update(total=time.perf_counter() - t_start, mode=how, workers=workers, tasks=tasks_seen)
    if not quiet:
        gb = todo_bytes[0] / 1e9
        wall = time.perf_counter() - t_start
        _summary(spec, results, index, failures, tail=f"; {gb:.3f} GB in {wall:.1f} s ({how}, {workers} workers)")
    return ExitCode.INPUT if failures else ExitCode.OK


def _summary(spec, results, index, failures, *, tail: str = "", stopped: BaseException | None = None) -> None:
    """The run's lines on stderr: counts, then the first failure rows."""
    n = {s: sum(1 for e in index.values() if e["status"] == s) for s in ("analyzed", "skipped", "failed", "duplicate")}
    left = sum(1 for e in index.values() if e["status"] is None)
    head = f"hsrtcp: corpus {shown(spec)}: {len(index)} inputs: "
    if stopped is not None:
        why = ("SIGTERM" if isinstance(stopped, Terminated) else
               "interrupted" if isinstance(stopped, KeyboardInterrupt) else
               "the results cannot be written" if isinstance(stopped, (OutputError, OSError)) else "an error")
        head = f"hsrtcp: corpus {shown(spec)}: stopped ({why}) with {left} of {len(index)} inputs not done: "
    print(f"{head}{n['analyzed']} analyzed, {n['skipped']} skipped (unchanged), {n['failed']} failed, "
          f"{n['duplicate']} duplicate{tail}; {len(failures)} failure rows -> {shown(results)}/failures.parquet",
          file=sys.stderr)
    if stopped is not None:
        print("hsrtcp: the partitions done are kept; run the same command again to do the rest", file=sys.stderr)
    for f in failures[:20]:
        print(f"hsrtcp: {f['input']}: {f['kind']}: {f['reason']}", file=sys.stderr)
    if len(failures) > 20:
        print(f"hsrtcp: ... and {len(failures) - 20} more in failures.parquet", file=sys.stderr)


def _found_committed(results: str, index: dict, dispatched: dict, failures: list) -> None:
    """Inputs of this run whose result never came back (the run stopped) but whose partition
    it committed: analyzed, with their recorded errors (inputs.parquet = the partitions)."""
    for inp_id, state in dispatched.items():
        entry = index[inp_id]
        if entry["status"] is not None:
            continue
        rec = read_record(results, inp_id)
        if rec is not None and rec.get("state") == state and rec.get("status") == "done":
            entry.update(status="analyzed", **{k: rec.get(k) for k in ("seconds", "host", "pid")})
            failures += [row(inp_id, e["source"], e["kind"], e["reason"]) for e in rec.get("errors", [])]


#: room for the failures and inputs tables, taken at the start of a run and given back
#: just before they are written: a run stopped by a full disk still writes them
RESERVE = ".hsrtcp-reserve"


def _reserve(results: str, inputs: int) -> None:
    """Take :data:`RESERVE`: 64 KiB and 512 bytes per input (both tables took 197 bytes per
    input for 2000 pairs with 150-character paths that all failed with long reasons).
    OutputError when even that does not fit: nothing is analyzed."""
    path = os.path.join(results, RESERVE)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            # not zeros: a compressing file system (ZFS, btrfs) would store them in no space
            data = memoryview(os.urandom(64 * 1024 + 512 * inputs))
            while data:
                data = data[os.write(fd, data):]
        finally:
            os.close(fd)
    except OSError as exc:
        _unlink(path)
        raise OutputError(f"{shown(results)}: cannot write the results: {exc.strerror or exc}") from None


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _write_tables(results: str, failures: list, entries: list) -> OutputError | None:
    """Staging and the reserve removed (room on a full disk), then both tables, each tried
    even when the other cannot be written; the first error, or None. A table that cannot
    be written is removed: the previous run's would contradict the partitions."""
    shutil.rmtree(os.path.join(results, STAGING), ignore_errors=True)
    _unlink(os.path.join(results, RESERVE))
    problem = None
    for name, write in (("failures.parquet", lambda: write_failures(results, failures)),
                        ("inputs.parquet", lambda: _write_index(results, entries))):
        try:
            write()
        except (OSError, OutputError) as exc:
            why = str(exc) if isinstance(exc, OutputError) else \
                f"{shown(exc.filename or os.path.join(results, name))}: cannot write: {exc.strerror or exc}"
            try:
                os.unlink(os.path.join(results, name))
                why += f"; the {name} of an earlier run is removed: it would not match the partitions"
            except OSError:  # none there, or not a file
                pass
            problem = problem or OutputError(why)
    return problem


def _keyed(inputs, index, failures, progress, todo_bytes, *, results, force, window_s, version, phases, run,
           dispatched):
    """The tasks to run, keyed one at a time as the pool asks for them (:func:`_key_one`).
    Adds to ``failures`` and ``todo_bytes`` (bytes, inputs); ``phases['key_s']``: the keying's own time,
    most of it now inside the analysis phase."""
    seen_content: dict[str, Input] = {}
    spent = 0.0
    for inp in inputs:
        t0 = time.perf_counter()
        before = len(failures)
        task = _key_one(inp, index[inp.id], results, failures, seen_content, force=force, window_s=window_s,
                        version=version, run=run)
        spent += time.perf_counter() - t0
        if phases is not None:
            phases["key_s"] = spent
        if task is None:
            progress.skip(_size_guess([inp]), len(failures) - before)
            continue
        todo_bytes[0] += task[3]["bytes"]
        todo_bytes[1] += 1
        dispatched[inp.id] = task[3]["state"]
        yield task


def _key_one(inp, entry, results, failures, seen_content, *, force, window_s, version, run=None):
    """One input's content key and skip decision: its task, or None (failure row or skip)."""
    try:
        content, nbytes, mtimes = content_hash(inp.files)
    except OSError as exc:
        entry["status"] = "failed"
        where = exc.filename or inp.source
        failures.append(row(inp.id, inp.source, "unreadable", f"{where}: {exc.strerror or exc}"))
        _drop_partition(results, inp.id)
        return None
    entry.update(content_hash=content, bytes=nbytes)
    if content in seen_content:
        first = seen_content[content]
        entry["status"] = "duplicate"
        failures.append(row(inp.id, inp.source, "duplicate",
                            f"same content as input {first.id} ({first.source}); only that one is analyzed"))
        return None
    seen_content[content] = inp
    settings = _settings(inp, window_s)
    state = state_key(content, mtimes, settings, version)
    rec = read_record(results, inp.id)
    if not force and rec is not None and rec.get("state") == state and rec.get("status") == "done":
        entry.update(status="skipped", seconds=0.0)
        failures += [row(inp.id, e["source"], e["kind"], e["reason"]) for e in rec.get("errors", [])]
        return None
    record = {"input": inp.id, "kind": inp.kind, "files": settings["files"], "content": content,
              "state": state, "version": version, "bytes": nbytes, "settings": settings}
    return (inp, results, window_s, record, run)


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

    from hsrtcp.atomic import write_file

    schema = pa.schema([("input", pa.string()), ("kind", pa.string()), ("source", pa.string()),
                        ("status", pa.string()), ("bytes", pa.int64()), ("seconds", pa.float64()),
                        ("content_hash", pa.string()),
                        # where and how an analyzed input ran (bench/corpus.py): the worker's host and
                        # pid, its CPU seconds for the input, its peak RSS so far
                        ("host", pa.string()), ("pid", pa.int64()), ("cpu_s", pa.float64()),
                        ("rss_peak_bytes", pa.int64()),
                        # the files' exact names: `source` is printable text (bytes that are not
                        # UTF-8 shown as U+FFFD), these are the bytes to open them by
                        ("source_bytes", pa.list_(pa.binary()))])
    rows = [dict(e, source=shown(e["source"])) for e in entries]
    table = pa.Table.from_pylist(rows, schema=schema)
    write_file(os.path.join(results, "inputs.parquet"), lambda tmp: pq.write_table(table, tmp))
