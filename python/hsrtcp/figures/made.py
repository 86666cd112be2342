"""What an item's maker returns (:class:`Made`) and how a table is written as Markdown."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl


@dataclass
class Made:
    data: pl.DataFrame                       # what is drawn or tabulated (written as CSV)
    figure: object | None = None             # a matplotlib Figure, or None for a table
    markdown: str | None = None              # a table's text
    lab: list[str] = field(default_factory=list)   # the lab's numbers, one line each
    gaps: list[str] = field(default_factory=list)  # what the whole item would still need


def markdown(df: pl.DataFrame) -> str:
    def cell(v):
        if v is None:
            return "–"
        if isinstance(v, float):
            return f"{v:.4g}"
        return str(v)
    head = "| " + " | ".join(df.columns) + " |\n|" + "---|" * len(df.columns) + "\n"
    return head + "\n".join("| " + " | ".join(cell(v) for v in r) + " |" for r in df.iter_rows()) + "\n"
