"""The study layer: the seeds' grouped tables from one or many results directories.

``hsrtcp.study(results, by=[...])`` (this module is callable) or ``hsrtcp study RESULTS...
-o STUDY`` reads results directories of ``hsrtcp analyze`` (with the context tables of a
radio log when there was one), counts each connection once (:mod:`.connections`), classes
it (:mod:`.groups`: context.flow_class, docs/metrics.md M21/A2, plus seed 000's ``high_1_16``)
and builds the seeds' tables (:mod:`.tables`) with bootstrap intervals (:mod:`.stats`).
Schemas: docs/formats/study.md; what each table is and how it compares with the seeds:
docs/study.md.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import types
from collections.abc import Iterable
from pathlib import Path

import polars as pl

from hsrtcp.study import groups, load, samples, tables
from hsrtcp.study.connections import connections
from hsrtcp.study.stats import LEVEL

#: version of the study tables' schemas (docs/formats/study.md)
SCHEMA_VERSION = 1
#: the tables of a study, in the order they are written and printed
TABLE_NAMES = ("classes", "u_rate", "performance", "spurious_rto", "dupack", "handshake", "failure",
               "timeout_recovery", "suspensions", "handoff_intervals", "coverage", "throughput_samples",
               "study_flows")

__all__ = ["SCHEMA_VERSION", "TABLE_NAMES", "Study", "refuse_out", "study"]


#: the file that lists a study's files in its directory (docs/formats/output.md)
MANIFEST = "hsrtcp-manifest.study.txt"


def refuse_out(out_dir: str | os.PathLike, inputs: Iterable[str | os.PathLike] = ()) -> str | None:
    """Why ``out_dir`` cannot take a study, or None: it is one of the results directories
    read, or any results directory of ``hsrtcp analyze``. The study's tables share names
    with an analysis's (``suspensions``, ``coverage``): written there they would replace its
    tables, or be read back as them by the next study."""
    from hsrtcp.output import MANIFEST as ANALYSIS, shown

    d = os.fspath(out_dir)
    if not os.path.isdir(d):
        return None
    for r in inputs:
        try:
            same = os.path.samefile(r, d)
        except OSError:
            same = False
        if same:
            return (f"{shown(d)}: is a results directory this study reads; the study's tables (suspensions, "
                    f"coverage, ...) would overwrite or mix with its tables: choose another directory")
    for mark in (ANALYSIS, "flows.parquet", "inputs.parquet"):
        if os.path.isfile(os.path.join(d, mark)):
            return (f"{shown(d)}: is a results directory of hsrtcp analyze (it has {mark}); the study's tables "
                    f"(suspensions, coverage, ...) would overwrite or mix with its tables: choose another "
                    f"directory")
    return None


class Study:
    """The tables of a study (polars DataFrames, ``study.spurious_rto`` or
    ``study.tables["spurious_rto"]``), the notes on missing inputs, the options."""

    def __init__(self, tables_: dict[str, pl.DataFrame], notes: list[str], options: tables.Options,
                 inputs: list[str], rows: dict[str, int] | None = None) -> None:
        self.tables = tables_
        self.notes = notes
        self.options = options
        self.inputs = inputs
        # row counts of tables held as lazy frames over spooled files (the streaming path)
        self._rows = rows or {}

    def rows(self, name: str) -> int:
        """Rows of table ``name`` (without reading a spooled one)."""
        t = self.tables[name]
        return t.height if isinstance(t, pl.DataFrame) else self._rows[name]

    def __getattr__(self, name: str) -> pl.DataFrame:
        try:
            return self.__dict__["tables"][name]
        except KeyError:
            raise AttributeError(name) from None

    def __repr__(self) -> str:
        n = self.rows("study_flows")
        return f"Study({n} flows from {len(self.inputs)} results, by={list(self.options.by)}, tables={list(self.tables)})"

    def manifest(self) -> dict:
        o = self.options
        return {"study_schema_version": SCHEMA_VERSION, "inputs": self.inputs, "by": list(o.by),
                "min_flows": o.min_flows, "bootstrap": o.n_boot, "seed": o.seed, "level": o.level,
                "tables": {name: self.rows(name) for name in self.tables}, "notes": self.notes}

    def write(self, out_dir: str | os.PathLike) -> list[Path]:
        """Write every table as ``<name>.parquet`` and ``study.json`` (the manifest), all
        together or none (:class:`hsrtcp.output.OutputSet`, listed in
        ``hsrtcp-manifest.study.txt``). Raises :class:`hsrtcp.errors.OutputError` naming the
        path: for a results directory of ``hsrtcp analyze`` (see :func:`refuse_out`), a
        full disk ..."""
        from hsrtcp.errors import OutputError
        from hsrtcp.output import OutputSet

        problem = refuse_out(out_dir, self.inputs)
        if problem:
            raise OutputError(problem)
        text = json.dumps(self.manifest(), indent=2) + "\n"
        with OutputSet(out_dir, manifest=MANIFEST, replaces=frozenset()) as output:
            for name, df in self.tables.items():
                with output.file(f"{name}.parquet") as p:
                    ahead = getattr(self, "encoded", None)
                    done = ahead.path(name) if ahead is not None and isinstance(df, pl.LazyFrame) else None
                    if done is not None:  # encoded while the tables were computed (stream.Encoding)
                        shutil.copyfile(done, p)
                    elif isinstance(df, pl.LazyFrame):  # spooled by the streaming path
                        df.sink_parquet(p)
                    else:
                        df.write_parquet(p)
            with output.file("study.json") as p:
                Path(p).write_text(text, encoding="utf-8")
            return [Path(p) for p in output.commit()]

    def summary(self) -> str:
        """A short text: flows per class, the seed tables' headline values, the notes."""
        from hsrtcp.study.summary import render

        return render(self)


def study(results: str | os.PathLike | Iterable[str | os.PathLike], by: Iterable[str] | str = (), *,
          min_flows: int = 1, bootstrap: int = 1000, seed: int = 0, level: float = LEVEL, stream: bool = False,
          scheduler: str | None = None, progress: bool | None = None, spool_dir: str | None = None,
          processes: bool = False, write_ahead: bool = False) -> Study:
    """Build the study tables from results directories (one path or many, read as one).

    ``by``: extra dimensions (column names of flows, context, labels, or ``workload``;
    a comma-separated string works too). ``min_flows``: cells with fewer contributing flows
    give null values and a note (default 1: every cell with a flow has its value; intervals
    need :data:`hsrtcp.study.stats.MIN_INTERVAL_FLOWS` flows in any case). ``bootstrap``: resamples per interval (0 = no intervals);
    ``seed`` makes them reproducible. Raises :class:`hsrtcp.errors.InputError` for missing
    or old tables, ``ValueError`` for an unknown ``by`` name or a bad option.

    ``stream``: read one partition (results directory) at a time in bounded memory
    (:mod:`.stream`, docs/study.md "At field scale"): the same tables, ``study_flows`` and
    ``throughput_samples`` as lazy frames over spooled files; a partition that cannot be
    read is skipped with a row of the ``failures`` table instead of an error. ``scheduler``:
    a Dask scheduler's address for the per-partition part (streaming only). ``processes``:
    read the partitions of a large study in worker processes, one per core (streaming
    only; the calling script must guard its main, ``if __name__ == "__main__":``).
    ``write_ahead``: the per-flow tables encoded while the others are computed, for a
    caller that will :meth:`Study.write` the study (streaming only).
    """
    if isinstance(by, str):
        by = [b for b in by.split(",") if b.strip()]
    if isinstance(results, (str, os.PathLike)):
        results = [results]
    results = [os.fspath(r) for r in results]
    if min_flows < 1:
        raise ValueError("min_flows must be at least 1")
    if bootstrap < 0:
        raise ValueError("bootstrap must be 0 (no intervals) or more")
    if not 0.0 < level < 1.0:
        raise ValueError("level must be between 0 and 1")
    if stream:
        from hsrtcp.study import stream as streaming

        return streaming.study(results, list(by), min_flows=min_flows, bootstrap=bootstrap, seed=seed, level=level,
                               scheduler=scheduler, progress=progress, spool_dir=spool_dir, processes=processes,
                               write_ahead=write_ahead)
    res = load.read(results)
    notes = list(res.notes)
    frame, tput, tnotes = flow_frame(res, list(by))
    notes += tnotes
    frame, dims, bnotes = groups.resolve_by(frame, list(by), available=_dimension_names(frame, res))
    notes += bnotes
    if res.context is None:
        notes.append("no results directory had context: every flow is classed 'unknown' and the per-class "
                     "tables have only the 'unknown' and 'all' groups with data")
    if res.suspensions is None:
        notes.append("no suspensions table (needs a radio log): M24 is not reported")
    elif res.suspensions["suspension_s"].null_count():
        why = (res.suspensions.filter(pl.col("suspension_s").is_null())["reason"].drop_nulls().unique().to_list()
               if "reason" in res.suspensions.columns else [])
        notes.append(f"{res.suspensions['suspension_s'].null_count()} suspensions without a value"
                     + (f" ({'; '.join(why)})" if why else ""))
    if res.handoffs is None:
        notes.append("no handoffs table (needs a radio log): M23 is not reported")
    if res.coverage is None:
        notes.append("no coverage table (needs a radio log): M28 is not reported")
    o = tables.Options(by=tuple(dims), min_flows=min_flows, n_boot=bootstrap, seed=seed, level=level)
    exploded = groups.explode_classes(frame)
    out = {
        "classes": tables.classes(exploded, o),
        "u_rate": tables.u_rate(exploded, o),
        "performance": tables.performance(exploded, o),
        "spurious_rto": tables.spurious_rto(exploded, o),
        "dupack": tables.dupack(exploded, o),
        "handshake": tables.handshake(exploded, o),
        "failure": tables.failure(exploded, o),
        "timeout_recovery": tables.timeout_recovery(exploded, o),
        "suspensions": tables.suspensions(exploded, o),
        "handoff_intervals": tables.handoff_intervals(_handoffs(res, dims), o),
        "coverage": tables.coverage(res.coverage),
        "throughput_samples": tput.join(frame.select(groups.row_columns(dims)), on=["result", "flow_id"], how="left")
        .select(*groups.row_columns(dims), *samples.SAMPLE_COLUMNS),
        "study_flows": frame.drop([c for c in (*samples.LIST_COLUMNS, "failed_value") if c in frame.columns]),
    }
    return Study(out, notes, o, results)


def flow_frame(res: load.Results, by: list[str]) -> tuple[pl.DataFrame, pl.DataFrame, list[str]]:
    """One row per connection with every value the tables use (the list columns too), the
    1-s throughput samples, and the notes on the series; ``by`` brings the flows columns it
    names. The streaming path (:mod:`.stream`) calls it per partition."""
    one = res.one_result
    conns = connections(res.flows, one)
    frame = groups.attach_context(conns, res)
    loss = samples.loss_samples(res, conns)
    tput, tnotes = samples.throughput(res, conns, loss)
    key = ["result", "flow_id"]
    frame = load.join(frame, samples.per_flow_throughput(tput, loss, one), key, "left", one)
    frame = load.join(frame, samples.timeout_phases(res, conns), key, "left", one)
    frame = load.join(frame, samples.suspensions(res, conns), key, "left", one)
    frame = frame.with_columns(_failed(frame.columns).alias("failed"))
    frame = frame.with_columns(pl.col("failed").cast(pl.Float64).alias("failed_value"))
    frame = groups.flows_dimensions(frame, res.flows, list(by))
    return frame, tput, tnotes


def _dimension_names(frame: pl.DataFrame, res: load.Results) -> list[str]:
    """What --by accepts: flows, context and labels columns, ``result`` and ``workload``."""
    names = set(res.flow_names or res.flows.columns) | {"result", "workload"}
    for t in (res.context, res.labels):
        if t is not None:
            names |= {c for c in frame.columns if c in t.columns or c.startswith(("labels.", "context."))}
    return sorted(names - {"flow_class"})


def _failed(columns: list[str]) -> pl.Expr:
    """M20 per flow (A11): with the object size known (labels.flow_size_bytes), failed iff
    the phone acknowledged fewer bytes than the object; otherwise the engine's
    ``interrupted`` (RST, FIN or 60 s of silence before all data was acknowledged; null
    while the connection is open at the end of the capture)."""
    size = (pl.col("flow_size_bytes").cast(pl.Float64, strict=False) if "flow_size_bytes" in columns
            else pl.lit(None, dtype=pl.Float64))
    return (pl.when(size.is_not_null() & pl.col("acked_bytes").is_not_null())
            .then(pl.col("acked_bytes").cast(pl.Float64) < size)
            .otherwise(pl.col("interrupted")))


def _handoffs(res: load.Results, dims: list[str]) -> pl.DataFrame | None:
    """The handoffs with the labels of their run (by run_id) and the ``--by`` columns they
    can have; a dimension the handoffs cannot carry (a flows column) is null."""
    h = res.handoffs
    if h is None:
        return None
    if res.labels is not None and "run_id" in h.columns:
        labels = res.labels.rename({c: f"labels.{c}" for c in res.labels.columns
                                    if c in h.columns and c not in ("result", "run_id")})
        labels = labels.with_columns(pl.col("run_id").cast(h.schema["run_id"], strict=False))
        h = h.join(labels, on=["result", "run_id"], how="left")
    missing = [d for d in dims if d not in h.columns]
    return h.with_columns([pl.lit(None, dtype=pl.String).alias(d) for d in missing])


class _CallableModule(types.ModuleType):
    """``hsrtcp.study(...)`` calls :func:`study` while ``hsrtcp.study.tables`` etc. stay
    the package's modules (the package and the function share the name the issue gives)."""

    def __call__(self, *args, **kwargs) -> Study:
        return study(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
