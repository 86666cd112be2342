"""What an item's maker returns (:class:`Made`), the kinds of what it still misses
(:class:`Gap`) and how a table is written as Markdown."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl


#: a gap is *data*-limited when the inputs lack it (no 3G flow, no flow of a class, the
#: seed's own traces): the tool would make it from data a user could give; a *tool* gap is
#: one the tool cannot make even from such data
KINDS = ("data", "tool")


class Gap(str):
    """One line of what an item still misses, with its kind (:data:`KINDS`)."""

    kind: str

    def __new__(cls, text: str, kind: str) -> Gap:
        if kind not in KINDS:
            raise ValueError(f"gap kind {kind!r}: not one of {', '.join(KINDS)}")
        g = super().__new__(cls, text)
        g.kind = kind
        return g


def data_gap(text: str) -> Gap:
    return Gap(text, "data")


def tool_gap(text: str) -> Gap:
    return Gap(text, "tool")


def kind_of(gap: str) -> str:
    """A gap's kind; a plain string (a maker that did not sort its line: the tests refuse
    one) is shown as data."""
    return gap.kind if isinstance(gap, Gap) else "data"


@dataclass
class Made:
    data: pl.DataFrame                       # what is drawn or tabulated (written as CSV)
    figure: object | None = None             # a matplotlib Figure, or None for a table
    markdown: str | None = None              # a table's text
    lab: list[str] = field(default_factory=list)   # the lab's numbers, one line each
    gaps: list[Gap] = field(default_factory=list)  # what the whole item would still need


def markdown(df: pl.DataFrame) -> str:
    def cell(v):
        if v is None:
            return "–"
        if isinstance(v, float):
            return f"{v:.4g}"
        return str(v)
    head = "| " + " | ".join(df.columns) + " |\n|" + "---|" * len(df.columns) + "\n"
    return head + "\n".join("| " + " | ".join(cell(v) for v in r) + " |" for r in df.iter_rows()) + "\n"
