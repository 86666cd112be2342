"""Issue 36 item 2: the users table (flows grouped by phone)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import hsrtcp
from hsrtcp.errors import InputError
from hsrtcp.passive import users as u
from hsrtcp.testing import encap

from .common import cli, results_of

pytest.importorskip("hsrtcp._native")
DATA = Path(__file__).resolve().parents[2] / "data"


def flows(rows: list[tuple]) -> pl.DataFrame:
    """(client, server, first_ts, last_ts, c2s bytes, s2c bytes[, sgw, uplink teid, changes])."""
    cols = {k: [] for k in ["flow_id", "client_addr", "server_addr", "first_ts", "last_ts", "c2s_payload_bytes",
                            "s2c_payload_bytes", "tunnel", "tunnel_server_addr", "tunnel_id_c2s", "tunnel_changes"]}
    for i, r in enumerate(rows):
        r = (*r, None, None, None)[:9]
        for k, v in zip(list(cols)[1:], (r[0], r[1], r[2], r[3], r[4], r[5], "gtpu" if r[6] else None, r[6], r[7],
                                         r[8] if r[6] else None)):
            cols[k].append(v)
        cols["flow_id"].append(i)
    return pl.DataFrame(cols, schema_overrides={"tunnel_id_c2s": pl.UInt64, "tunnel_changes": pl.UInt64,
                                                 "c2s_payload_bytes": pl.UInt64, "s2c_payload_bytes": pl.UInt64,
                                                 "tunnel": pl.String, "tunnel_server_addr": pl.String})


def test_active_time_sessions_and_gaps():
    # Phone A: flows [0,10] and [5,20] overlap (active 20 s), a silence of 100 s, then [120,130]
    # and, after 30 s, [160,170]: with a 60-s session gap two sessions, one gap of 100 s.
    f = flows([("10.0.0.1", "s1", 0, 10, 1, 100), ("10.0.0.1", "s2", 5, 20, 2, 200),
               ("10.0.0.1", "s1", 120, 130, 3, 300), ("10.0.0.1", "s1", 160, 170, 4, 400),
               ("10.0.0.2", "s1", 50, 51, 5, 500)])
    t = u.users(f, session_gap_s=60)
    a = t.filter(pl.col("user") == "10.0.0.1").row(0, named=True)
    assert (a["flows"], a["c2s_bytes"], a["s2c_bytes"], a["bytes"]) == (4, 10, 1000, 1010)
    assert (a["active_s"], a["span_s"], a["sessions"], a["gaps"], a["gap_mean_s"]) == (40.0, 170.0, 2, 1, 100.0)
    assert (a["servers"], a["bearers"], a["key"]) == (2, 0, "client")
    b = t.filter(pl.col("user") == "10.0.0.2").row(0, named=True)
    assert (b["flows"], b["active_s"], b["sessions"], b["gaps"], b["gap_mean_s"]) == (1, 1.0, 1, 0, None)
    # A shorter session gap splits the 30-s silence too; a longer one joins all.
    assert u.users(f, session_gap_s=20).filter(pl.col("user") == "10.0.0.1")["sessions"][0] == 3
    assert u.users(f, session_gap_s=1000).filter(pl.col("user") == "10.0.0.1")["sessions"][0] == 1
    assert t.schema == pl.Schema(u.USERS_SCHEMA)


def test_bearer_key_and_mapping_file(tmp_path):
    # Two phones behind one NATed client address: only their GTP-U bearers (SGW/uplink TEID)
    # or the operator's mapping tell them apart; a plain flow keeps its client address.
    f = flows([("100.64.0.9", "s1", 0, 10, 1, 1, "192.0.2.254", 7, 1),
               ("100.64.0.9", "s2", 2, 12, 1, 1, "192.0.2.254", 8, 0),
               ("100.64.0.9", "s3", 4, 14, 1, 1, "192.0.2.254", 7, 2),
               ("10.9.9.9", "s1", 0, 1, 1, 1)])
    by_client = u.users(f)
    assert by_client.height == 2
    t = u.users(f, by="bearer")
    assert sorted(t["user"]) == ["10.9.9.9", "192.0.2.254/7", "192.0.2.254/8"]
    b7 = t.filter(pl.col("user") == "192.0.2.254/7").row(0, named=True)
    assert (b7["flows"], b7["handovers"], b7["bearers"], b7["key"]) == (2, 3, 1, "bearer")
    m = tmp_path / "users.csv"
    m.write_text("address,user\n100.64.0.0/10,cgnat-pool\n100.64.0.9,alice\n# a comment\n10.0.0.0/8,lab\n")
    t = u.users(f, mapping=u.read_mapping(m))
    # the longest prefix wins; every flow is covered
    assert dict(zip(t["user"], t["key"])) == {"alice": "map", "lab": "map"}
    bad = tmp_path / "bad.csv"
    bad.write_text("address,user\nnot-an-address,bob\n")
    with pytest.raises(InputError, match="line 2.*not an address"):
        u.read_mapping(bad)


def test_on_an_analysis_and_a_handover_in_gtpu(tmp_path):
    # Three concurrent downloads of one phone (multi_concurrent): one user whose active time is
    # the union of the three lifetimes, computed here from the flows themselves.
    ds = hsrtcp.analyze([str(DATA / "multi_concurrent.server.pcap")])
    t = u.users(ds.flows)
    assert t.height == 1
    r = t.row(0, named=True)
    spans = sorted(zip(ds.flows["first_ts"], ds.flows["last_ts"]))
    union, (s, e) = 0.0, spans[0]
    for a, b in spans[1:]:
        if a > e:
            union, s = union + (e - s), a
        e = max(e, b)
    union += e - s
    assert r["active_s"] == pytest.approx(union)
    assert (r["flows"], r["bytes"]) == (3, int(ds.flows["c2s_payload_bytes"].sum() + ds.flows["s2c_payload_bytes"].sum()))
    # The same capture inside GTP-U: by bearer, the SGW and the uplink TEID.
    w = tmp_path / "gtpu.pcap"
    encap.wrap_capture(DATA / "multi_concurrent.server.pcap", w, "gtpu")
    t = u.users(hsrtcp.analyze([str(w)]).flows, by="bearer")
    assert t["user"].to_list() == [f"{encap.SGW}/{encap.IDS['gtpu'][0]}"]
    assert t["active_s"][0] == pytest.approx(union)


def test_cli_writes_the_table_and_refuses_a_bad_mapping(tmp_path):
    out = results_of(DATA / "multi_concurrent.server.pcap", tmp_path / "res")
    run = ["users", out, "-o", tmp_path / "u"]
    p = cli(*run)
    assert p.returncode == 0, p.stderr
    assert "1 users, 3 flows" in p.stdout
    t = pl.read_parquet(tmp_path / "u" / "users.parquet")
    assert t.height == 1 and t["flows"][0] == 3
    import pyarrow.parquet as pq
    meta = pq.read_metadata(tmp_path / "u" / "users.parquet").metadata
    assert meta[b"hsrtcp.schema"] == b"users" and meta[b"hsrtcp.schema_version"] == b"1"
    bad = tmp_path / "bad.csv"
    bad.write_text("10.0.0.1\n")
    p = cli(*run, "--map", bad)
    assert p.returncode == 3 and "line 1" in p.stderr
    p = cli("users", tmp_path / "nowhere")
    assert p.returncode == 3 and "nowhere" in p.stderr
