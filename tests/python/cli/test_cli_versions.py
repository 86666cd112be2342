"""`hsrtcp query` and the report's packets drill-down check each table file's schema version, as every reader of results does
(hsrtcp.versions, issue 37 item 3): a file written by a newer hsrtcp is refused with a
message naming it (exit 3); the current and older versions query."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from hsrtcp.cli import main
from hsrtcp.results import ResultsDir
from hsrtcp.versions import SCHEMA_KEY, VERSION_KEY, VERSIONS

DATA = Path(__file__).resolve().parents[2] / "data"
CAP = DATA / "multi_concurrent.server.pcap"  # (conftest.py's `results` fixture analyzes it)


def _with_version(src: Path, dst: Path, table: str, version: int) -> Path:
    shutil.copytree(src, dst)
    f = dst / f"{table}.parquet"
    t = pq.read_table(f)
    meta = dict(t.schema.metadata or {})
    meta[SCHEMA_KEY.encode()] = table.encode()
    meta[VERSION_KEY.encode()] = str(version).encode()
    pq.write_table(t.replace_schema_metadata(meta), f)
    return f


@pytest.mark.parametrize("table", ["flows", "events"])
def test_query_refuses_a_newer_schema_version(results, tmp_path, capsys, table):
    newer = VERSIONS[table] + 1
    f = _with_version(results, tmp_path / "newer", table, newer)
    assert main(["query", str(tmp_path / "newer"), f"select count(*) from {table}"]) == 3
    err = capsys.readouterr().err
    assert f"error: {f}: {table} schema version {newer} is newer than version {VERSIONS[table]}" in err
    # the same refusal, word for word, as the Python reader's
    with pytest.raises(Exception) as exc:
        ResultsDir(tmp_path / "newer").open(table)
    assert str(exc.value) in err


def test_query_reads_the_current_and_an_older_version(results, tmp_path, capsys):
    assert main(["query", str(results), "select count(*) as n from flows"]) == 0
    assert "3" in capsys.readouterr().out
    _with_version(results, tmp_path / "older", "flows", VERSIONS["flows"] - 1)
    assert main(["query", str(tmp_path / "older"), "select count(*) as n from flows"]) == 0
    assert "3" in capsys.readouterr().out


def test_query_refuses_a_newer_partition_of_a_corpus(tmp_path, capsys):
    """The partitions of a corpus directory are checked too."""
    tree, corpus = tmp_path / "tree", tmp_path / "corpus"
    tree.mkdir()
    for c in (CAP, DATA / "nano.server.pcap"):
        shutil.copy(c, tree / c.name)
    assert main(["analyze", str(tree), "-o", str(corpus), "-q"]) == 0
    part = sorted(corpus.glob("input=*"))[0]
    tmp = tmp_path / "part"
    f = _with_version(part, tmp, "series", VERSIONS["series"] + 1)
    shutil.copy(f, part / "series.parquet")
    assert main(["query", str(corpus), "select count(*) from series"]) == 3
    assert f"{part / 'series.parquet'}: series schema version" in capsys.readouterr().err


def test_report_refuses_a_packets_table_of_a_newer_version(tmp_path, capsys):
    """The report's drill-down read packets.parquet past the results reader (pl.scan_parquet):
    a table of a newer version was drawn as if it were the current one."""
    res = tmp_path / "res"
    assert main(["analyze", str(CAP), "-o", str(res), "-q", "--packets"]) == 0
    assert main(["report", str(res), "-o", str(tmp_path / "ok.html")]) == 0
    f = _with_version(res, tmp_path / "newer", "packets", VERSIONS["packets"] + 1)
    capsys.readouterr()
    assert main(["report", str(tmp_path / "newer"), "-o", str(tmp_path / "r.html")]) == 3
    assert f"{f}: packets schema version {VERSIONS['packets'] + 1} is newer" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def test_the_lab_overlay_reads_the_analysis_through_the_results_reader(results, tmp_path):
    """hsrtcp.lab.figures read events and flows with pl.read_parquet: a newer table was drawn."""
    from hsrtcp.errors import InputError
    from hsrtcp.lab.figures import _inferences

    got = _inferences(results, 0.0)
    assert set(got) == {"gap", "timeout", "spurious"}
    _with_version(results, tmp_path / "newer", "events", VERSIONS["events"] + 1)
    with pytest.raises(InputError, match="events schema version .* is newer"):
        _inferences(tmp_path / "newer", 0.0)


def test_the_gallery_counts_flows_through_the_results_reader(results, tmp_path):
    """report.gallery counted flows rows with pl.scan_parquet, past the version check."""
    from hsrtcp.errors import InputError
    from hsrtcp.report.gallery import _flows_rows

    assert _flows_rows(results) == 3
    _with_version(results, tmp_path / "newer", "flows", VERSIONS["flows"] + 1)
    with pytest.raises(InputError, match="flows schema version .* is newer"):
        _flows_rows(tmp_path / "newer")
