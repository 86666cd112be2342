"""The seeds' own numbers that docs/seeds.md prints beside the lab's come from the registry
(hsrtcp.figures.items): every anchor an item cites is a row of docs/metrics.md's table of the
seeds' numbers, and seed 000 Tables VII-IX's 3G and 4G rows are that table's numbers."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from hsrtcp.figures.items import ITEMS, T7, T8, T9

ROOT = Path(__file__).resolve().parents[3]
#: an anchor as the registry cites it: T0-40, or T0-40/41 for two rows of one seed
ANCHOR = re.compile(r"\bT(\d)-(\d\d)((?:/\d\d)*)")


def _metrics_rows() -> dict[str, str]:
    """docs/metrics.md's seed numbers: anchor -> the row's value cell."""
    rows = {}
    for line in (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\| (T\d-\d\d) \| [^|]* \| ([^|]*) \|", line)
        if m:
            rows[m.group(1)] = m.group(2)
    return rows


def test_every_cited_anchor_is_a_row_of_metrics_md():
    rows = _metrics_rows()
    cited: dict[str, list[str]] = {}
    for item in ITEMS:
        for m in ANCHOR.finditer(item.seed_numbers):
            for nn in (m.group(2), *m.group(3).split("/")[1:]):
                cited.setdefault(f"T{m.group(1)}-{nn}", []).append(item.id)
    assert len(cited) >= 20 and len(rows) >= 50
    assert {a: ids for a, ids in cited.items() if a not in rows} == {}


@pytest.mark.parametrize(("table", "metrics", "anchors"), [
    (T7, ("spurious_rto_rate",), ("T0-40", "T0-41")),
    (T8, ("rtoei_share", "ackl_share"), ("T0-42", "T0-43")),   # the rows give RTOEI / ACKL per class
    (T9, ("dupack_rate",), ("T0-44", "T0-45")),
])
def test_seed000_tables_vii_to_ix_are_the_numbers_of_metrics_md(table, metrics, anchors):
    rows = _metrics_rows()
    for generation, anchor in zip(("3G", "4G"), anchors):
        want = [float(x) for x in re.findall(r"\d+(?:\.\d+)?", rows[anchor])]
        got = [100 * table[m][generation][c] for c in ("static", "high_0", "high_1_16") for m in metrics]
        assert np.allclose(got, want, rtol=0, atol=1e-9), (anchor, got, want)
