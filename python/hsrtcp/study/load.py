"""Read one or many results directories (the ``-o`` of ``hsrtcp analyze``) as one.

A study pools flows from many runs: each directory's tables get a ``result`` column (the
directory as given) and are stacked (:class:`hsrtcp.results.Corpus`, the one reader);
``flow_id`` is unique only within a directory, so ``(result, flow_id)`` is the key
everywhere in the study. The small per-flow tables (flows,
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

from hsrtcp.results import Corpus, Tables, partitions

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
    #: the directories as read (each one's tables: ``stack.parts``)
    stack: Corpus | None = None


def join(left, right, on: list[str], how: str, one_result: bool):
    """``left.join(right, on=on, how=how)`` (frames or lazy frames). With ``one_result``
    (both hold the rows of one results directory) without the constant ``result`` key,
    which polars hashes with every row: a partition's left joins take about half the CPU.
    Only for joins whose rows come in the left's order (left, anti): the same frame."""
    if one_result and on[0] == "result" and len(on) > 1:
        return left.join(right.drop("result"), on=on[1:], how=how)
    return left.join(right, on=on, how=how)


def read(dirs: list[str | os.PathLike] | str | os.PathLike, flow_columns=None) -> Results:
    """Read results directories as one (:class:`hsrtcp.results.Corpus`, rows tagged
    ``result``); raises :class:`hsrtcp.errors.InputError` (naming the directory or file) for
    a missing directory, a missing core table or an old schema, each directory checked
    whole in the order given. ``flow_columns``: read only these flows columns (those
    present) besides the required ones."""
    if isinstance(dirs, (str, os.PathLike)):
        dirs = [dirs]
    stack = Corpus(parts=dirs, tag="result")
    notes: list[str] = []
    with_context: list[str] = []
    for name, res in stack.parts.items():
        res.complete(CORE_TABLES)
        for table in CORE_TABLES:
            res.require(table, REQUIRED_COLUMNS[table])
        for table in CONTEXT_TABLES:
            if res.has(table):
                res.require(table, REQUIRED_COLUMNS[table])
        if res.has("context"):
            with_context.append(name)
        else:
            notes.append(f"{Path(name)}: no context.parquet (analyzed without a radio log): its flows are "
                         f"classed 'unknown'; analyze with --radio (or a bundle with radio.csv) to class them")
    flow_names = list(dict.fromkeys(c for res in stack.parts.values() for c in res.schema("flows").names()))
    cols = None if flow_columns is None else REQUIRED_COLUMNS["flows"]
    return Results(dirs=list(stack.parts), flows=stack.read("flows", cols, optional=flow_columns or ()),
                   series=stack.scan("series"), events=stack.scan("events"),
                   **{t: stack.read(t) if stack.has(t) else None for t in CONTEXT_TABLES},
                   notes=notes, with_context=with_context, flow_names=flow_names, stack=stack)


#: a corpus results directory as its partitions (docs/scale.md); kept under its former name
corpus_partitions = partitions
