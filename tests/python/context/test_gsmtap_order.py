"""GSMTAP messages stamped out of order (issue 33): a Qualcomm diagnostic port stamps its log
entries in the modem and sends them in batches, so a real capture's times go back (the QCSuper
sample: 327 times, by up to 0.92 s; counted with tshark and numpy on frame.time_epoch). The
reader puts them in time order within a 2-s window (hsrtcp.context.reorder); a message later
than that is counted as a problem; a text log's backward time is still an error (exit 3).

Before: ``hsrtcp analyze --radio sample_2g_3g_4g_xperia.pcap`` exited 3 with "packet 1453:
time goes backwards for carrier -: 1521877306.620 after 1521877307.065 (line 1450)"."""

from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest

from hsrtcp.context import rrc
from hsrtcp.context.gsmtap import LATE, read_gsmtap, write_gsmtap
from hsrtcp.context.readers import check
from hsrtcp.context.schema import RadioLogError, conform

from .logs import lab_log

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
QCSUPER = DATA / "radio" / "qcsuper" / "sample_2g_3g_4g_xperia.pcap"
TSHARK = shutil.which("tshark")
# the small_50k flows (09:52 on 14 Feb 2026's capture clock, 3 ms) between the QCSuper
# capture's LTE samples at 1521877307.065 and 1521877308.015
OFFSET = 1795316137.602 - 1521877307.5
# the four dedicated/common LTE RRC channels: what the reader follows
LTE_RRC = " || ".join(f"lte-rrc.{c}_Message_element" for c in ("DL_DCCH", "UL_DCCH", "DL_CCCH", "UL_CCCH"))


def _hsrtcp(args, cwd):
    return subprocess.run([str(ROOT / ".venv" / "bin" / "hsrtcp"), *map(str, args)], capture_output=True,
                          text=True, cwd=cwd)


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")
def test_a_real_diagnostic_capture_gives_context_through_the_command(tmp_path):
    """Exit 0, and radio.parquet is what tshark's decoding implies: a sample at the first LTE
    RRC message of every second that has one, in time order (80 messages, 18 seconds)."""
    out = subprocess.run([TSHARK, "-r", str(QCSUPER), "-Y", LTE_RRC, "-T", "fields", "-e", "frame.number",
                          "-e", "frame.time_epoch"], capture_output=True, text=True, check=True).stdout
    msgs = sorted((float(t), int(n)) for n, t in (line.split("\t") for line in out.splitlines()))
    assert len(msgs) == 80
    want, second = [], None
    for ts, n in msgs:
        if math.floor(ts) != second:
            second = math.floor(ts)
            want.append((round(ts + OFFSET, 3), n))
    r = _hsrtcp(["analyze", "--client", DATA / "small_50k.client.pcap", "--server", DATA / "small_50k.server.pcap",
                 "--radio", QCSUPER, "--radio-offset", f"{OFFSET:.3f}", "-q", "-o", tmp_path / "out"], tmp_path)
    assert r.returncode == 0, r.stderr
    radio = pl.read_parquet(tmp_path / "out" / "radio.parquet")
    assert len(want) == 18 and [(round(t, 3), n) for t, n in radio.select("ts", "line").rows()] == want
    assert set(radio["rat"]) == {"LTE"} and set(radio["generation"]) == {"4G"}
    ctx = pl.read_parquet(tmp_path / "out" / "context.parquet")
    # QCSuper names no cell before a handover (none here): the flows are judged unknown, honestly
    assert ctx.height == 3 and set(ctx["class_reason"]) == {"no speed sample before the flow's end; "
                                                            "no cell sample before the flow's end"}


def test_a_text_log_going_back_is_still_exit_3(tmp_path):
    log = lab_log(tmp_path / "radio.csv", [(0.0, "M", "LTE", 1, 5), (1.0, "M", "LTE", 1, 5),
                                           (0.5, "M", "LTE", 1, 6), (2.0, "M", "LTE", 1, 6)])
    r = _hsrtcp(["analyze", "--client", DATA / "small_50k.client.pcap", "--server", DATA / "small_50k.server.pcap",
                 "--radio", log, "--radio-format", "lab", "-q", "-o", tmp_path / "out"], tmp_path)
    assert r.returncode == 3
    assert "radio.csv:4: time goes backwards for carrier M: 0.500 after 1.000 (line 3)" in r.stderr


def test_a_backward_time_in_packets_names_packets():
    """The message of the time-order check says ``packet`` for a capture (it said "line")."""
    df = conform(pl.DataFrame({"ts": [1.0, 2.0, 1.5], "carrier": ["-"] * 3, "cid": [1, 1, 1],
                               "line": [7, 9, 12], "source": ["c.pcap"] * 3}))
    with pytest.raises(RadioLogError, match=r"c\.pcap: packet 12: time goes backwards for carrier -: "
                                            r"1\.500 after 2\.000 \(packet 9\)"):
        check("c.pcap", df, at="packet")


T0 = 1_700_000_000.0
EARFCN = 1300


def test_messages_out_of_order_are_followed_in_time_order(tmp_path):
    """A handover's completion sent before its command (0.96 s late, in the window) still pairs
    with it; a message stamped before one already followed (more than the window late) is
    counted aside with its packet, and the rest still counts."""
    msgs = [(T0 + 1.0, "LTE", "DL_DCCH", rrc.lte_reconfiguration(1, target_pci=11), EARFCN),
            (T0 + 2.04, "LTE", "UL_DCCH", rrc.lte_reconfiguration_complete(2), EARFCN),   # packet 2
            (T0 + 2.0, "LTE", "DL_DCCH", rrc.lte_reconfiguration(2, target_pci=12), EARFCN),  # packet 3
            (T0 + 1.03, "LTE", "UL_DCCH", rrc.lte_reconfiguration_complete(1), EARFCN),   # packet 4
            (T0 + 6.0, "LTE", "UL_DCCH", rrc.lte_measurement_report(), EARFCN),
            # packet 6: 4.5 s late, earlier than packet 2, which T0 + 6 released
            (T0 + 1.5, "LTE", "UL_DCCH", rrc.lte_measurement_report(), EARFCN),
            (T0 + 7.0, "LTE", "UL_DCCH", rrc.lte_measurement_report(), EARFCN)]
    write_gsmtap(tmp_path / "c.pcap", msgs)
    s = read_gsmtap(tmp_path / "c.pcap")
    assert s.handoffs["ts"].to_list() == [T0 + 1.0, T0 + 2.0]
    assert s.handoffs["target_pci"].to_list() == [11, 12]
    assert s.handoffs["execution_s"].round(3).to_list() == [0.03, 0.04]
    assert s.skipped == {LATE: [1, 6]}
    assert s.problems() == [f"{tmp_path / 'c.pcap'}: 1 message left aside: {LATE} (first: packet 6); "
                            f"the other messages are read"]
    assert s.frame["ts"].is_sorted() and s.frame["ts"].n_unique() == s.frame.height
