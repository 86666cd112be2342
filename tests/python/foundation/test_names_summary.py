"""Issue 31: the summary of `hsrtcp analyze` prints one block per connection (its client,
server and matched rows together, short id first) and its short ids are those every other
consumer derives (hsrtcp.results.flow_names, the flows view of hsrtcp query)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl

from hsrtcp.report.summary import connections
from hsrtcp.results import flow_names

DATA = Path(__file__).resolve().parents[2] / "data"


def analyze(out: Path, *args) -> subprocess.CompletedProcess:
    p = subprocess.run([sys.executable, "-m", "hsrtcp", "analyze", *map(str, args), "-o", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return p


def test_one_block_per_connection_short_id_first(tmp_path):
    """multi_concurrent on both sides: three connections, three rows each."""
    out = tmp_path / "r"
    p = analyze(out, "--client", DATA / "multi_concurrent.client.pcap", "--server", DATA / "multi_concurrent.server.pcap")
    flows = pl.read_parquet(out / "flows.parquet")
    names = dict(zip(*flow_names(flows).select("flow_id", "short_id").get_columns()))
    lines = p.stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("id "))
    assert "3 connections in 9 rows" in lines[head - 1]
    body = lines[head + 2:head + 2 + 12]  # 9 rows and 3 matched lines
    rows = [line.split() for line in body if not line.startswith("  ")]
    assert len(rows) == 9
    # short id first, flow_id last, both as the tables (and every other reader) name the row
    assert {r[0]: int(r[-1]) for r in rows} == {v: k for k, v in names.items()}
    # blocks: c, s, m of one connection, then its matched line
    for k in range(3):
        block = body[4 * k:4 * k + 4]
        ids = [b.split()[0] for b in block[:3]]
        n = ids[0][:-1]
        assert ids == [n + "c", n + "s", n + "m"], body
        assert block[3].startswith(f"  {n}m (matched, both captures): data loss p_d"), block[3]


def test_pure_python_names_equal_the_polars_ones(tmp_path):
    for args in (("--client", DATA / "ack_blackout.client.pcap", "--server", DATA / "ack_blackout.server.pcap"),
                 (DATA / "multi_sequential.server.pcap", DATA / "multi_concurrent.client.pcap"),
                 (DATA / "reuse_4tuple.server.pcap",)):
        out = tmp_path / str(len(list(tmp_path.iterdir())))
        analyze(out, *args, "-q")
        flows = pl.read_parquet(out / "flows.parquet")
        mine = {r["flow_id"]: r["short_id"] for g in connections(flows.to_dicts()) for r in g}
        want = dict(zip(*flow_names(flows).select("flow_id", "short_id").get_columns()))
        assert mine == want and len(set(mine.values())) == flows.height
