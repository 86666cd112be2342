"""Issue 31: the README's Python example pairs the two captures (before: two unpaired rows,
selecting p_d raised ColumnNotFoundError), and the API gives the connections view and
selects rows by name. Witness: the example pair's lab truth (nftables drop counters,
python/hsrtcp/examples/truth.json)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl

import hsrtcp

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "python" / "hsrtcp" / "examples"


def readme_call() -> str:
    text = (ROOT / "README.md").read_text()
    block = text.split("## The Python API", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    (line,) = [x for x in block.splitlines() if x.startswith("ds = hsrtcp.analyze(")]
    return line.split("#", 1)[0].strip()


def test_the_readme_example_pairs_and_its_connection_has_both_sides():
    call = readme_call()
    call = re.sub(r'"phone\.pcap"', repr(str(EXAMPLES / "phone.pcap")), call)
    call = re.sub(r'"server\.pcap"', repr(str(EXAMPLES / "server.pcap")), call)
    scope = {"hsrtcp": hsrtcp}
    exec(call, scope)  # noqa: S102 - the README's own line, with the example's paths
    ds = scope["ds"]
    truth = json.loads((EXAMPLES / "truth.json").read_text())["nft"]
    m = ds.flows.filter(pl.col("vantage") == "matched").select("p_d", "lost_data_packets", "data_packets_sent")
    assert m.height == 1
    assert (m["lost_data_packets"][0], m["data_packets_sent"][0]) == (truth["data_dropped"], truth["data_seen"])
    c = ds.connections()
    assert c.height == 1
    row = c.row(0, named=True)
    assert (row["connection"], row["client_short_id"], row["server_short_id"], row["matched_short_id"]) == \
        ("f1", "f1c", "f1s", "f1m")
    assert row["matched_lost_data_packets"] == truth["data_dropped"]
    assert row["matched_lost_ack_packets"] == truth["ack_dropped"]
    assert row["matched_p_d"] == m["p_d"][0]
    f = ds.flows
    for side in ("client", "server"):
        r = f.filter(pl.col("vantage") == side).row(0, named=True)
        assert row[f"{side}_flow_id"] == r["flow_id"] and row[f"{side}_retransmissions"] == r["retransmissions"]
    assert ds.flow("f1")["vantage"] == "matched"
    assert ds.flow("f1c")["vantage"] == "client"
    assert ds.flow("10.0.2.2:5201-10.0.1.2:43492")["vantage"] == "matched"
