"""`hsrtcp analyze` writes the tables (Parquet, CSV on request) and the throughput plot."""

from __future__ import annotations

import subprocess
import sys

import duckdb
import polars as pl

from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "data"
EXAMPLES = Path(__file__).resolve().parents[3] / "python/hsrtcp/examples"


def test_analyze_writes_tables_csv_and_plot(tmp_path):
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, "-m", "hsrtcp", "analyze", str(DATA / "multi_concurrent.server.pcap"),
                        "-o", str(out), "--csv", "--plot"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    for t in ("flows", "events", "rtt", "series", "captures"):
        assert (out / f"{t}.parquet").exists() and (out / f"{t}.csv").exists()
    assert (out / "throughput.png").stat().st_size > 10_000
    assert "TCP connections (3" in p.stdout
    # DuckDB reads the Parquet output directly
    n = duckdb.sql(f"select count(*) from '{out}/flows.parquet'").fetchall()[0][0]
    assert n == 3
    csv = pl.read_csv(out / "flows.csv")
    assert csv["s2c_payload_bytes"].to_list() == pl.read_parquet(out / "flows.parquet")["s2c_payload_bytes"].to_list()
    # re-running over the same directory is idempotent
    first = pl.read_parquet(out / "flows.parquet")
    p2 = subprocess.run([sys.executable, "-m", "hsrtcp", "analyze", str(DATA / "multi_concurrent.server.pcap"),
                         "-o", str(out), "-q"], capture_output=True, text=True, timeout=120)
    assert p2.returncode == 0
    assert pl.read_parquet(out / "flows.parquet").equals(first)
    # without --plot (the default since issue 18) no figure is drawn
    p3 = subprocess.run([sys.executable, "-m", "hsrtcp", "analyze", str(DATA / "multi_concurrent.server.pcap"),
                         "-o", str(tmp_path / "plain")], capture_output=True, text=True, timeout=120)
    assert p3.returncode == 0, p3.stderr
    assert not (tmp_path / "plain" / "throughput.png").exists()
    assert "TCP connections (3" in p3.stdout
    assert not list(out.glob(".*tmp*"))


def test_demo_runs_on_bundled_example(tmp_path):
    if not (EXAMPLES / "phone.pcap").exists():
        import pytest

        pytest.skip("bundled example not generated yet")
    p = subprocess.run([sys.executable, "-m", "hsrtcp", "demo", "-o", str(tmp_path / "d")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    flows = pl.read_parquet(tmp_path / "d" / "flows.parquet")
    assert {"client", "server"} <= set(flows["vantage"].unique().to_list())
    # the summary shows each vantage and the two-vantage metrics of the matched row
    assert "phone.pcap (client)" in p.stdout and "server.pcap (server)" in p.stdout
    m = flows.filter(pl.col("vantage") == "matched").row(0, named=True)
    from hsrtcp.units import human_share

    assert f"data loss p_d {human_share(m['p_d'])}" in p.stdout
    assert f"per-ACK loss rate p_a {human_share(m['p_a'])}" in p.stdout
