"""A study at field scale: one partition at a time, in bounded memory (docs/study.md, "At
field scale").

The in-memory study stacks every table of every results directory and builds one frame
with every column of every flow, each flow two or three times (its class groups), and the
sample lists: about 14 GB for 1 M connections of two-vantage pairs (bench/README.md,
"Study"). Here:

1. **Per partition** (a results directory, or one ``input=<id>`` partition of a corpus):
   :func:`partition` reads it with the same reader and the same code as the in-memory path
   (:func:`hsrtcp.study.flow_frame`) and spools its per-flow rows, its 1-s samples and its
   handoffs and coverage rows to Parquet files. Partitions are independent: a thread pool
   runs two at a time, or a Dask cluster (``--scheduler``) one per worker. A partition that
   cannot be read (a damaged file, an older schema) becomes a row of the ``failures`` table
   naming its file; the others are still counted.
2. **Combine**: the summary tables are computed column by column over the spooled rows
   (:mod:`.columns`); ``study_flows`` and ``throughput_samples`` are the spooled rows,
   streamed into their files when the study is written.

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
from concurrent.futures import ThreadPoolExecutor

import polars as pl

from hsrtcp.errors import InputError
from hsrtcp.study import load, tables
from hsrtcp.study.groups import CONTRACT_DIMENSIONS, resolve_by

#: list columns of the per-flow rows (pooled statistics; not written in study_flows)
LIST_COLUMNS = ("tput_samples", "loss_samples", "timeout_phases_s", "suspensions_s")
#: partitions read at once on this machine (threads: polars releases the GIL)
WORKERS = 2


def partition(path: str, by: list[str], spool: str, index: int) -> dict:
    """Read one results directory and spool its per-flow rows: ``flows-<index>.parquet``,
    ``tput-<index>.parquet``, ``handoffs-<index>.parquet``, ``coverage-<index>.parquet``
    in ``spool``. Returns what the combine step needs (notes, counts, the columns), or
    ``{"error": ...}`` naming the file for a partition that cannot be read."""
    from hsrtcp.study import _dimension_names, _handoffs, flow_frame

    try:
        from hsrtcp.study.connections import COLUMNS_READ

        res = load.read([path], flow_columns=[*COLUMNS_READ, *by])
        frame, tput, tnotes = flow_frame(res, by)
        files = {}
        out = os.path.join(spool, f"flows-{index:06d}.parquet")
        frame.write_parquet(out)
        files["flows"] = out
        files["tput"] = os.path.join(spool, f"tput-{index:06d}.parquet")
        tput.join(frame.select("result", "flow_id", "flow_class", *[b for b in by if b in frame.columns]),
                  on=["result", "flow_id"], how="left").write_parquet(files["tput"])
        if res.handoffs is not None:
            files["handoffs"] = os.path.join(spool, f"handoffs-{index:06d}.parquet")
            _handoffs(res, [b for b in by if b]).write_parquet(files["handoffs"])
        if res.coverage is not None:
            files["coverage"] = os.path.join(spool, f"coverage-{index:06d}.parquet")
            res.coverage.write_parquet(files["coverage"])
        sus = res.suspensions
        sus_null = int(sus["suspension_s"].null_count()) if sus is not None else 0
        why = (sus.filter(pl.col("suspension_s").is_null())["reason"].drop_nulls().unique().to_list()
               if sus is not None and sus_null and "reason" in sus.columns else [])
        return {"result": path, "files": files, "notes": list(res.notes), "tnotes": tnotes,
                "flows": frame.height, "tput": tput.height, "context": res.context is not None,
                "suspensions": sus is not None, "sus_null": sus_null, "sus_why": why,
                "handoffs": res.handoffs is not None, "coverage": res.coverage is not None,
                "dimensions": _dimension_names(frame, res), "flow_names": res.flow_names,
                "worker": (os.uname().nodename, os.getpid())}
    except (InputError, pl.exceptions.PolarsError, OSError) as exc:
        reason = str(exc) if isinstance(exc, InputError) else f"{path}: cannot read: {type(exc).__name__}: {exc}"
        return {"result": path, "error": reason.splitlines()[0] if reason else type(exc).__name__}


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

    def advance(self, failed: bool) -> None:
        self.done += 1
        self.failed += int(failed)
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(self._task, advance=1, failed=self.failed)
        elif self.done % self._step == 0 or self.done == self.total:
            print(f"study: {self.done}/{self.total} partitions read ({100 * self.done // self.total} %), "
                  f"{self.failed} failed, {time.monotonic() - self._t0:.0f} s", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _run_local(names: list[str], by: list[str], spool: str, progress: Progress) -> list[dict]:
    out: list[dict | None] = [None] * len(names)
    lock = threading.Lock()

    def one(i: int) -> None:
        r = partition(names[i], by, spool, i)
        with lock:
            out[i] = r
            progress.advance("error" in r)

    with ThreadPoolExecutor(max_workers=min(WORKERS, max(1, len(names)))) as pool:
        list(pool.map(one, range(len(names))))
    return out


def _run_dask(names: list[str], by: list[str], spool: str, progress: Progress, scheduler: str) -> list[dict]:
    """:func:`partition` on a Dask cluster, one task per partition (as ``hsrtcp analyze
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
    out: list[dict | None] = [None] * len(names)
    try:
        futs = {client.submit(partition, n, by, spool, i, pure=False, priority=-i): i for i, n in enumerate(names)}
        for fut in as_completed(futs):
            i = futs[fut]
            try:
                r = fut.result()
            except Exception as exc:  # noqa: BLE001 - a worker that died, a worker without hsrtcp ...
                r = {"result": names[i], "error": f"{names[i]}: dask: {exc!r}"}
            fut.release()
            out[i] = r
            progress.advance("error" in r)
    finally:
        client.close()
    return out


def _scan(files: list[str]) -> pl.LazyFrame | None:
    if not files:
        return None
    return pl.concat([pl.scan_parquet(f) for f in files], how="diagonal_relaxed")


def study(results: list[str], by: list[str], *, min_flows: int, bootstrap: int, seed: int, level: float,
          scheduler: str | None = None, progress: bool | None = None, spool_dir: str | None = None):
    """The streamed study (:func:`hsrtcp.study.study` with ``stream=True``)."""
    from hsrtcp.study import Study, _LIST_COLUMNS

    if not results:
        raise InputError("no results directory given")
    names = [p for d in results for p in load.partitions(d)]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise InputError(f"results directory given twice: {', '.join(dup)}")
    for n in names:
        if not os.path.isdir(n):
            raise InputError(f"{n}: no such results directory")
    given = {n: i for i, n in enumerate(names)}
    names = sorted(names)  # the in-memory path's order of the flows: sorted by result
    by = [b.strip() for b in by if b.strip()]
    spool = tempfile.mkdtemp(prefix="hsrtcp-study-", dir=spool_dir)
    prog = Progress(len(names), bool(progress))
    try:
        if scheduler:
            recs = _run_dask(names, by, spool, prog, scheduler)
        else:
            recs = _run_local(names, by, spool, prog)
    except BaseException:
        shutil.rmtree(spool, ignore_errors=True)
        raise
    finally:
        prog.close()
    ok = [r for r in recs if "error" not in r]
    # the handoffs and coverage rows in the order the directories were given (as stacked in memory)
    as_given = sorted(ok, key=lambda r: given[r["result"]])
    failures = pl.DataFrame({"result": [r["result"] for r in recs if "error" in r],
                             "kind": ["unreadable"] * (len(recs) - len(ok)),
                             "reason": [r["error"] for r in recs if "error" in r]},
                            schema={"result": pl.String, "kind": pl.String, "reason": pl.String})
    if not ok:
        shutil.rmtree(spool, ignore_errors=True)
        first = failures["reason"][0] if failures.height else "no partition"
        raise InputError(f"no results directory could be read ({failures.height} failed; first: {first})")
    notes = [n for r in as_given for n in r["notes"]]
    # a series column is missing from the stacked series only when every partition lacks it
    notes += [n for n in ok[0]["tnotes"] if all(n in r["tnotes"] for r in ok)]
    flows_lf = _scan([r["files"]["flows"] for r in ok])
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
    if not any(r["handoffs"] for r in ok):
        notes.append("no handoffs table (needs a radio log): M23 is not reported")
    if not any(r["coverage"] for r in ok):
        notes.append("no coverage table (needs a radio log): M28 is not reported")
    for f in failures.iter_rows(named=True):
        notes.append(f"skipped: {f['reason']}")
    o = tables.Options(by=tuple(dims), min_flows=min_flows, n_boot=bootstrap, seed=seed, level=level)
    flows = tables.Flows(flows_lf)
    handoffs = _scan([r["files"]["handoffs"] for r in as_given if "handoffs" in r["files"]])
    if handoffs is not None:
        handoffs = handoffs.with_columns([pl.lit(None, dtype=pl.String).alias(d) for d in dims
                                          if d not in handoffs.collect_schema().names()]).collect()
    coverage = _scan([r["files"]["coverage"] for r in as_given if "coverage" in r["files"]])
    tput = _scan([r["files"]["tput"] for r in ok])
    tput_names = tput.collect_schema().names()
    tput = tput.with_columns([pl.lit(None, dtype=pl.String).alias(d) for d in dims if d not in tput_names])
    study_flows = flows_lf.drop([c for c in (*_LIST_COLUMNS, "failed_value") if c in flows_lf.collect_schema()])
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
        "coverage": tables.coverage(coverage.collect() if coverage is not None else None),
        "throughput_samples": tput.select("result", "flow_id", "flow_class", *dims, "bin", "t_rel", "bin_s", "bytes",
                                          "throughput_bps", "loss_rate"),
        "study_flows": study_flows,
        "failures": failures,
    }
    rows = {"throughput_samples": sum(r["tput"] for r in ok), "study_flows": sum(r["flows"] for r in ok)}
    s = Study(out, notes, o, list(results), rows=rows)
    s.partitions = len(names)
    s.workers = sorted({tuple(r["worker"]) for r in ok})  # (host, pid) of the processes that read them
    s.spool = spool
    weakref.finalize(s, shutil.rmtree, spool, True)  # the spooled rows live as long as the study
    return s
