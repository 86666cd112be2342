"""Issue 31: "events carry frame numbers too; the report shows the Wireshark display filter
that finds each one". Before, no drill-down named a frame. Witness: tshark, given the filter
the drill-down shows on the capture it names, finds those packets and only those, and each
is the event's packet (its relative seq and length are the event's bytes)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import polars as pl
import pytest

from hsrtcp.report import wireshark
from hsrtcp.report.build import build_report

TSHARK = shutil.which("tshark")


def _notes(page) -> dict[str, list[str]]:
    raw = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page.read_text(), re.S).group(1)
    return {d["flow_id"]: d["notes"] for d in json.loads(raw.replace("<\\/", "</"))["details"]}


def _filter(notes: list[str], what: str) -> tuple[str, str]:
    (note,) = [n for n in notes if f" {what}: frame.number in " in n]
    capture = re.match(r"Wireshark, (.*?): the ", note).group(1)
    return capture, note[note.index("frame.number in "):]


@pytest.mark.skipif(TSHARK is None, reason="tshark is missing (Debian package tshark)")
def test_each_retransmissions_filter_finds_its_packets_in_tshark(drops, tmp_path):
    page = tmp_path / "r.html"
    build_report(drops, None, page)
    flows = pl.read_parquet(drops / "flows.parquet")
    fid = flows.sort("retransmissions", descending=True)["flow_id"][0]
    ev = pl.read_parquet(drops / "events.parquet").filter(
        (pl.col("flow_id") == fid) & (pl.col("kind") == "retransmission"))
    checked = 0
    for cls, rows in ev.group_by("class"):
        capture, flt = _filter(_notes(page)[str(fid)], f"{rows.height:,} retransmissions ({cls[0]})")
        out = subprocess.run([TSHARK, "-r", capture, "-o", "tcp.relative_sequence_numbers:TRUE", "-Y", flt,
                              "-T", "fields", "-e", "frame.number", "-e", "tcp.seq", "-e", "tcp.len"],
                             capture_output=True, text=True, check=True).stdout
        found = {int(f): (int(s), int(s) + int(n)) for f, s, n in (ln.split("\t") for ln in out.splitlines())}
        want = {r["frame"]: (r["seq_start"], r["seq_end"]) for r in rows.iter_rows(named=True)}
        assert found == want
        checked += len(found)
    assert checked == ev.height > 0


def test_a_long_list_is_cut_and_says_how_to_get_all(monkeypatch):
    monkeypatch.setattr(wireshark, "FRAMES_MAX", 2)
    ev = pl.DataFrame({"kind": ["retransmission"] * 3, "class": ["rto"] * 3, "frame": [9, 4, 7]})
    (note,) = wireshark.display_filters(ev, "srv.pcap", 5)
    assert note.startswith("Wireshark, srv.pcap: the 3 retransmissions (rto): frame.number in {4,7} (the first 2 of 3")
    assert "where flow_id = 5 and kind = 'retransmission'" in note
    (note,) = wireshark.display_filters(ev, "srv.pcap", 5, "srv.pcap")  # a corpus: the input's own flow_id
    assert "where flow_id = 5 and input = 'srv.pcap' and kind = 'retransmission'" in note
