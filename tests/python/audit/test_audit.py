"""hsrtcp audit (issue 35): the detectors judged against constructed truth.

Witnesses: hand-made capture pairs whose every timeout's fate is planted
(audit_planted.five_timeouts: the expected matrices follow from the construction and the
methods' definitions, written out below), the kernel's tcpi_total_rto of the testbed
fixtures (the truth's RTO count), and published Wilson intervals.
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl
import pytest

from hsrtcp.audit import audit, tables
from hsrtcp.audit.score import confidence, wilson
from hsrtcp.cli import main

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[1] / "data"
sys.path.insert(0, str(HERE))
from audit_planted import five_timeouts  # noqa: E402


def _matrix(a) -> dict:
    c = a.confusion()
    c = c.filter(pl.col("breakdown") == "all")
    return {r["detector"]: (r["tp"], r["fp"], r["fn"], r["tn"]) for r in c.iter_rows(named=True)}


# Planted episodes: 1 lost original (not spurious), 2 ACK lost (spurious, ACKL), 3 ACK late
# (spurious, RTOEI), 4 ACK late and the retransmission lost (spurious, RTOEI; the phone sees
# no repeat, no D-SACK is sent), 5 original and first retransmission lost (not spurious).
PLANTED = {
    "M10 timeout": (5, 0, 0, 0),
    "M12 receiver": (2, 0, 0, 2),  # episode 4 is invisible at the phone: out of reach, not a miss
    "M12 dsack": (2, 0, 0, 2),  # … and sends no D-SACK
    "M12 eifel": (3, 0, 0, 2),  # the late ACK echoes the original's TSval in 3 and 4; in 2 the D-SACK does
    "M12 server": (3, 0, 0, 2),
    "M12 two_vantage": (3, 0, 0, 2),
    "M14 two_vantage": (1, 0, 0, 2),  # positive = ack_loss: episode 2
    "M14 server rule": (0, 0, 1, 2),  # Eifel evidence in 2 reads as RTOEI: the one-vantage rule misses the ACK loss
}


def test_planted_pair_gives_the_constructed_matrix(tmp_path):
    a = audit([five_timeouts(tmp_path)])
    assert _matrix(a) == PLANTED
    v = a.verdicts.filter(pl.col("detector") == "M10 timeout").sort("episode")
    assert v["truth_spurious"].to_list() == [False, True, True, True, False]
    assert v["truth_cause"].to_list() == [None, "ack_loss", "rto_estimation", "rto_estimation", None]
    assert v["expirations"].to_list() == [1, 1, 1, 1, 2]
    assert v["detected_count"].to_list() == [1, 1, 1, 1, 2]  # the engine's RTO expirations per sequence
    c = a.confusion().filter(pl.col("breakdown") == "all")
    reach = dict(c.select("detector", "out_of_reach").rows())
    assert (reach["M12 receiver"], reach["M12 dsack"], reach["M12 eifel"], reach["M12 two_vantage"]) == (1, 1, 0, 0)
    c = a.connections.row(0, named=True)
    # M13: one retransmission per spurious episode before the first ACK; the matched row agrees
    assert (c["truth_m13_packets"], c["matched_m13_packets"]) == (3, 3)
    assert (c["sack"], c["timestamps"]) == (True, True)


def test_planted_without_sack_and_timestamps_the_server_methods_see_nothing(tmp_path):
    a = audit([five_timeouts(tmp_path, sack=False, ts=False)])
    m = _matrix(a)
    # not counted as misses: out of reach (no SACK, no timestamps), counted apart
    assert m["M12 dsack"] == m["M12 eifel"] == m["M12 server"] == (0, 0, 0, 0)
    c = a.confusion().filter(pl.col("breakdown") == "all")
    reach = dict(c.select("detector", "out_of_reach").rows())
    assert (reach["M12 dsack"], reach["M12 eifel"], reach["M12 server"], reach["M12 receiver"]) == (3, 3, 3, 1)
    assert m["M12 receiver"] == PLANTED["M12 receiver"]
    assert m["M12 two_vantage"] == PLANTED["M12 two_vantage"]
    assert "M14 server rule" not in m  # no spurious episode found at the server: nothing to attribute


def test_breakdown_by_condition_separates_the_pairs(tmp_path):
    a = audit([five_timeouts(tmp_path, name="full"), five_timeouts(tmp_path, sack=False, ts=False, name="plain")])
    c = a.confusion().filter((pl.col("breakdown") == "sack") & (pl.col("detector") == "M12 dsack"))
    got = {r["level"]: (r["tp"], r["fn"], r["out_of_reach"], r["recall"]) for r in c.iter_rows(named=True)}
    assert got == {"true": (2, 0, 1, 1.0), "false": (0, 0, 3, None)}
    # the overall rows are the sums of the blocks
    allrow = a.confusion().filter((pl.col("breakdown") == "all") & (pl.col("detector") == "M12 dsack")).row(0, named=True)
    assert (allrow["tp"], allrow["fn"], allrow["tn"], allrow["out_of_reach"]) == (2, 0, 2, 4)
    tv = a.confusion().filter((pl.col("breakdown") == "sack") & (pl.col("detector") == "M12 two_vantage"))
    assert sorted(tv.select("level", "tp", "fn").rows()) == [("false", 3, 0), ("true", 3, 0)]


@pytest.mark.parametrize("name", ["ack_blackout", "ack_delay", "data_blackout", "reno_nosack_nots",
                                  "twovantage_offset", "drops_cubic", "zero_window", "multi_concurrent"])
def test_truth_timeouts_equal_the_kernel_count(name):
    """The audit's RTO truth (expirations + SYN-ACK timeouts) equals tcpi_total_rto."""
    a = audit([DATA / f"{name}.client.pcap"])
    assert a.connections["rto_check"].to_list() == ["ok"] * a.connections.height


def test_truth_causes_agree_with_the_segment_truth():
    """ack_blackout: the spurious RTO is ACK loss; ack_delay: RTO estimation (tests/data/README.md)."""
    a = audit([DATA / "ack_blackout.client.pcap", DATA / "ack_delay.client.pcap"])
    v = a.verdicts.filter(pl.col("detector") == "M12 two_vantage").sort("run")
    assert v.select("run", "truth_spurious", "truth_cause").rows() == [
        ("ack_blackout", True, "ack_loss"), ("ack_delay", True, "rto_estimation")]


def test_wilson_matches_published_values():
    # Newcombe (1998), Table I: 81/263 -> 0.2553-0.3662; 15/148 -> 0.0624-0.1605; 0/20 -> 0-0.1611
    for k, n, lo, hi in ((81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605), (0, 20, 0.0, 0.1611)):
        _, a, b = wilson(k, n)
        assert (round(a, 4), round(b, 4)) == (lo, hi)
    assert wilson(0, 0) == (None, None, None)


def test_confidence_words():
    assert confidence(2, 0, 1) == "few cases"
    assert confidence(0, 0, 3) == "poor"
    assert confidence(40, 0, 0) == "good"
    assert confidence(12, 2, 3) == "uncertain"


def test_an_event_without_a_truth_episode_is_a_false_positive():
    from hsrtcp.audit.core import _Event, _judge
    from hsrtcp.audit.truth import ConnectionEpisodes, Episode

    ce = ConnectionEpisodes(conn=None, episodes=[Episode(t_first=10.0, t_end=10.5, seq=1, end=1001)])
    ev = {"timeout": [_Event(10.0, 1, count=1), _Event(20.0, 5001, count=1)],
          "receiver": [_Event(10.02, 1), _Event(10.03, 1)],  # twice for one episode: one is extra
          "dsack": [], "eifel": [_Event(30.0, None)], "two_vantage": []}
    v = pl.DataFrame(_judge(ce, ev, {"run": "x"}))
    got = {d: sorted(g["outcome"].to_list()) for (d,), g in v.group_by(["detector"])}
    assert got["M10 timeout"] == ["FP", "TP"]
    assert got["M12 receiver"] == ["FP", "FP"]  # the episode was not spurious
    assert got["M12 eifel"] == ["FP", "TN"]
    assert got["M12 server"] == ["FP", "TN"]
    assert got["M12 two_vantage"] == ["TN"]


def test_cli_writes_the_tables_and_exit_codes(tmp_path, capsys):
    client = five_timeouts(tmp_path)
    out = tmp_path / "out"
    assert main(["audit", str(client), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "M12 eifel" in text and "TP   3" in text
    conf = pl.read_csv(out / "confusion.csv")
    assert tables(pl.read_csv(out / "verdicts.csv")).filter(pl.col("breakdown") == "all")["tp"].to_list() == \
        conf.filter(pl.col("breakdown") == "all")["tp"].to_list()
    runs = pl.read_csv(out / "runs.csv")
    assert len(runs["client_sha256"][0]) == 64
    assert main(["audit", str(tmp_path / "nothing.client.pcap"), "-o", str(out)]) == 3
    assert "nothing.client.pcap: no such file" in capsys.readouterr().err
    (tmp_path / "x.pcap").write_bytes(b"")
    assert main(["audit", str(tmp_path / "x.pcap"), "-o", str(out)]) == 3
    # a cut server capture: that run is left out with an error naming file and offset, the rest written
    cut = tmp_path / "cut.client.pcap"
    cut.write_bytes(client.read_bytes())
    (tmp_path / "cut.server.pcap").write_bytes((tmp_path / "planted.server.pcap").read_bytes()[:3000])
    assert main(["audit", str(cut), str(client), "-o", str(out)]) == 3
    assert "cut.server.pcap: offset 2450: record cut short" in capsys.readouterr().err
    runs = pl.read_csv(out / "runs.csv")
    assert runs.select("run", "status").rows() == [("cut", "left out"), ("planted", "ok")]
    assert pl.read_csv(out / "verdicts.csv")["run"].unique().to_list() == ["planted"]
    (tmp_path / "afile").write_text("")
    assert main(["audit", str(client), "-o", str(tmp_path / "afile")]) == 2


def test_a_campaign_directory_leaves_out_what_it_cannot_audit(tmp_path, capsys):
    """An MPTCP bundle (two phone captures) among single-path ones: exit 3, the rest audited."""
    import json

    camp = tmp_path / "runs"
    for name, phones in (("001_ok", ["capture/phone_p1.pcap"]),
                         ("002_mptcp", ["capture/phone_p1.pcap", "capture/phone_p2.pcap"])):
        d = camp / name
        (d / "capture").mkdir(parents=True)
        five_timeouts(d / "capture", name="x")
        (d / "capture" / "x.client.pcap").rename(d / "capture" / "phone_p1.pcap")
        (d / "capture" / "x.server.pcap").rename(d / "capture" / "server.pcap")
        (d / "manifest.json").write_text(json.dumps({"run_id": name, "captures": {
            "phone": phones, "server": "capture/server.pcap"}}))
    out = tmp_path / "out"
    assert main(["audit", str(camp), "-o", str(out), "-q"]) == 3
    assert "002_mptcp: 2 phone captures (MPTCP)" in capsys.readouterr().err
    assert pl.read_csv(out / "runs.csv")["run"].to_list() == ["001_ok"]
    assert _matrix(audit([camp / "001_ok"])) == PLANTED


def test_dupack_truth_on_a_constructed_connection():
    """RFC 5681 at the sender: a repeat of the highest ACK number with the previous window is a
    DupACK when data beyond it had left the server before the ACK arrived; lost: apart."""
    from hsrtcp.audit.truth import dupack_verdicts, dupacks
    from hsrtcp.testing.truth import AckSegment, ConnectionTruth, DataSegment

    c = ConnectionTruth(client="c", client_port=1, server="s", server_port=2, client_isn=0, epoch=0)
    c.data = [DataSegment(ts_sent=0.0, seq=1, length=1000, ip_id=1, retrans=False),
              DataSegment(ts_sent=1.0, seq=1001, length=1000, ip_id=2, retrans=False)]

    def ack(t_arr, n, win=100):
        return AckSegment(ts_sent=t_arr - 0.01, ack=n, window=win, ip_id=None, arrived=t_arr is not None,
                          ts_arrived=t_arr)

    c.acks = [ack(0.5, 1001),          # new ACK: no candidate
              ack(0.6, 1001),          # repeat, arrived before 1001.. left: nothing outstanding
              ack(1.5, 1001),          # repeat, data beyond 1001 had left at 1.0: DupACK
              ack(1.6, 1001, win=50),  # window changed: no candidate
              AckSegment(ts_sent=1.7, ack=1001, window=50, ip_id=None),  # never arrived: lost
              ack(2.0, 2001), ack(2.1, 2001)]  # everything acknowledged: not
    assert dupack_verdicts(c) == [None, "not", "dupack", None, "lost", None, "not"]
    assert dupacks(c) == (1, 1)


def test_a_needless_back_off_does_not_make_a_needed_timeout_spurious():
    """Dropped-outage runs 002 and 007 in small: the original is lost, the first RTO re-send
    arrives, its ACK is lost, and the back-off re-send arrives as a duplicate. The sequence
    (judged by its first re-send) is not spurious; its back-off was needless. When the first
    re-send is lost too, the back-off was needed."""
    from hsrtcp.audit.truth import episodes
    from hsrtcp.testing.truth import AckSegment, ConnectionTruth, DataSegment

    def conn(first_copy_arrived: bool):
        c = ConnectionTruth(client="c", client_port=1, server="s", server_port=2, client_isn=0, epoch=0)
        c.data = [DataSegment(ts_sent=0.0, seq=1, length=1000, ip_id=1, retrans=False),  # lost
                  DataSegment(ts_sent=0.3, seq=1, length=1000, ip_id=2, retrans=True,
                              arrived=first_copy_arrived, ts_arrived=0.32 if first_copy_arrived else None),
                  DataSegment(ts_sent=0.9, seq=1, length=1000, ip_id=3, retrans=True, arrived=True,
                              ts_arrived=0.92)]
        c.acks = [AckSegment(ts_sent=0.32, ack=1001, window=100, ip_id=None)] if first_copy_arrived else []
        c.acks.append(AckSegment(ts_sent=0.92, ack=1001, window=100, ip_id=None, arrived=True, ts_arrived=0.94))
        return c

    (ep,) = episodes(conn(True)).episodes
    assert (ep.t_first, ep.expirations, ep.spurious, ep.needless_backoffs) == (0.3, 2, False, 1)
    assert ep.first_retrans_arrived and ep.t_end == 0.94
    (ep,) = episodes(conn(False)).episodes
    assert (ep.expirations, ep.spurious, ep.needless_backoffs) == (2, False, 0)


def test_needless_retransmissions_on_a_constructed_connection():
    """A re-send is needless when every byte had reached the phone in a copy sent before it,
    whether that copy arrived before or after the re-send left (a delay spike), and not when
    the only earlier copy was lost or covered only part of it."""
    from hsrtcp.audit.truth import needless
    from hsrtcp.testing.truth import ConnectionTruth, DataSegment

    def seg(t, seq, n, retrans, arrived_at=None):
        return DataSegment(ts_sent=t, seq=seq, length=n, ip_id=None, retrans=retrans,
                           arrived=arrived_at is not None, ts_arrived=arrived_at)

    c = ConnectionTruth(client="c", client_port=1, server="s", server_port=2, client_isn=0, epoch=0)
    c.data = [seg(0.0, 1, 1000, False, 0.05),      # arrived
              seg(0.0, 1001, 1000, False, 0.9),    # arrived late, after its re-send left
              seg(0.0, 2001, 1000, False),         # lost
              seg(0.0, 3001, 500, False, 0.05),    # half of the next re-send
              seg(0.5, 1, 1000, True, 0.55),       # needless
              seg(0.5, 1001, 1000, True, 0.55),    # needless (the original was only late)
              seg(0.5, 2001, 1000, True, 0.55),    # needed
              seg(0.5, 3001, 1000, True, 0.55),    # needed: bytes 3501.. never arrived before
              seg(0.8, 2001, 1000, True)]          # needless: the re-send at 0.5 had arrived
    assert [x[2] for x in needless(c)] == [True, True, False, False, True]


@pytest.mark.parametrize("name", ["reno_lost_dupack", "drops_cubic", "bbr_drops", "ack_blackout"])
def test_needless_by_class_labels_every_resend_as_the_server_row_does(name):
    """connections.csv's truth_retrans_K are the server row's retrans_K (every re-send of the
    truth found among the labelled packets); the needless ones are counted within them."""
    import hsrtcp

    pcap = DATA / f"{name}.client.pcap"
    c = audit([pcap]).connections
    ds = hsrtcp.analyze(client=str(pcap), server=str(pcap).replace(".client.", ".server."))
    s = ds.flows.filter(pl.col("vantage") == "server")
    assert c["truth_retrans_unlabelled"].sum() == 0
    for k in ("rto", "tlp", "fast", "sack_refill"):
        assert c[f"truth_retrans_{k}"].sum() == s[f"retrans_{k}"].sum(), k
        assert 0 <= c[f"truth_needless_{k}"].sum() <= c[f"truth_retrans_{k}"].sum()
    assert sum(c[f"truth_retrans_{k}"].sum() for k in ("rto", "tlp", "fast", "sack_refill", "unclassified")) \
        == c["truth_retransmissions"].sum()
