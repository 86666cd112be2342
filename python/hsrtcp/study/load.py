"""Read one or many results directories (the ``-o`` of ``hsrtcp analyze``) as one.

A study pools flows from many runs: each directory's tables get a ``result`` column (the
directory as given) and are stacked; ``flow_id`` is unique only within a directory, so
``(result, flow_id)`` is the key everywhere in the study. The small per-flow tables (flows,
context, labels, handoffs, suspensions, coverage) are read whole; the large ones (series,
events) stay lazy scans that the tables filter and project before anything is read.

Which tables must be there:

- ``flows``, ``series``, ``events`` (docs/formats/): every ``hsrtcp analyze`` writes them;
  a missing one, one without the columns the study reads (an older schema), or one the
  results reader refuses (:mod:`hsrtcp.results`: a damaged file, a column of another type)
  is an input error naming the file (exit 3).
- ``context``, ``labels``, ``handoffs``, ``suspensions``, ``coverage``
  (docs/formats/<table>.md; docs/formats/study.md lists the columns read): written when the analysis had a radio log. Without
  ``context`` every flow of that directory is classed ``unknown`` with the reason, and the
  study says so in its notes; it never fails for it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from hsrtcp.errors import InputError
from hsrtcp.results import ResultsDir, Tables, optional_tables, partitions

#: columns the study reads from each table; a table without them is from an older schema
REQUIRED_COLUMNS: dict[str, tuple[str, ...]] = {
    "flows": ("flow_id", "capture", "vantage", "data_dir", "first_ts", "last_ts", "rtt_mean",
              "spurious_rto_rate", "dupack_rate", "establishment_s", "closure_s", "interrupted",
              "goodput_bytes", "timeout_duration_mean", "timeout_sequences"),
    "series": ("flow_id", "bin", "t_rel", "bytes"),
    "events": ("flow_id", "kind", "class", "ts", "duration_s"),
    "context": ("flow_id", "flow_class"),
    "labels": ("run_id",),
    "handoffs": ("carrier", "ts", "interval_s"),
    "suspensions": ("flow_id", "handoff_ts", "suspension_s"),
    "coverage": ("carrier", "lte_s", "total_s", "lte_coverage"),
}
CORE_TABLES = ("flows", "series", "events")
CONTEXT_TABLES = ("context", "labels", "handoffs", "suspensions", "coverage")


@dataclass(kw_only=True)
class Results(Tables):
    """The tables of one or many results directories, stacked, with a ``result`` column
    (``notes``: the study prints and stores them)."""

    dirs: list[str]
    #: directories that had a context table
    with_context: list[str] = field(default_factory=list)
    #: every column of the flows files (``flows`` may hold only the columns asked for)
    flow_names: list[str] = field(default_factory=list)
    #: every row from one results directory (the streamed study's partition, :func:`join`)
    one_result: bool = False


def join(left, right, on: list[str], how: str, one_result: bool):
    """``left.join(right, on=on, how=how)`` (frames or lazy frames). With ``one_result``
    (both hold the rows of one results directory) without the constant ``result`` key,
    which polars hashes with every row: a partition's left joins take about half the CPU.
    Only for joins whose rows come in the left's order (left, anti): the same frame."""
    if one_result and on[0] == "result" and len(on) > 1:
        return left.join(right.drop("result"), on=on[1:], how=how)
    return left.join(right, on=on, how=how)


def read(dirs: list[str | os.PathLike] | str | os.PathLike, flow_columns=None) -> Results:
    """Read results directories; raises :class:`hsrtcp.errors.InputError` (naming the
    directory or file) for a missing directory, a missing core table or an old schema.
    ``flow_columns``: read only these flows columns (those present) besides the required ones."""
    if isinstance(dirs, (str, os.PathLike)):
        dirs = [dirs]
    if not dirs:
        raise InputError("no results directory given")
    names = [p for d in dirs for p in partitions(d)]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise InputError(f"results directory given twice: {', '.join(dup)}")
    eager: dict[str, list[pl.DataFrame]] = {t: [] for t in ("flows", *CONTEXT_TABLES)}
    lazy: dict[str, list[pl.LazyFrame]] = {"series": [], "events": []}
    notes: list[str] = []
    with_context: list[str] = []
    flow_names: list[str] = []
    for name in names:
        d = Path(name)
        if not d.is_dir():
            raise InputError(f"{d}: no such results directory")
        for table in CORE_TABLES:
            if not (d / f"{table}.parquet").is_file():
                raise InputError(f"{d}: not a complete hsrtcp results directory: {table}.parquet is missing "
                                 f"(write it with hsrtcp analyze ... -o {d})")
        res = ResultsDir(d)  # checks each table against its versioned schema (hsrtcp.results)
        tag = pl.lit(name).alias("result")
        for table in CORE_TABLES:
            res.require(table, REQUIRED_COLUMNS[table])
            if table == "flows":
                flow_names.extend(c for c in res.schema("flows").names() if c not in flow_names)
                cols = None if flow_columns is None else REQUIRED_COLUMNS["flows"]
                eager["flows"].append(res.read("flows", cols, optional=flow_columns or ()).with_columns(tag))
            else:
                lazy[table].append(res.scan(table).with_columns(tag))
        for table, frame in optional_tables(res, {t: REQUIRED_COLUMNS[t] for t in CONTEXT_TABLES}).items():
            eager[table].append(frame.with_columns(tag))
        if res.has("context"):
            with_context.append(name)
        else:
            notes.append(f"{d}: no context.parquet (analyzed without a radio log): its flows are "
                         f"classed 'unknown'; analyze with --radio (or a bundle with radio.csv) to class them")
    stacked = {t: (pl.concat(fs, how="diagonal_relaxed") if fs else None) for t, fs in eager.items()}
    return Results(dirs=names, flows=stacked["flows"],
                   series=pl.concat(lazy["series"], how="diagonal_relaxed"),
                   events=pl.concat(lazy["events"], how="diagonal_relaxed"),
                   context=stacked["context"], labels=stacked["labels"], handoffs=stacked["handoffs"],
                   suspensions=stacked["suspensions"], coverage=stacked["coverage"],
                   notes=notes, with_context=with_context, flow_names=flow_names)


#: a corpus results directory as its partitions (docs/scale.md); kept under its former name
corpus_partitions = partitions
