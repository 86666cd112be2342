"""`hsrtcp.analyze_to`: the tables written straight to Parquet while the captures are read.

Witness: the in-memory path (`hsrtcp.analyze`, Arrow IPC into polars) on the same captures.
Both run the same engine, so every table must be equal row for row; only the events of
flows may interleave in the files (each flow's own order kept).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

import hsrtcp
from hsrtcp.errors import InputError

DATA = Path(__file__).resolve().parents[2] / "data"
CAPTURES = [DATA / "multi_concurrent.server.pcap", DATA / "drops_cubic.server.pcapng.gz",
            DATA / "ipv6_drops.client.pcap", DATA / "any_sll2.server.pcap"]


def _read(out: Path) -> dict[str, pl.DataFrame]:
    return {t: pl.read_parquet(out / f"{t}.parquet") for t in ("flows", "events", "rtt", "series", "captures")}


@pytest.mark.parametrize("workers", [1, 2])
def test_parquet_tables_equal_the_in_memory_tables(tmp_path, workers):
    ds = hsrtcp.analyze(CAPTURES, workers=workers)
    w = hsrtcp.analyze_to(CAPTURES, tmp_path, workers=workers, keep_flows=True)
    assert sorted(p.name for p in w.paths) == ["captures.parquet", "events.parquet", "flows.parquet",
                                               "mptcp.parquet", "mptcp_series.parquet", "mptcp_subflows.parquet",
                                               "rtt.parquet", "series.parquet"]
    for t in ("mptcp", "mptcp_subflows", "mptcp_series"):  # (no MPTCP in these captures: empty, same schema)
        assert pl.read_parquet(tmp_path / f"{t}.parquet").equals(ds.extra[t]), t
    got = _read(tmp_path)
    # Captures run on parallel threads: rows of different captures may come in any order.
    order = {"flows": ["flow_id"], "series": ["flow_id", "bin"], "captures": ["capture"]}
    for t, keys in order.items():
        assert got[t].sort(keys).equals(ds.tables()[t].sort(keys)), t
    for t in ("events", "rtt"):
        assert got[t].sort("flow_id", maintain_order=True).equals(ds.tables()[t]), t
    assert len(ds.rtt) > 100 and len(ds.events) > 20 and len(ds.flows) > 4
    # The rows handed back for the summary are the flows table itself (the Dataset's flows add
    # the read-time names short_id and connection; the stored rows are tables()["flows"]).
    stored = ds.tables()["flows"]
    assert pl.DataFrame(w.flows, schema=stored.schema).sort("flow_id").equals(stored.sort("flow_id"))
    assert sorted(w.captures, key=lambda c: c["capture"]) == got["captures"].sort("capture").to_dicts()
    assert w.errors == []
    assert not list(tmp_path.glob(".*tmp*"))


def test_rtt_columns_are_required_and_other_tables_nullable(tmp_path):
    """docs/formats/rtt.md: the rtt table's columns are stored without definition levels
    (REQUIRED); every other table keeps nullable columns, whatever its data."""
    import pyarrow.parquet as pq

    hsrtcp.analyze_to(CAPTURES[:1], tmp_path)
    rtt = pq.read_schema(tmp_path / "rtt.parquet")
    assert [f.nullable for f in rtt] == [False] * 5
    meta = pq.ParquetFile(tmp_path / "rtt.parquet").metadata
    assert meta.num_rows > 100
    assert meta.schema.column(0).max_definition_level == 0
    flows = pq.read_schema(tmp_path / "flows.parquet")
    assert all(f.nullable for f in flows)


def test_a_cut_capture_keeps_its_rows_and_names_the_error(tmp_path):
    cut = DATA / "broken" / "record_cut.pcap"
    ds = hsrtcp.analyze([cut])
    w = hsrtcp.analyze_to([cut], tmp_path)
    assert w.flows is None  # not asked for
    assert len(w.errors) == 1 and "record_cut.pcap" in w.errors[0] and "at byte 574" in w.errors[0]
    got = _read(tmp_path)
    assert got["flows"].equals(ds.tables()["flows"]) and len(ds.flows) >= 1
    assert got["flows"]["truncated"].any()
    assert got["captures"]["error"].to_list() == ds.captures["error"].to_list()


def test_meanwhile_runs_while_the_writer_finishes_the_files(tmp_path):
    """``meanwhile`` (the CLI's summary) gets the rows :class:`Written` gives, after the writer
    was told to finish the files: the staged tables become complete Parquet files while it
    runs, before analyze_to closes them (docs/design.md, "Start-up")."""
    import time

    import pyarrow.parquet as pq

    from hsrtcp.output import NEW

    seen = []

    def meanwhile(flows, captures):
        deadline = time.monotonic() + 30  # (a bound for a loaded host, not a speed test)
        while True:
            try:
                rows = pq.ParquetFile(tmp_path / f"{NEW}rtt.parquet").metadata.num_rows
                break
            except (OSError, ValueError):  # not finished: no footer yet
                assert time.monotonic() < deadline, "the writer did not finish the files during meanwhile"
                time.sleep(0.01)
        seen.append((flows, captures, rows))

    w = hsrtcp.analyze_to(CAPTURES[:1], tmp_path, keep_flows=True, meanwhile=meanwhile)
    [(flows, captures, rows)] = seen
    assert flows == w.flows and captures == w.captures and len(flows) > 1
    assert rows == pq.ParquetFile(tmp_path / "rtt.parquet").metadata.num_rows > 100
    assert not list(tmp_path.glob(f"{NEW}*"))



def test_a_failing_summary_keeps_the_committed_tables(tmp_path, monkeypatch, capsys):
    """``hsrtcp analyze`` writes its summary in ``meanwhile``; an error there must not throw
    away a complete run: the tables are committed and the error is reported after the commit,
    as before the overlap (exit 4, internal error)."""
    import hsrtcp.report.summary as summary
    from hsrtcp.cli import main
    from hsrtcp.output import NEW

    def broken(*_args, **_kwargs):
        raise RuntimeError("planted summary failure")

    monkeypatch.setattr(summary, "summary_text", broken)
    out = tmp_path / "out"
    assert main(["analyze", str(CAPTURES[0]), "-o", str(out)]) == 4
    assert "planted summary failure" in capsys.readouterr().err
    assert {"flows.parquet", "rtt.parquet", "captures.parquet"} <= {p.name for p in out.iterdir()}
    assert not list(out.glob(f"{NEW}*"))

def test_missing_capture_and_unwritable_directory_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="nope.pcap: no such file"):
        hsrtcp.analyze_to([tmp_path / "nope.pcap"], tmp_path / "out")
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    with pytest.raises(InputError, match="a_file"):
        hsrtcp.analyze_to(CAPTURES[:1], blocker / "out")


@pytest.mark.parametrize("options", [["-q", "--no-plot"], []], ids=["quiet", "default"])
def test_cli_single_capture_imports_nothing_heavy(tmp_path, options):
    """The quick path of `hsrtcp analyze`: its start-up is part of the bench's figure, and on
    this kind of machine each of these modules costs 10-200 ms to import. The default command
    (the README's, with its printed summary) must stay on it too (issue 18)."""
    heavy = ["polars", "click", "rich", "pathlib", "dataclasses", "typing", "numpy", "matplotlib",
             "csv", "re", "enum"]  # (csv imports re and enum: 6 ms of CPU beside the native threads)
    code = (f"import atexit, sys; atexit.register(lambda: print([m for m in {heavy!r} if m in sys.modules])); "
            "from hsrtcp.cli import main; sys.exit(main(['analyze', sys.argv[1], '-o', sys.argv[2], "
            f"*{options!r}]))")
    p = subprocess.run([sys.executable, "-c", code, str(CAPTURES[0]), str(tmp_path)], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().splitlines()[-1] == "[]"
    if not options:
        assert "TCP connections (3 connections in 3 rows" in p.stdout  # the summary was printed
    assert len(pl.read_parquet(tmp_path / "flows.parquet")) == 3
