"""The summary `hsrtcp analyze` prints (hsrtcp.report.summary): plain text, and every cell
what the flows rows say. Regression for issue 18: the flow column printed each capture's
flow number (0 on every row of a two-vantage run), and the matched line printed the
single-capture spurious count beside the two-capture causes, which did not add up."""

from __future__ import annotations

import subprocess
import sys

import polars as pl

from hsrtcp.report.summary import format_table, summary_text

from .conftest import DATA


def test_rows_print_their_flow_ids_and_counts(tmp_path):
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, "-m", "hsrtcp", "analyze", "--client", str(DATA / "ack_blackout.client.pcap"),
                        "--server", str(DATA / "ack_blackout.server.pcap"), "-o", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    flows = pl.read_parquet(out / "flows.parquet")
    lines = p.stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.lstrip().startswith("id "))
    table = lines[head + 2: head + 2 + flows.height]
    printed = {int(line.split()[-1]): line for line in table}  # flow_id last (issue 31: the short id first)
    assert set(printed) == set(flows["flow_id"].to_list())  # three different ids, not 0, 0, 0
    for r in flows.iter_rows(named=True):
        cells = printed[r["flow_id"]].split()
        # retx, RTOs, spurious: the last numeric columns before RTT and end
        retx, rtos, spurious = cells[-7], cells[-6], cells[-5]
        for shown, v in ((retx, r["retransmissions"]), (rtos, r["timeouts"]), (spurious, r["spurious_timeouts"])):
            assert shown == ("-" if v is None else f"{v:,}")
    m = flows.filter(pl.col("vantage") == "matched").row(0, named=True)
    assert (f"spurious timeouts (both captures) {m['spurious_timeouts_2v']} (ACK loss "
            f"{m['spurious_timeouts_ack_loss']}, RTO estimation {m['spurious_timeouts_rto_estimation']})") in p.stdout
    assert m["spurious_timeouts_2v"] == m["spurious_timeouts_ack_loss"] + m["spurious_timeouts_rto_estimation"]


def test_nulls_print_as_dashes_never_zero():
    row = {"flow_id": 5, "capture": "/x/a.pcap", "vantage": None, "client_addr": "10.0.0.1", "client_port": 1,
           "server_addr": "10.0.0.2", "server_port": 2, "roles_from_syn": True, "data_dir": None,
           "duration_s": None, "c2s_packets": 3, "s2c_packets": None, "retransmissions": None, "timeouts": None,
           "spurious_timeouts": None, "rtt_mean": None, "end_reason": "open", "truncated": False}
    text = summary_text([row], [{"capture": "/x/a.pcap", "packets": 3, "tcp_packets": 3, "flows": 1,
                                 "malformed_packets": 0, "error": None}])
    line = text.splitlines()[-1].split()
    assert line[0] == "f1" and line[-1] == "5" and "a.pcap" in text and line[-6:-1] == ["-", "-", "-", "-", "open"]


def test_format_table_aligns():
    t = format_table([("a", True), ("bb", False)], [["1", "x"], ["100", "yyy"]]).splitlines()
    assert t == ["  a  bb", "---  ---", "  1  x", "100  yyy"]
