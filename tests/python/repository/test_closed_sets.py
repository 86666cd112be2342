"""The closed sets of strings the engine writes, declared once in hsrtcp.schemas (issue 37):
vantages, event kinds, retransmission classes and spurious-timeout detection methods. The
engine itself is the witness: every value it writes on the fixtures is declared, and the
docs/formats pages list the declared ones."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from hsrtcp.cli import main
from hsrtcp.cli.analyze_options import OPTIONS
from hsrtcp.schemas import CLIENT, EVENT_KINDS, MATCHED, RETRANS_CLASSES, SERVER, SPURIOUS_METHODS, VANTAGES

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
FORMATS = ROOT / "docs" / "formats"
# two-vantage pairs whose flows cover every vantage, retransmission class and most kinds
PAIRS = sorted(p for p in DATA.glob("*.client.pcap") if (DATA / p.name.replace(".client.", ".server.")).exists())


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict[str, set]:
    out = tmp_path_factory.mktemp("closed")
    args = ["analyze", "-q", "--packets", "-o", str(out)]
    for c in PAIRS:
        args += ["--client", str(c), "--server", str(DATA / c.name.replace(".client.", ".server."))]
    assert main(args) == 0
    ev = pl.read_parquet(out / "events.parquet", columns=["kind", "class"])
    return {
        "vantage": set(pl.read_parquet(out / "flows.parquet", columns=["vantage"])["vantage"].drop_nulls()),
        "kind": set(ev["kind"]),
        "retrans": set(ev.filter(pl.col("kind") == "retransmission")["class"].drop_nulls())
        | set(pl.read_parquet(out / "packets.parquet", columns=["retrans"])["retrans"].drop_nulls()),
        "spurious": set(ev.filter(pl.col("kind") == "spurious_timeout")["class"].drop_nulls()),
    }


def test_what_the_engine_writes_is_declared(written):
    assert len(PAIRS) >= 10
    assert written["vantage"] == set(VANTAGES)
    assert written["kind"] <= set(EVENT_KINDS) and len(written["kind"]) >= 12
    assert written["retrans"] <= set(RETRANS_CLASSES) and {"fast", "rto", "sack_refill", "tlp"} <= written["retrans"]
    assert written["spurious"] <= set(SPURIOUS_METHODS) and MATCHED != CLIENT != SERVER
    assert {"receiver", "two_vantage"} <= written["spurious"]


def _rows(page: str, heading: str) -> dict[str, str]:
    """First cell -> row of the first table after ``heading`` in a docs/formats page."""
    text = (FORMATS / page).read_text(encoding="utf-8").split(heading, 1)[1]
    rows = {}
    for line in text.split("\n|", 1)[1].splitlines():
        if not line.startswith("|") and rows:
            break
        cells = line.strip("|").split("|")
        if cells and not set(cells[0].strip()) <= set("-"):
            rows[cells[0].strip()] = line
    return rows


def test_the_formats_pages_list_the_declared_sets():
    kinds = _rows("events.md", "## Kinds written by the behaviour engine")
    assert [k for k in kinds if k != "kind"] == list(EVENT_KINDS)
    assert re.findall(r"`(\w+)`", kinds["retransmission"].split("|")[2]) == list(RETRANS_CLASSES)
    methods = set(re.findall(r"`(\w+)`", kinds["spurious_timeout"].split("|")[2]))
    methods |= set(re.findall(r"`(\w+)`", _rows("matched.md", "One `events` row per spurious timeout")["`class`"]))
    assert set(SPURIOUS_METHODS) <= methods


def test_the_cli_vantages_are_the_capture_sides():
    (vantage,) = [o for o in OPTIONS if o.name == "vantage"]
    assert vantage.choices == (CLIENT, SERVER)


def test_the_default_bin_length_is_written_once():
    """series rows without ``bin_s`` (version 1 files) count as SERIES_BIN_S long: the plots,
    the study and the MPTCP metrics each wrote their own 1.0 (or np.ones) beside ``bin_s``."""
    package = ROOT / "python" / "hsrtcp"
    found = [f"{p.relative_to(package)}:{i}" for p in sorted(package.rglob("*.py")) if p.name != "schemas.py"
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if "bin_s" in line and re.search(r"fill_null\(1\.0\)|lit\(1\.0\)|else 1\.0\b|np\.ones\(", line)]
    assert found == []
