"""Comparing results directories table by table, row for row."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from polars.testing import assert_frame_equal


def tables(d: Path) -> dict[str, pl.DataFrame]:
    return {p.stem: pl.read_parquet(p) for p in sorted(Path(d).glob("*.parquet"))}


def assert_same_results(a: Path, b: Path, ignore: tuple[str, ...] = ()) -> int:
    """Every table of ``a`` equals ``b``'s, row for row (but the tables in ``ignore``, which
    must exist in both); returns the rows compared."""
    ta, tb = tables(a), tables(b)
    assert sorted(ta) == sorted(tb), (a, b)
    rows = 0
    for name in ta:
        if name in ignore:
            continue
        assert_frame_equal(ta[name], tb[name], check_exact=True), name
        rows += ta[name].height
    return rows


def partitions(results: Path) -> dict[str, Path]:
    return {p.name.split("=", 1)[1]: p for p in sorted(Path(results).glob("input=*"))}
