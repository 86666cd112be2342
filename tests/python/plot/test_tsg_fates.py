"""The matcher's per-packet fates in the time–sequence graph (issue 31): on a pair analyzed
with --packets, every data segment the packets table marks ``lost`` is a cross at its
(time since the flow's first packet, seq) in the written SVG, as many as the matched row's
``lost_data_packets``; every pure ACK marked ``ack_lost`` (rows of the phone's capture) is a
mark at (time, ack) on the phone row's graph; a single-capture run has no such marks."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
import polars as pl
import pytest

from hsrtcp.plot import figure
from hsrtcp.plot.style import save

from .conftest import DATA, analyze
from .test_tsg_marks import SVG, to_svg_points


@pytest.fixture(scope="module")
def blackout(tmp_path_factory):
    """data_blackout, both sides, with packets: 56 data segments lost in a 0.9-s blackout."""
    return analyze(tmp_path_factory.mktemp("fates") / "blackout", "--client", str(DATA / "data_blackout.client.pcap"),
                   "--server", str(DATA / "data_blackout.server.pcap"), "--packets")


@pytest.fixture(scope="module")
def ack_blackout(tmp_path_factory):
    """ack_blackout, both sides, with packets: 22 ACKs the phone sent never arrived."""
    return analyze(tmp_path_factory.mktemp("fates") / "ack", "--client", str(DATA / "ack_blackout.client.pcap"),
                   "--server", str(DATA / "ack_blackout.server.pcap"), "--packets")


def svg_marks(path, gid: str) -> np.ndarray:
    """(x, y) in SVG points of each mark in the group ``gid``: a ``<use>``'s position, or (when
    the backend writes each marker as its own path) the centre of the path's bounding box."""
    group = next(g for g in ET.parse(path).getroot().iter(f"{SVG}g") if g.get("id") == gid)
    uses = [(float(u.get("x")), float(u.get("y"))) for u in group.iter(f"{SVG}use")]
    if uses:
        return np.array(uses)
    out = []
    for p in group.iter(f"{SVG}path"):
        xy = np.array(re.findall(r"(-?[\d.]+) (-?[\d.]+)", p.get("d")), dtype=float)
        out.append((xy.min(axis=0) + xy.max(axis=0)) / 2)
    return np.array(out)


def scale(ax) -> float:
    return {"(B)": 1, "(kB)": 1e3, "(MB)": 1e6}[re.search(r"\(\w+\)", ax.get_ylabel()).group(0)]


def check_marks(fig, path, gid: str, want: np.ndarray) -> None:
    """The artist's points and the SVG's marks are ``want`` (data coordinates), one each."""
    ax = fig.axes[0]
    coll = next(c for c in ax.collections if c.get_gid() == gid)
    got = np.asarray(coll.get_offsets())
    key = lambda a: a[np.lexsort((a[:, 1], a[:, 0]))]  # noqa: E731
    np.testing.assert_allclose(key(got), key(want), rtol=0, atol=1e-9)
    marks = svg_marks(path, gid)
    assert len(marks) == len(want)
    np.testing.assert_allclose(key(marks), key(to_svg_points(fig, ax, want)), atol=0.05)  # 0.05 pt


@pytest.mark.parametrize("vantage", ["matched", "server"])
def test_every_lost_segment_is_marked_at_its_time_and_seq(blackout, tmp_path, vantage):
    flows = pl.read_parquet(blackout / "flows.parquet")
    matched = flows.filter(pl.col("vantage") == "matched").row(0, named=True)
    server = flows.filter(pl.col("vantage") == "server").row(0, named=True)
    pk = pl.read_parquet(blackout / "packets.parquet").filter(
        (pl.col("flow_id") == server["flow_id"]) & (pl.col("fate") == "lost"))
    assert pk.height == matched["lost_data_packets"] == 56  # the fixture's blackout, counted by the matcher
    fid = matched["flow_id"] if vantage == "matched" else server["flow_id"]
    fig = figure("tsg", blackout, fid)
    path = tmp_path / "tsg.svg"
    save(fig, path)
    ax = fig.axes[0]
    want = np.column_stack([(pk["ts"] - server["first_ts"]).to_numpy(), pk["seq"].to_numpy() / scale(ax)])
    check_marks(fig, path, "fate-lost", want)
    assert any("lost in the network (matcher): 56 data segments" in t.get_text() for t in ax.get_legend().get_texts())
    # the per-bin approximation is not drawn on top of the exact marks
    assert not any(c.get_gid() == "matcher-lost" for c in ax.collections)


def test_lost_acks_are_marked_on_the_phone_rows_graph(ack_blackout, tmp_path):
    flows = pl.read_parquet(ack_blackout / "flows.parquet")
    matched = flows.filter(pl.col("vantage") == "matched").row(0, named=True)
    client = flows.filter(pl.col("vantage") == "client").row(0, named=True)
    pk = pl.read_parquet(ack_blackout / "packets.parquet").filter(
        (pl.col("flow_id") == client["flow_id"]) & (pl.col("fate") == "ack_lost"))
    assert pk.height == matched["lost_ack_packets"] == 22
    fig = figure("tsg", ack_blackout, client["flow_id"])
    path = tmp_path / "tsg.svg"
    save(fig, path)
    ax = fig.axes[0]
    want = np.column_stack([(pk["ts"] - client["first_ts"]).to_numpy(), pk["ack"].to_numpy() / scale(ax)])
    check_marks(fig, path, "fate-ack-lost", want)
    assert not any(c.get_gid() == "fate-lost" for c in ax.collections)  # no data segment was lost


def test_single_capture_run_has_no_fate_marks(tmp_path_factory):
    out = analyze(tmp_path_factory.mktemp("fates") / "single", str(DATA / "data_blackout.server.pcap"), "--packets")
    fig = figure("tsg", out, None)
    gids = {c.get_gid() for c in fig.axes[0].collections}
    assert not gids & {"fate-lost", "fate-ack-lost", "matcher-lost"}, gids


def test_matched_graph_shows_the_phones_lost_acks_on_the_server_clock(ack_blackout, tmp_path):
    """The lost ACKs' rows are in the phone's capture; on the matched row's graph (the server's
    packets) they are drawn at the server-clock time the matcher's clock fit gives. Witness
    independent of that mapping's code: each lies in the server's ACK silence — no ACK the
    server received by that time acknowledged more than the lost one did."""
    flows = pl.read_parquet(ack_blackout / "flows.parquet")
    m = flows.filter(pl.col("vantage") == "matched").row(0, named=True)
    srv = flows.filter(pl.col("flow_id") == m["server_flow_id"]).row(0, named=True)
    fig = figure("tsg", ack_blackout, m["flow_id"])
    path = tmp_path / "tsg.svg"
    save(fig, path)
    ax = fig.axes[0]
    got = np.asarray(next(c for c in ax.collections if c.get_gid() == "fate-ack-lost").get_offsets())
    assert len(got) == m["lost_ack_packets"] == 22
    check_marks(fig, path, "fate-ack-lost", got)  # the SVG holds each at its place
    acks = pl.read_parquet(ack_blackout / "packets.parquet").filter(
        (pl.col("flow_id") == srv["flow_id"]) & (pl.col("dir") != srv["data_dir"]) & pl.col("ack").is_not_null())
    t_srv, a_srv = (acks["ts"] - srv["first_ts"]).to_numpy(), acks["ack"].to_numpy() / scale(ax)
    for t, a in got:
        assert a_srv[t_srv <= t].max(initial=0) <= a + 1e-12
    # and the server received no ACK at all between the first and the last lost one
    assert not ((t_srv > got[:, 0].min()) & (t_srv < got[:, 0].max())).any()


def test_lost_acks_sit_at_their_true_send_time_with_a_clock_offset(tmp_path_factory):
    """twovantage_offset: the phone capture's clock was moved 1.234567 s on purpose (the lab's
    metadata). Witness: hsrtcp.testing.truth's lost ACKs (dpkt reader, own matching) at their
    send time on the true server clock (phone time minus the known offset)."""
    import json

    from hsrtcp.testing import truth

    name = "twovantage_offset"
    res = analyze(tmp_path_factory.mktemp("fates") / "offset", "--client", str(DATA / f"{name}.client.pcap"),
                  "--server", str(DATA / f"{name}.server.pcap"), "--packets")
    off = json.loads((DATA / f"{name}.json").read_text())["time_offset_s"]
    tr = truth.compute(DATA / f"{name}.server.pcap", DATA / f"{name}.client.pcap", client_time_offset_s=off)
    lost = [a for c in tr.connections for a in c.acks if not a.arrived]
    flows = pl.read_parquet(res / "flows.parquet")
    m = flows.filter(pl.col("vantage") == "matched").row(0, named=True)
    srv = flows.filter(pl.col("flow_id") == m["server_flow_id"]).row(0, named=True)
    assert len(lost) == m["lost_ack_packets"] == 17
    ax = figure("tsg", res, m["flow_id"]).axes[0]
    got = np.asarray(next(c for c in ax.collections if c.get_gid() == "fate-ack-lost").get_offsets())
    want = np.array([(a.ts_sent - off - srv["first_ts"], a.ack / scale(ax)) for a in lost])
    order = lambda a: a[np.lexsort((a[:, 1], a[:, 0]))]  # noqa: E731
    np.testing.assert_allclose(order(got)[:, 0], order(want)[:, 0], atol=1e-4)  # the fit: within 0.1 ms
    np.testing.assert_allclose(order(got)[:, 1], order(want)[:, 1], rtol=0, atol=1e-12)
