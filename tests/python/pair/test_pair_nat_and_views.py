"""Pairing through NAT, captures without the handshake, single-capture rows unchanged by the
second capture, and the CLI / run-bundle entry points."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

import hsrtcp
from hsrtcp.api import analyze_one
from hsrtcp.errors import InputError
from hsrtcp.pair import analyze_pair, match_tables

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"


def _rewriter():
    spec = importlib.util.spec_from_file_location("rewrite_nat", ROOT / "scripts" / "rewrite_nat.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _truth(name):
    return json.loads((DATA / f"{name}.json").read_text())["truth"]["connections"][0]


@pytest.mark.parametrize("name", ["drops_cubic", "ipv6_drops"])
def test_nat_rewritten_phone_capture_still_pairs(tmp_path, name):
    t = _truth(name)
    new_addr = "100.64.7.9" if ":" not in t["client"] else "fd99::7"
    nat = tmp_path / "phone_nat.pcap"
    _rewriter().rewrite_nat(DATA / f"{name}.client.pcap", nat, addr_map={t["client"]: new_addr},
                            port_map={t["client_port"]: 61001})
    ds = analyze_pair(nat, DATA / f"{name}.server.pcap")
    m = ds.flows.filter(pl.col("vantage") == "matched")
    assert m.height == 1
    row = m.row(0, named=True)
    assert row["pairing"] == "isn"
    assert (row["cv_client_addr"], row["cv_client_port"]) == (new_addr, 61001)
    assert (row["sv_client_addr"], row["sv_client_port"]) == (t["client"], t["client_port"])
    assert row["client_flow_id"] is not None and row["server_flow_id"] is not None
    assert (row["lost_data_packets"], row["lost_ack_packets"]) == (t["data_lost"], t["acks_lost"])
    assert row["p_d"] == t["p_data"] and row["p_a"] == t["p_ack"]


def test_phone_capture_without_handshake_pairs_by_sequence_proximity(tmp_path):
    """The phone capture starts mid-connection (first 40 records gone) and behind NAT."""
    t = _truth("drops_cubic")
    cut = tmp_path / "late_phone.pcap"
    _rewriter().rewrite_nat(DATA / "drops_cubic.client.pcap", cut, addr_map={t["client"]: "100.64.0.1"},
                            port_map={t["client_port"]: 50123}, skip=40)
    r = match_tables(cut, DATA / "drops_cubic.server.pcap")
    m = r["matched"]
    assert m["pairing"].to_list() == ["seq_proximity"]
    row = m.row(0, named=True)
    assert row["establishment_time_s"] is None  # no SYN on the phone side
    # packets sent before the phone capture started have no verdict; the rest are exact
    assert row["unknown_fate_packets"] > 0
    assert row["lost_ack_packets"] <= t["acks_lost"] and row["lost_data_packets"] <= t["data_lost"]
    assert abs(r["stats"]["clock_offset_s"]) < 1e-3


def _strip(df):
    return df.drop("flow_id").sort(df.drop("flow_id").columns[:12])


@pytest.mark.parametrize("name", ["drops_cubic", "multi_concurrent", "reuse_4tuple"])
def test_single_capture_rows_unchanged_by_the_second_capture(name):
    c, s = DATA / f"{name}.client.pcap", DATA / f"{name}.server.pcap"
    alone = {"client": analyze_one(c, vantage="client"), "server": analyze_one(s, vantage="server")}
    both = hsrtcp.analyze(client=c, server=s)
    for v in ("client", "server"):
        ref = alone[v]["flows"]
        got = both.flows.filter(pl.col("vantage") == v).select(ref.columns)
        assert got.height == ref.height
        assert _strip(got).equals(_strip(ref)), v
        # events and series of that side: same rows apart from the flow id
        ids = dict(zip(ref.sort("first_ts")["flow_id"], got.sort("first_ts")["flow_id"]))
        for table in ("events", "series"):
            r = alone[v][table].with_columns(pl.col("flow_id").replace_strict(ids, return_dtype=pl.UInt64))
            g = getattr(both, table).filter(pl.col("flow_id").is_in(list(ids.values()))).select(r.columns)
            assert g.sort(g.columns).equals(r.sort(r.columns)), (v, table)


def test_pairs_by_order_and_mismatched_counts(tmp_path):
    ds = hsrtcp.analyze(client=[DATA / "small_50k.client.pcap", DATA / "clean_200k.client.pcap"],
                        server=[DATA / "small_50k.server.pcap", DATA / "clean_200k.server.pcap"])
    m = ds.flows.filter(pl.col("vantage") == "matched")
    assert sorted(m["pairing"].to_list()) == ["isn", "isn"]
    assert m["flow_id"].n_unique() == 2 and ds.flows["flow_id"].n_unique() == ds.flows.height
    with pytest.raises(InputError, match="by order"):
        hsrtcp.analyze(client=[DATA / "small_50k.client.pcap"], server=[])


def _cli(*args):
    exe = Path(sys.executable).with_name("hsrtcp")
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, timeout=120)


def test_cli_pairs_and_bundle_directory(tmp_path):
    out = tmp_path / "out"
    r = _cli("analyze", "-q", "--no-plot", "--client", DATA / "ack_blackout.client.pcap",
             "--server", DATA / "ack_blackout.server.pcap", "-o", out)
    assert r.returncode == 0, r.stderr
    flows = pl.read_parquet(out / "flows.parquet")
    assert flows.filter(pl.col("vantage") == "matched")["spurious_timeouts_ack_loss"].to_list() == [1]
    # a lab run bundle: capture/phone_p1.pcap + capture/server.pcap (docs/formats/bundle.md)
    b = tmp_path / "run-0001"
    (b / "capture").mkdir(parents=True)
    shutil.copy(DATA / "drops_cubic.client.pcap", b / "capture" / "phone_p1.pcap")
    shutil.copy(DATA / "drops_cubic.server.pcap", b / "capture" / "server.pcap")
    (b / "manifest.json").write_text("{}")
    r = _cli("analyze", "-q", "--no-plot", b, "-o", tmp_path / "out2")
    assert r.returncode == 0, r.stderr
    flows = pl.read_parquet(tmp_path / "out2" / "flows.parquet")
    assert sorted(flows["vantage"].to_list()) == ["client", "matched", "server"]
    r = _cli("analyze", "--client", DATA / "ack_blackout.client.pcap", "-o", tmp_path / "o3")
    assert r.returncode == 2 and "paired by order" in r.stderr


def test_capture_loss_at_the_phone_is_not_network_loss(tmp_path):
    """Remove 4 received data segments and 3 sent pure ACKs from the phone capture (records
    the phone's stack handled but its capture dropped). The phone later acknowledges the
    missing bytes, and the server saw the ACKs: both are capture loss at the phone, and the
    network loss numbers stay those of the truth."""
    from hsrtcp.testing.pcapio import read_records, decode_tcp

    name = "drops_cubic"
    t = _truth(name)
    data_recs, ack_recs = [], []
    for i, rec in enumerate(read_records(DATA / f"{name}.client.pcap"), start=1):
        p = decode_tcp(rec)
        if p is None or i < 50:
            continue
        if p.sport == 5201 and p.payload_len > 0 and len(data_recs) < 4 and i % 37 == 0:
            data_recs.append(i)
        elif p.dport == 5201 and p.is_pure_ack and len(ack_recs) < 3 and i % 41 == 0:
            ack_recs.append(i)
    assert len(data_recs) == 4 and len(ack_recs) == 3
    cut = tmp_path / "phone_lossy.pcap"
    _rewriter().rewrite_nat(DATA / f"{name}.client.pcap", cut, drop=set(data_recs + ack_recs))
    row = match_tables(cut, DATA / f"{name}.server.pcap")["matched"].row(0, named=True)
    assert row["capture_loss_client_packets"] == 7
    assert row["capture_loss_server_packets"] == 0
    assert (row["data_packets_sent"], row["lost_data_packets"]) == (t["data_sent"], t["data_lost"])
    # the 3 ACKs the phone capture missed are not in its denominator, and not lost
    assert (row["ack_packets_sent"], row["lost_ack_packets"]) == (t["acks_sent"] - 3, t["acks_lost"])


def test_progress_callback_reaches_the_total():
    seen = []
    hsrtcp.analyze(client=DATA / "small_50k.client.pcap", server=DATA / "small_50k.server.pcap",
                   progress=lambda done, total: seen.append((done, total)))
    total = (DATA / "small_50k.client.pcap").stat().st_size + (DATA / "small_50k.server.pcap").stat().st_size
    assert seen and all(t == total for _, t in seen)
    assert max(d for d, _ in seen) == total
