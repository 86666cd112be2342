"""Issue 31: the study's text (the summary `hsrtcp study` prints, and its tables as the report
renders them) has no exponent notation: hand-made establishment and closure times printed
"1.3e+03 [1.16e+03, 1.42e+03]" ms."""

from __future__ import annotations

import re

import polars as pl

import hsrtcp
from hsrtcp.report.build import html_table

from .test_tables import _results

EXPONENT = re.compile(r"\d[eE][+-]?\d")


def test_no_exponent_in_study_summary_or_tables(tmp_path):
    s = hsrtcp.study(_results(tmp_path / "r"), min_flows=1, bootstrap=50, seed=1)
    text = s.summary()
    assert not EXPONENT.search(text), [line for line in text.splitlines() if EXPONENT.search(line)]
    # closure (M19): flows 11-15 close in 11..15 s, mean 13 s: in s, not "13000" in a row fixed to ms
    line = next(line for line in text.splitlines() if line.lstrip().startswith("closure (M19):"))
    assert line.split(": ", 1)[1].split(" | ")[2].startswith("13 s ["), line
    # each value in its own unit (the row was fixed to ms: "0.0665" for 66.5 µs)
    for line in text.splitlines():
        for v, unit in re.findall(r"(\d[\d.]*) (µs|ms|s|bit/s|kbit/s|Mbit/s|Gbit/s)\b", line):
            assert 1 <= float(v) < 1000 or unit in ("s", "bit/s", "Gbit/s"), (v, unit, line)
    for name, df in s.tables.items():
        if isinstance(df, pl.DataFrame) and df.height:
            rendered = html_table(df)
            assert not EXPONENT.search(rendered), name
