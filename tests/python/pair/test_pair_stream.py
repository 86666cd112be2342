"""The two-vantage path streams from Rust to Parquet (issue 19) and writes the same tables as
the in-memory polars path it replaced, row for row.

Witness: :mod:`reference` (next to this file), the previous implementation that joined the
matcher's raw rows with the single-capture flows in polars. Inputs: every real-kernel
fixture pair of tests/data (README there), one run bundle layout with two phone paths
sharing a server capture, pairs mixed with single captures, and a pair whose client
capture is cut (a read error: the partial tables, the error in ``captures``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from hsrtcp.pair import analyze_pairs, analyze_pairs_to
from hsrtcp.runner import MPTCP_TABLES

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reference import reference_tables  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "data"
PAIRS = sorted(p.name.removesuffix(".client.pcap") for p in DATA.glob("*.client.pcap")
               if (DATA / p.name.replace(".client.", ".server.")).exists())
TABLES = ("flows", "events", "rtt", "series", "captures", "pair_stats")


def _pair(name):
    return DATA / f"{name}.client.pcap", DATA / f"{name}.server.pcap"


def _same(expected: dict, files: dict, where: str) -> None:
    """Every table equal, row for row. Streaming writes events and rtt of one capture in
    chunks as flows hand them on (docs: hsrtcp.analyze_to); grouped by flow they are the
    reference's rows in the reference's order (a stable sort)."""
    for t in TABLES:
        got = files[t]
        if t in ("events", "rtt"):
            got = got.sort("flow_id", maintain_order=True)
        # pair_stats: the reference typed an all-null column (no read error) as polars' Null;
        # the streamed table declares it (string, float): the values must still agree.
        try:
            assert_frame_equal(expected[t], got, check_dtypes=t != "pair_stats")
        except AssertionError as exc:
            raise AssertionError(f"{where}: table {t}: {exc}") from None


def _written(out: Path) -> dict:
    return {t: pl.read_parquet(out / f"{t}.parquet") for t in TABLES}


def test_fixture_pairs_are_many():
    assert len(PAIRS) >= 16, PAIRS


@pytest.mark.parametrize("name", PAIRS)
def test_streamed_pair_equals_in_memory_reference(name, tmp_path):
    c, s = _pair(name)
    expected = reference_tables([(c, s)])
    w = analyze_pairs_to([(c, s)], tmp_path / "out", workers=2)
    # every run also writes the MPTCP tables (empty without MPTCP: docs/formats/mptcp.md)
    assert sorted(Path(f).name for f in w.files) == sorted(f"{t}.parquet" for t in TABLES + MPTCP_TABLES)
    _same(expected, _written(tmp_path / "out"), name)
    # The in-memory API is the same path read back.
    ds = analyze_pairs([(c, s)])
    _same(expected, {**ds.tables(), "pair_stats": ds.extra["pair_stats"]}, f"{name} (Dataset)")
    assert (expected["flows"]["vantage"] == "matched").sum() >= 1


def test_shared_server_capture_and_singles(tmp_path):
    """Two phone paths with one server capture (the MPTCP bundle layout) plus two single
    captures: each file analyzed once, a connection paired in one path's run is not
    "server only" in the other's, the singles' rows between the files' and the matched ones."""
    a, b = _pair("multi_concurrent"), _pair("clean_200k")
    pairs = [(a[0], a[1]), (b[0], a[1])]
    singles = [DATA / "nano.server.pcap", DATA / "sll1.client.pcap"]
    expected = reference_tables(pairs, singles=singles, single_vantage=["server", None])
    analyze_pairs_to(pairs, tmp_path / "out", singles=singles, single_vantage=["server", None], workers=2,
                     keep_flows=True)
    got = _written(tmp_path / "out")
    _same(expected, got, "shared server")
    m = got["flows"].filter(pl.col("vantage") == "matched")
    assert set(m["pairing"]) >= {"isn", "client_only"}, m["pairing"].to_list()


def test_one_worker_and_kept_flows(tmp_path):
    c, s = _pair("drops_cubic")
    w = analyze_pairs_to([(c, s)], tmp_path / "out", workers=1, keep_flows=True)
    got = _written(tmp_path / "out")
    _same(reference_tables([(c, s)]), got, "one worker")
    # the rows kept for the summary are the flows table's rows
    assert [r["flow_id"] for r in w.flows] == got["flows"]["flow_id"].to_list()
    assert [r["vantage"] for r in w.flows] == got["flows"]["vantage"].to_list()


def test_cut_client_capture_keeps_partial_tables(tmp_path):
    c, s = _pair("drops_cubic")
    cut = tmp_path / "cut.client.pcap"
    data = c.read_bytes()
    cut.write_bytes(data[: len(data) * 2 // 3 + 7])  # inside a record
    w = analyze_pairs_to([(cut, s)], tmp_path / "out", workers=2)
    assert len(w.errors) == 1 and "cut.client.pcap" in w.errors[0], w.errors
    _same(reference_tables([(cut, s)]), _written(tmp_path / "out"), "cut client")


def test_cli_pair_run_streams_and_matches_reference(tmp_path):
    """The exact command of the README for two vantages writes the reference's tables."""
    c, s = _pair("ack_blackout")
    out = tmp_path / "res"
    root = Path(__file__).resolve().parents[3]
    p = subprocess.run([sys.executable, "-m", "hsrtcp", "analyze", "-q", "--client", str(c), "--server", str(s),
                        "-o", str(out)], capture_output=True, text=True, cwd=root)
    assert p.returncode == 0, p.stderr
    _same(reference_tables([(c, s)]), _written(out), "cli")
    shutil.rmtree(out)
