"""Bad input to `hsrtcp plot`: a clear message naming the file, exit 3 (2 for usage), never a
traceback. Results directories are the analyzed fixtures, altered the way old or damaged
results look."""

from __future__ import annotations

import shutil
import subprocess
import sys

import polars as pl
import pytest


def run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hsrtcp", "plot", *map(str, args)], capture_output=True,
                          text=True, timeout=120)


def check(p, code: int, *words: str) -> None:
    assert p.returncode == code, (p.stdout, p.stderr)
    assert "Traceback" not in p.stderr
    for w in words:
        assert w in p.stderr, (w, p.stderr)


@pytest.fixture
def copy(multi, tmp_path):
    d = tmp_path / "r"
    shutil.copytree(multi, d)
    return d


def test_older_schema_is_named(copy, tmp_path):
    ev = pl.read_parquet(copy / "events.parquet").drop("seq_start", "seq_end")
    ev.write_parquet(copy / "events.parquet")  # as an older version wrote events
    check(run("tsg", copy, "-o", tmp_path / "x.png"), 3, str(copy / "events.parquet"), "seq_start",
          "older", "re-run hsrtcp analyze")
    assert not (tmp_path / "x.png").exists()


def test_missing_table(copy, tmp_path):
    (copy / "series.parquet").unlink()
    check(run("throughput", copy, "-o", tmp_path / "x.svg"), 3, str(copy / "series.parquet"), "missing table")


def test_missing_directory_and_file_instead(tmp_path):
    check(run("rtt", tmp_path / "nope", "-o", tmp_path / "x.pdf"), 3, "no such results directory")
    f = tmp_path / "f"
    f.write_text("x")
    check(run("rtt", f, "-o", tmp_path / "x.pdf"), 3, "is a file")


def test_corrupt_table(copy, tmp_path):
    (copy / "flows.parquet").write_bytes(b"PAR1 not really")
    check(run("window", copy, "-o", tmp_path / "x.png"), 3, str(copy / "flows.parquet"), "not a readable Parquet")


def test_unknown_flow_id(multi, tmp_path):
    check(run("tsg", multi, "--flow", 123456789, "-o", tmp_path / "x.png"), 3, "no flow with flow_id 123456789")


def test_empty_flow(copy, tmp_path):
    """A connection without payload (as a refused or idle connection is): data_dir null."""
    f = pl.read_parquet(copy / "flows.parquet")
    fid = f["flow_id"][0]
    f.with_columns(data_dir=pl.when(pl.col("flow_id") == fid).then(None).otherwise(pl.col("data_dir"))) \
        .write_parquet(copy / "flows.parquet")
    for kind in ("tsg", "window", "rtt", "throughput"):
        check(run(kind, copy, "--flow", fid, "-o", tmp_path / "x.png"), 3, f"flow {fid}", "empty flow")


def test_flow_without_rtt_samples(copy, tmp_path):
    rtt = pl.read_parquet(copy / "rtt.parquet")
    fid = rtt["flow_id"][0]
    rtt.filter(pl.col("flow_id") != fid).write_parquet(copy / "rtt.parquet")
    check(run("rtt", copy, "--flow", fid, "-o", tmp_path / "x.png"), 3, "no RTT samples")


def test_usage_errors(multi, tmp_path):
    check(run("tsg", multi, "-o", tmp_path / "x.jpg"), 2, ".png, .svg or .pdf")
    check(run("nope", multi, "-o", tmp_path / "x.png"), 2)
    check(run("tsg", multi, "--metric", "x", "-o", tmp_path / "x.png"), 2, "cdf only")


def test_model_without_two_vantage_inputs(multi, tmp_path):
    check(run("model", multi, "-o", tmp_path / "m.png"), 3, "two-vantage")


def test_cdf_unknown_column(multi, tmp_path):
    check(run("cdf", multi, "--table", "flows", "--metric", "nope", "-o", tmp_path / "c.png"), 3, "no column 'nope'")
    check(run("cdf", multi, "--table", "flows", "--metric", "capture", "-o", tmp_path / "c.png"), 3, "not a number")
    check(run("cdf", multi, "--by", "nope", "-o", tmp_path / "c.png"), 3, "no column 'nope' to group by")
