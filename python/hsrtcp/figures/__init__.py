"""The seeds' numbered tables and figures from a study (``hsrtcp figures STUDY [RESULTS...] -o DIR``).

:func:`build` runs every item of the registry (:mod:`hsrtcp.figures.items`) on the inputs
and :meth:`Gallery.write` writes what was made — ``<item>.md`` and ``<item>.csv`` for a
table, ``<item>.pdf`` and ``<item>.csv`` (the data drawn) for a figure —, ``coverage.md``
(every item: made, partly, not made or a drawing of a method, and exactly which input or
column is missing) and ``seeds.md`` (the seeds' numbers beside the lab's, item by item).
docs/figures.md explains it; docs/seeds.md is ``seeds.md`` of the committed lab campaign.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from hsrtcp.figures.inputs import Inputs, Missing
from hsrtcp.figures.items import ITEMS, Item, Made
from hsrtcp.figures.made import KINDS, Gap, kind_of

__all__ = ["Gallery", "Outcome", "build", "refuse_out", "MANIFEST"]

MANIFEST = "hsrtcp-manifest.figures.txt"
STATUSES = ("made", "partly", "not made", "drawing")


@dataclass
class Outcome:
    item: Item
    status: str                 # one of STATUSES
    made: Made | None = None
    missing: str | None = None  # for "not made" (a Gap), and the reason of a drawing

    def gaps(self) -> list[Gap]:
        """What a partly made or not made item misses, each line with its kind."""
        if self.status == "not made":
            return [self.missing]
        if self.status == "partly" and self.made is not None:
            return list(self.made.gaps)
        return []

    def files(self) -> list[str]:
        if self.made is None:
            return []
        if self.item.is_figure and self.made.figure is not None:
            return [f"{self.item.id}.pdf", f"{self.item.id}.csv"]
        return [f"{self.item.id}.md", f"{self.item.id}.csv"]


class Gallery:
    def __init__(self, inputs: Inputs, outcomes: list[Outcome]) -> None:
        self.inputs = inputs
        self.outcomes = outcomes

    def counts(self) -> dict[str, int]:
        return {s: sum(o.status == s for o in self.outcomes) for s in STATUSES}

    def gap_counts(self) -> dict[str, int]:
        """Missing lines of the partly and not made items per kind (:func:`kind_of`)."""
        gaps = [g for o in self.outcomes for g in o.gaps()]
        return {k: sum(kind_of(g) == k for g in gaps) for k in KINDS}

    def coverage(self) -> str:
        from hsrtcp.figures.render import coverage

        return coverage(self)

    def seeds(self) -> str:
        from hsrtcp.figures.render import seeds

        return seeds(self)

    def write(self, out_dir: str | os.PathLike) -> list[Path]:
        """Every file at once (:class:`hsrtcp.output.OutputSet`, listed in
        ``hsrtcp-manifest.figures.txt``); an :class:`hsrtcp.errors.OutputError` names the path."""
        from hsrtcp.errors import OutputError
        from hsrtcp.output import OutputSet
        from hsrtcp.plot import style

        problem = refuse_out(out_dir, self.inputs)
        if problem:
            raise OutputError(problem)
        with OutputSet(out_dir, manifest=MANIFEST, replaces=frozenset()) as output:
            for o in self.outcomes:
                if o.made is None:
                    continue
                for name in o.files():
                    with output.file(name) as p:
                        if name.endswith(".pdf"):
                            style.save(o.made.figure, p)
                        elif name.endswith(".csv"):
                            o.made.data.write_csv(p)
                        else:
                            Path(p).write_text(f"# {o.item.id}: {o.item.title}\n\n{o.made.markdown}", encoding="utf-8")
            for name, text in (("coverage.md", self.coverage()), ("seeds.md", self.seeds())):
                with output.file(name) as p:
                    Path(p).write_text(text, encoding="utf-8")
            return [Path(p) for p in output.commit()]


def refuse_out(out_dir: str | os.PathLike, inputs: Inputs) -> str | None:
    """Why ``out_dir`` cannot take a gallery: it is the study or a results directory read,
    or any directory of hsrtcp tables (a gallery never writes among the tables it reads)."""
    from hsrtcp.output import shown

    d = os.fspath(out_dir)
    if not os.path.isdir(d):
        return None
    for r in [inputs.study_dir, *inputs.results_dirs, *inputs.mptcp_dirs]:
        try:
            if os.path.samefile(r, d):
                return f"{shown(d)}: is a directory the gallery reads: choose another directory"
        except OSError:
            pass
    for mark in ("study.json", "flows.parquet", "hsrtcp-manifest.txt", "mptcp_instances.parquet"):
        if os.path.isfile(os.path.join(d, mark)):
            return f"{shown(d)}: holds hsrtcp tables ({mark}): choose another directory for the gallery"
    return None


def build(study_dir: str | os.PathLike, results: list[str | os.PathLike] = (), only: list[str] | None = None) -> Gallery:
    """Run every item (or the ids in ``only``) on a study directory and optional results
    directories. Raises :class:`hsrtcp.errors.InputError` for a study directory that is not
    one or a table that cannot be read; ``ValueError`` for an unknown id in ``only``."""
    inputs = Inputs(study_dir, list(results))
    items = ITEMS
    if only:
        known = {i.id for i in ITEMS}
        unknown = [x for x in only if x not in known]
        if unknown:
            raise ValueError(f"unknown item {', '.join(unknown)} (hsrtcp figures --list names them)")
        items = tuple(i for i in ITEMS if i.id in only)
    outcomes = []
    for item in items:
        if item.diagram is not None:
            outcomes.append(Outcome(item, "drawing", missing=item.diagram))
            continue
        try:
            made = item.make(inputs)
        except Missing as m:
            outcomes.append(Outcome(item, "not made", missing=Gap(m.reason, m.kind)))
            continue
        outcomes.append(Outcome(item, "partly" if made.gaps else "made", made=made))
    return Gallery(inputs, outcomes)
