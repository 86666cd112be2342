"""A study at field scale: one partition at a time, in bounded memory (docs/study.md, "At
field scale").

The in-memory study stacks every table of every results directory and builds one frame
with every column of every flow, each flow two or three times (its class groups), and the
sample lists: about 14 GB for 1 M connections of two-vantage pairs (bench/README.md,
"Study"). Here:

1. **Per partition** (a results directory, or one ``input=<id>`` partition of a corpus):
   :func:`partitions_task` reads a chunk of consecutive partitions, each with the same
   reader and the same code as the in-memory path (:func:`hsrtcp.study.flow_frame`), and
   spools the chunk's per-flow rows and 1-s samples to one Parquet file each; the handoffs
   and coverage rows (small) come back with the partition's record. Chunks are
   independent: worker processes, one per core (``processes``, from
   :data:`PROCESS_MIN_PARTITIONS` partitions; :mod:`hsrtcp.scale.pool`), two threads
   otherwise, or a Dask cluster (``--scheduler``). A partition that cannot be read (a
   damaged file, an older schema) becomes a row of the ``failures`` table naming its file;
   the others are still counted.
2. **Combine**: the summary tables are computed column by column over the spooled rows
   (:mod:`.columns`); ``study_flows`` and ``throughput_samples`` are the spooled rows,
   streamed into their files when the study is written, or meanwhile on a thread
   (``write_ahead``, :class:`Encoding`).

The rows are the in-memory path's, in its order (partitions in the order of their names,
which is the in-memory sort by ``result``), so every table is the same bit for bit
(tests/python/study/test_scale.py).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass

import polars as pl

from hsrtcp.errors import InputError, OutputError
from hsrtcp.results import Corpus
from hsrtcp.study import load, tables
from hsrtcp.study.groups import CONTRACT_DIMENSIONS, resolve_by, row_columns
from hsrtcp.study.samples import LIST_COLUMNS, SAMPLE_COLUMNS

#: partitions read at once on this machine (threads: polars releases the GIL)
WORKERS = 2


def _read_one(path: str, by: list[str]) -> tuple[dict, pl.DataFrame, pl.DataFrame]:
    """One partition's per-flow rows, 1-s samples and what the combine step needs."""
    from hsrtcp.study import _dimension_names, _handoffs, flow_frame
    from hsrtcp.study.connections import COLUMNS_READ

    res = load.read([path], flow_columns=[*COLUMNS_READ, *by])
    # inside one partition ``result`` is a constant: the joins and sorts of flow_frame key on
    # it with every row, and a short string is compared inline where the path is not (12 %
    # of the partition's CPU); the path is put back below, in the same column
    _short_keys(res)
    frame, tput, tnotes = flow_frame(res, by)
    name = pl.lit(path, dtype=pl.String).alias("result")
    tput = (tput.join(frame.select(row_columns([b for b in by if b in frame.columns])),
                      on=["result", "flow_id"], how="left").with_columns(name))
    handoffs = _handoffs(res, [b for b in by if b]).with_columns(name) if res.handoffs is not None else None
    coverage = res.coverage.with_columns(name) if res.coverage is not None else None
    dims = _dimension_names(frame, res)
    frame = frame.with_columns(name)
    sus = res.suspensions
    sus_null = int(sus["suspension_s"].null_count()) if sus is not None else 0
    why = (sus.filter(pl.col("suspension_s").is_null())["reason"].drop_nulls().unique().to_list()
           if sus is not None and sus_null and "reason" in sus.columns else [])
    rec = {"result": path, "notes": list(res.notes), "tnotes": tnotes, "flows": frame.height, "tput": tput.height,
           "context": res.context is not None, "suspensions": sus is not None, "sus_null": sus_null,
           "sus_why": why, "handoffs": handoffs, "coverage": coverage, "dimensions": dims,
           "flow_names": res.flow_names}
    return rec, frame, tput


#: the key ``result`` holds while one partition is computed (:func:`_read_one`)
_KEY = "p"


def _short_keys(res: load.Results) -> None:
    key = pl.lit(_KEY, dtype=pl.String).alias("result")
    for t in ("flows", "series", "events", "context", "labels", "handoffs", "suspensions", "coverage"):
        v = getattr(res, t)
        if v is not None:
            setattr(res, t, v.with_columns(key))
    res.with_context = [_KEY] if res.with_context else []
    res.one_result = True


def partitions_task(chunk: Chunk, by: list[str], spool: str, meta: dict) -> dict:
    """Read the partitions of ``chunk`` (consecutive in the flows' order) and spool their
    rows together: ``flows-<chunk>.parquet`` and ``tput-<chunk>.parquet`` in ``spool``
    (a few large files instead of four small ones per partition: at 10^3 partitions the
    combine step opened every file once per metric). Returns ``{"records": [...], "files":
    {...}}``: a record per partition, what the combine step needs, or ``{"result": path,
    "error": ...}`` naming the file of a partition that cannot be read."""
    recs, frames, tputs = [], [], []
    for path in chunk.paths:
        try:
            rec, frame, tput = _read_one(path, by)
        except (InputError, pl.exceptions.PolarsError, OSError) as exc:
            reason = str(exc) if isinstance(exc, InputError) else f"{path}: cannot read: {type(exc).__name__}: {exc}"
            recs.append({"result": path, "error": reason.splitlines()[0] if reason else type(exc).__name__})
            continue
        recs.append(rec)
        frames.append(frame)
        tputs.append(tput)
    files = {}
    if frames:
        target = files["flows"] = os.path.join(spool, f"flows-{chunk.index:06d}.parquet")
        try:
            # temporary files read once or twice: lz4 and no statistics cost a worker a quarter
            # less than the default zstd to write, and decode as fast
            pl.concat(frames, how="diagonal_relaxed").write_parquet(target, compression="lz4", statistics=False)
            target = files["tput"] = os.path.join(spool, f"tput-{chunk.index:06d}.parquet")
            pl.concat(tputs, how="diagonal_relaxed").write_parquet(target, compression="lz4", statistics=False)
        except (pl.exceptions.PolarsError, OSError) as exc:
            from hsrtcp.output import failure_reason

            reason = failure_reason(exc, spool)
            if reason is None:
                raise
            # the spool's disk, not the partition: the whole study stops (exit 3), named
            return dict(meta, records=recs, files={}, write_error=f"{target}: cannot write: {reason}")
    return dict(meta, records=recs, files=files, worker=(os.uname().nodename, os.getpid()),
                polars_threads=pl.thread_pool_size())


@dataclass
class Chunk:
    """Consecutive partitions read by one task; ``source`` names them in a worker's death."""

    index: int
    paths: list[str]

    @property
    def source(self) -> str:
        return self.paths[0] if len(self.paths) == 1 else f"{self.paths[0]} .. {self.paths[-1]}"


#: partitions per task at most (the spool's files, and the rows a worker holds: ~5 MB each)
CHUNK_MAX = 16
#: tasks per worker at least (the load stays even while the chunks are large)
TASKS_PER_WORKER = 4
#: fewest partitions read by worker processes (below, threads: starting the pool costs ~1 s)
PROCESS_MIN_PARTITIONS = 32


def chunks(names: list[str], workers: int) -> list[Chunk]:
    """``names`` in consecutive chunks, :data:`TASKS_PER_WORKER` per worker at least."""
    size = max(1, min(CHUNK_MAX, len(names) // (TASKS_PER_WORKER * max(1, workers))))
    return [Chunk(i, names[k:k + size]) for i, k in enumerate(range(0, len(names), size))]


class Progress:
    """Partitions done of all: a bar on a terminal (rich, on stderr), else a plain line at
    every tenth of the partitions; nothing when ``enabled`` is false."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.done, self.failed = total, 0, 0
        self.enabled = enabled and total > 0
        self._bar = None
        self._step = max(1, total // 10)
        self._t0 = time.monotonic()
        if self.enabled and sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeRemainingColumn

            self._bar = Bar(TextColumn("study: partitions"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                            TextColumn("{task.fields[failed]} failed"), console=Console(stderr=True), transient=True)
            self._bar.start()
            self._task = self._bar.add_task("study", total=total, failed=0)

    def advance(self, done: int, failed: int) -> None:
        before = self.done
        self.done += done
        self.failed += failed
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(self._task, advance=done, failed=self.failed)
        elif self.done // self._step > before // self._step or self.done == self.total:
            print(f"study: {self.done}/{self.total} partitions read ({100 * self.done // self.total} %), "
                  f"{self.failed} failed, {time.monotonic() - self._t0:.0f} s", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _finished(out: list, chunk: Chunk, r: dict, progress: Progress) -> None:
    if "records" not in r:  # the worker died on this chunk (hsrtcp.scale.pool: run alone, then named)
        why = r.get("reason") or "the worker process died"
        r = dict(records=[{"result": p, "error": why, "kind": "internal"} for p in chunk.paths], files={}, worker=None)
    out[chunk.index] = r
    progress.advance(len(chunk.paths), sum("error" in x for x in r["records"]))


def _run_local(parts: list[Chunk], by: list[str], spool: str, progress: Progress, processes: bool) -> list[dict]:
    """The chunks on this machine: worker processes (one per core, hsrtcp.scale.pool: the
    corpus run's pool) for a large study, threads for a small one."""
    from hsrtcp.scale.pool import default_workers, run_local

    out: list[dict | None] = [None] * len(parts)
    lock = threading.Lock()

    def done(chunk: Chunk, r: dict) -> None:
        with lock:
            _finished(out, chunk, r, progress)

    with _one_polars_thread(processes):
        run_local(((c, by, spool, {"chunk": c.index}) for c in parts), done,
                  workers=min(default_workers(), len(parts)), mode="processes" if processes else "threads",
                  fn=partitions_task)
    return out


#: polars threads of each worker process: the pool has one worker per core (each pinned to
#: its own when it can), so a second polars thread only competes for the worker's core; a
#: partition's queries are small (about 80 on 30,000 rows) and spent about 15 % more CPU
#: with two threads (bench/README.md, "Study")
WORKER_POLARS_THREADS = "1"


class _one_polars_thread:
    """``POLARS_MAX_THREADS`` for the worker processes the pool starts (they take the
    environment of the fork server, started with the pool's first worker; polars reads it
    once, at import). A value the user set is kept; this process's own polars is not
    changed (its threads compute the summary tables after the workers)."""

    def __init__(self, processes: bool) -> None:
        self.set = processes and "POLARS_MAX_THREADS" not in os.environ

    def __enter__(self) -> None:
        if self.set:
            os.environ["POLARS_MAX_THREADS"] = WORKER_POLARS_THREADS

    def __exit__(self, *exc) -> None:
        if self.set:
            os.environ.pop("POLARS_MAX_THREADS", None)


def _run_dask(parts: list[Chunk], by: list[str], spool: str, progress: Progress, scheduler: str) -> list[dict]:
    """:func:`partitions_task` on a Dask cluster, one task per chunk (as ``hsrtcp analyze
    --scheduler`` runs one per input): the spool directory must be the same path on every
    worker (a shared mount, like the results)."""
    from hsrtcp.scale.dask import SchedulerError

    try:
        from distributed import Client, as_completed
    except ImportError as exc:
        raise InputError(f"--scheduler {scheduler}: dask.distributed is not installed ({exc}); "
                         f"pip install 'dask[distributed]'") from None
    try:
        client = Client(scheduler, timeout="30s")
    except OSError as exc:
        raise SchedulerError(f"cannot reach the Dask scheduler {scheduler}: {exc} (is it running, and is the "
                             f"address the one it printed?)") from None
    out: list[dict | None] = [None] * len(parts)
    try:
        futs = {client.submit(partitions_task, c, by, spool, {"chunk": c.index}, pure=False, priority=-c.index): c
                for c in parts}
        for fut in as_completed(futs):
            c = futs[fut]
            try:
                r = fut.result()
            except Exception as exc:  # noqa: BLE001 - a worker that died, a worker without hsrtcp ...
                r = {"reason": f"{c.source}: dask: {exc!r}"}
            fut.release()
            _finished(out, c, r, progress)
    finally:
        client.close()
    return out


def _scan(files: list[str]) -> pl.LazyFrame | None:
    if not files:
        return None
    return pl.concat([pl.scan_parquet(f) for f in files], how="diagonal_relaxed")


class Encoding:
    """Tables sunk to Parquet files in the spool on a thread of their own (``write_ahead``)."""

    def __init__(self, spool: str, frames: dict[str, pl.LazyFrame]) -> None:
        self.paths: dict[str, str] = {}
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(spool, frames), name="hsrtcp-study-write-ahead",
                                        daemon=True)
        self._thread.start()

    def _run(self, spool: str, frames: dict[str, pl.LazyFrame]) -> None:
        try:
            for name, lf in frames.items():
                p = os.path.join(spool, f"{name}.parquet")
                lf.sink_parquet(p)
                self.paths[name] = p
        except Exception as exc:  # noqa: BLE001 - Study.write then sinks the table itself and reports
            self.error = exc

    def wait(self) -> None:
        self._thread.join()

    def path(self, name: str) -> str | None:
        """The file of table ``name`` once encoded; None when it could not be."""
        self.wait()
        return self.paths.get(name)


def _stack(frames: list) -> pl.DataFrame | None:
    frames = [f for f in frames if f is not None]
    return pl.concat(frames, how="diagonal_relaxed") if frames else None


def study(results: list[str], by: list[str], *, min_flows: int, bootstrap: int, seed: int, level: float,
          scheduler: str | None = None, progress: bool | None = None, spool_dir: str | None = None,
          processes: bool = False, write_ahead: bool = False):
    """The streamed study (:func:`hsrtcp.study.study` with ``stream=True``); ``processes``:
    worker processes for :data:`PROCESS_MIN_PARTITIONS` partitions or more (the caller's
    script must then guard its main, ``if __name__ == "__main__":``, as any program that
    starts processes; the ``hsrtcp`` command does). ``write_ahead``: encode ``study_flows``
    and ``throughput_samples`` into the spool on a thread while the summary tables are
    computed (those are mostly one core's numpy; the encoding is most of what
    :meth:`Study.write` costs at 10^7 flows), for a caller that writes the study."""
    from hsrtcp.study import Study

    # the directories (a corpus: its partitions) as the in-memory path reads them: none, one
    # given twice or a missing one is an InputError; their tables are read by the workers
    names = list(Corpus(parts=results, tag="result").parts)
    given = {n: i for i, n in enumerate(names)}
    names = sorted(names)  # the in-memory path's order of the flows: sorted by result
    by = [b.strip() for b in by if b.strip()]
    spool = tempfile.mkdtemp(prefix="hsrtcp-study-", dir=spool_dir)
    prog = Progress(len(names), bool(progress))
    try:
        if scheduler:
            parts = chunks(names, 1)
            done = _run_dask(parts, by, spool, prog, scheduler)
        else:
            from hsrtcp.scale.pool import default_workers

            parts = chunks(names, default_workers())
            done = _run_local(parts, by, spool, prog, processes=processes and len(names) >= PROCESS_MIN_PARTITIONS)
    except BaseException:
        shutil.rmtree(spool, ignore_errors=True)
        raise
    finally:
        prog.close()
    write_error = next((d["write_error"] for d in done if d.get("write_error")), None)
    if write_error:
        shutil.rmtree(spool, ignore_errors=True)
        raise OutputError(write_error)
    recs = [r for d in done for r in d["records"]]
    ok = [r for r in recs if "error" not in r]
    # the handoffs and coverage rows in the order the directories were given (as stacked in memory)
    as_given = sorted(ok, key=lambda r: given[r["result"]])
    failures = pl.DataFrame({"result": [r["result"] for r in recs if "error" in r],
                             "kind": [r.get("kind", "unreadable") for r in recs if "error" in r],
                             "reason": [r["error"] for r in recs if "error" in r]},
                            schema={"result": pl.String, "kind": pl.String, "reason": pl.String})
    if not ok:
        shutil.rmtree(spool, ignore_errors=True)
        first = failures["reason"][0] if failures.height else "no partition"
        raise InputError(f"no results directory could be read ({failures.height} failed; first: {first})")
    notes = [n for r in as_given for n in r["notes"]]
    # a series column is missing from the stacked series only when every partition lacks it
    notes += [n for n in ok[0]["tnotes"] if all(n in r["tnotes"] for r in ok)]
    flows_lf = _scan([d["files"]["flows"] for d in done if "flows" in d["files"]])
    # a metric column some partitions lack (single captures have no matched columns) is a
    # null of the flows column's type there, as in the stacked flows of the in-memory path
    from hsrtcp.results import expected_type
    from hsrtcp.study.connections import METRICS_FROM_ROW

    had = set().union(*[r["flow_names"] for r in ok])
    have = flows_lf.collect_schema()
    casts = {dst: expected_type("flows", src) for dst, src in METRICS_FROM_ROW.items() if src in had and dst in have}
    flows_lf = flows_lf.with_columns([pl.col(c).cast(t) for c, t in casts.items() if t is not None and have[c] != t])
    # the --by names: what the in-memory frame would have (the union of the partitions' columns)
    names_avail = sorted(set().union(*[r["dimensions"] for r in ok]))
    empty = pl.DataFrame(schema=flows_lf.collect_schema())
    _, dims, bnotes = resolve_by(empty, list(by), available=names_avail)
    notes += bnotes
    missing = [d for d in dims if d not in empty.columns]
    if missing:  # contract dimensions no table carries: null, as in the in-memory path
        flows_lf = flows_lf.with_columns([pl.lit(None, dtype=pl.String).alias(d) for d in missing])
    if not any(r["context"] for r in ok):
        notes.append("no results directory had context: every flow is classed 'unknown' and the per-class "
                     "tables have only the 'unknown' and 'all' groups with data")
    if not any(r["suspensions"] for r in ok):
        notes.append("no suspensions table (needs a radio log): M24 is not reported")
    elif sum(r["sus_null"] for r in ok):
        why = list(dict.fromkeys(w for r in ok for w in r["sus_why"]))
        notes.append(f"{sum(r['sus_null'] for r in ok)} suspensions without a value"
                     + (f" ({'; '.join(why)})" if why else ""))
    if not any(r["handoffs"] is not None for r in ok):
        notes.append("no handoffs table (needs a radio log): M23 is not reported")
    if not any(r["coverage"] is not None for r in ok):
        notes.append("no coverage table (needs a radio log): M28 is not reported")
    for f in failures.iter_rows(named=True):
        notes.append(f"skipped: {f['reason']}")
    o = tables.Options(by=tuple(dims), min_flows=min_flows, n_boot=bootstrap, seed=seed, level=level)
    flows = tables.Flows(flows_lf)
    handoffs = _stack([r["handoffs"] for r in as_given])
    if handoffs is not None:
        handoffs = handoffs.with_columns([pl.lit(None, dtype=pl.String).alias(d) for d in dims
                                          if d not in handoffs.columns])
    coverage = _stack([r["coverage"] for r in as_given])
    tput = _scan([d["files"]["tput"] for d in done if "tput" in d["files"]])
    tput_names = tput.collect_schema().names()
    tput = tput.with_columns([pl.lit(None, dtype=pl.String).alias(d) for d in dims if d not in tput_names])
    study_flows = flows_lf.drop([c for c in (*LIST_COLUMNS, "failed_value") if c in flows_lf.collect_schema()])
    samples = tput.select(*row_columns(dims), *SAMPLE_COLUMNS)
    ahead = Encoding(spool, {"study_flows": study_flows, "throughput_samples": samples}) if write_ahead else None
    try:
        out = {
            "classes": tables.classes(flows, o),
            "u_rate": tables.u_rate(flows, o),
            "performance": tables.performance(flows, o),
            "spurious_rto": tables.spurious_rto(flows, o),
            "dupack": tables.dupack(flows, o),
            "handshake": tables.handshake(flows, o),
            "failure": tables.failure(flows, o),
            "timeout_recovery": tables.timeout_recovery(flows, o),
            "suspensions": tables.suspensions(flows, o),
            "handoff_intervals": tables.handoff_intervals(handoffs, o),
            "coverage": tables.coverage(coverage),
            "throughput_samples": samples,
            "study_flows": study_flows,
            "failures": failures,
        }
    except BaseException:
        if ahead is not None:
            ahead.wait()
        shutil.rmtree(spool, ignore_errors=True)
        raise
    rows = {"throughput_samples": sum(r["tput"] for r in ok), "study_flows": sum(r["flows"] for r in ok)}
    s = Study(out, notes, o, list(results), rows=rows)
    s.partitions = len(names)
    s.workers = sorted({tuple(d["worker"]) for d in done if d["worker"]})  # (host, pid) of the processes that read them
    s.worker_polars_threads = sorted({d["polars_threads"] for d in done if d.get("polars_threads")})
    s.spool = spool
    s.encoded = ahead
    weakref.finalize(s, shutil.rmtree, spool, True)  # the spooled rows live as long as the study
    return s
