"""G-NetTrack Pro CSV (the Irish 5G dataset's format) as a built-in radio format, the network
generation of every sample and handoff, and the strptime time unit of the generic CSV.

The real excerpt (tests/data/radio/irish-5g, GPL-3.0, lines 760-1100 of a driving log) is
read as the app wrote it; the expected numbers below were counted on the file with awk
(`cut -d, -f1` for the shared seconds, the CellID/RAWCELLID/NetworkMode columns for the
changes) and are checked against the reader."""

from __future__ import annotations

import subprocess
from datetime import datetime, timezone
from pathlib import Path

import polars as pl
import pytest

from hsrtcp.context.generation import check_generation, generation_of
from hsrtcp.context.handoffs import handoffs
from hsrtcp.context.readers import read_radio
from hsrtcp.context.schema import RadioLogError

from .logs import lab_log

ROOT = Path(__file__).resolve().parents[3]
EXCERPT = ROOT / "tests" / "data" / "radio" / "irish-5g" / "B_2020.02.14_09.38.22.lines760-1100.csv"
HEADER = EXCERPT.read_text().splitlines()[0]


def _raw() -> list[list[str]]:
    return [line.split(",") for line in EXCERPT.read_text().splitlines()[1:]]


def test_excerpt_reads_as_gnettrack_with_every_row():
    lg = read_radio(EXCERPT)  # auto: the G-NetTrack header
    assert lg.format == "gnettrack"
    f = lg.frame
    raw = _raw()
    assert f.height == len(raw) == 341
    assert f["line"].to_list() == list(range(2, 343))
    assert set(f["carrier"]) == {"B"}
    # RAWCELLID is the cell (the full E-UTRAN cell identity), LACHEX the tracking area
    assert f["cid"].to_list() == [int(r[23]) for r in raw]
    assert set(f["lac"]) == {0x9CBA}
    # NetworkMode: LTE -> 4G, 5G -> 5G NSA on the LTE anchor (rat stays LTE)
    assert set(f["rat"]) == {"LTE"}
    assert f["generation"].to_list() == ["4G" if r[6] == "LTE" else "5G NSA" for r in raw]
    assert f["speed_kmh"].to_list() == [float(r[3]) for r in raw]
    assert f["rsrq_db"].null_count() == sum(r[8] == "-" for r in raw)


def test_rows_sharing_a_second_are_spread_over_it_in_file_order():
    f = read_radio(EXCERPT).frame
    raw = _raw()
    first = datetime(2020, 2, 14, 9, 52, 7, tzinfo=timezone.utc).timestamp()
    assert f["ts"][0] == first  # naive local time read as UTC
    assert f["ts"].is_sorted() and f["ts"].n_unique() == f.height
    secs = [r[0] for r in raw]
    for i, s in enumerate(secs):
        same = [j for j, t in enumerate(secs) if t == s]
        k, n = same.index(i), len(same)
        whole = datetime.strptime(s, "%Y.%m.%d_%H.%M.%S").replace(tzinfo=timezone.utc).timestamp()
        assert f["ts"][i] == pytest.approx(whole + k / n)


def test_handoffs_of_the_excerpt_with_generations_and_types():
    h = handoffs(read_radio(EXCERPT).frame)
    raw = _raw()
    # a handoff = a row whose (cell, generation) differs from the previous row's
    changes = [i for i in range(1, len(raw)) if (raw[i][23], raw[i][6]) != (raw[i - 1][23], raw[i - 1][6])]
    assert h["line"].to_list() == [i + 2 for i in changes]
    assert h.height == 14  # awk -F, 'NR>1{k=$24","$7; if (NR>2 && k!=p) n++; p=k} END{print n}'
    gen = {"LTE": "4G", "5G": "5G NSA"}
    for row, i in zip(h.iter_rows(named=True), changes):
        assert (row["old_generation"], row["new_generation"]) == (gen[raw[i - 1][6]], gen[raw[i][6]])
        assert (row["old_cid"], row["new_cid"]) == (int(raw[i - 1][23]), int(raw[i][23]))
        want = ("inter_rat" if raw[i][6] != raw[i - 1][6] else "mcg_ho" if raw[i][6] == "5G" else "intra_rat")
        assert row["type"] == want
        assert row["system"] == ("inter" if want == "inter_rat" else "intra")
    assert h["type"].value_counts().sort("type").rows() == [("inter_rat", 8), ("intra_rat", 3), ("mcg_ho", 3)]
    # LTE <-> 5G flapping on one anchor pair within seconds: ping-pongs
    assert h["line"].filter(h["ping_pong"]).to_list() == [272, 274, 277]


def _write(tmp_path, lines, name="g.csv"):
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def test_missing_column_and_bad_timestamp_name_file_and_line(tmp_path):
    raw = EXCERPT.read_text().splitlines()
    cols = HEADER.split(",")
    no_rsrq = [",".join(c for j, c in enumerate(line.split(",")) if j != cols.index("RSRQ")) for line in raw[:5]]
    with pytest.raises(RadioLogError, match=r"g.csv:1: missing column\(s\) RSRQ: not a G-NetTrack Pro export"):
        read_radio(_write(tmp_path, no_rsrq), "gnettrack")
    bad = raw[:5]
    bad[3] = bad[3].replace("2020.02.14_09.52.0", "2020-02-14 09:52:0", 1)
    with pytest.raises(RadioLogError, match=r"g.csv:4: Timestamp '2020-02-14 09:52:0\d' does not match "
                                            r"the format %Y.%m.%d_%H.%M.%S"):
        read_radio(_write(tmp_path, bad), "gnettrack")
    bad = raw[:5]
    f = bad[2].split(",")
    f[cols.index("RSRP")] = "strong"
    bad[2] = ",".join(f)
    with pytest.raises(RadioLogError, match=r"g.csv:3: RSRP 'strong' is not a number"):
        read_radio(_write(tmp_path, bad), "gnettrack")
    back = [raw[0], raw[3], raw[1]]  # a later second before an earlier one
    with pytest.raises(RadioLogError, match=r"g.csv:3: time goes backwards for carrier B"):
        read_radio(_write(tmp_path, back), "gnettrack")


def _run(args, cwd):
    return subprocess.run([str(ROOT / ".venv" / "bin" / "hsrtcp"), *map(str, args)], capture_output=True,
                          text=True, cwd=cwd)


def _first_ts(capture: Path) -> float:
    import dpkt

    return next(iter(dpkt.pcap.Reader(open(capture, "rb"))))[0]


def test_analyze_with_a_gnettrack_log(tmp_path):
    """The excerpt put onto a capture's clock: handoffs.parquet has the generations and types;
    before, --radio-format gnettrack was a usage error and auto read the file as generic CSV,
    whose time unit could not read the timestamp (exit 3)."""
    phone = ROOT / "tests" / "data" / "data_blackout.client.pcap"
    log0 = datetime(2020, 2, 14, 9, 52, 7, tzinfo=timezone.utc).timestamp()
    offset = _first_ts(phone) - log0 - 100.0  # the capture starts 100 s into the excerpt
    r = _run(["analyze", phone, "--vantage", "client", "--radio", EXCERPT, "--radio-offset", f"{offset:.6f}",
              "-q", "-o", tmp_path / "out"], tmp_path)
    assert r.returncode == 0, r.stderr
    h = pl.read_parquet(tmp_path / "out" / "handoffs.parquet")
    assert h.height == 14 and {"old_generation", "new_generation", "type"} <= set(h.columns)
    radio = pl.read_parquet(tmp_path / "out" / "radio.parquet")
    assert set(radio["generation"]) == {"4G", "5G NSA"}
    r = _run(["analyze", phone, "--vantage", "client", "--radio", EXCERPT, "--radio-format", "gnettrack",
              "--radio-offset", f"{offset:.6f}", "-q", "-o", tmp_path / "out2"], tmp_path)
    assert r.returncode == 0, r.stderr


def test_analyze_with_a_gnettrack_log_missing_a_column_is_exit_3(tmp_path):
    raw = EXCERPT.read_text().splitlines()
    cols = HEADER.split(",")
    j = cols.index("NetworkMode")
    log = _write(tmp_path, [",".join(c for k, c in enumerate(line.split(",")) if k != j) for line in raw],
                 "drive.csv")
    phone = ROOT / "tests" / "data" / "data_blackout.client.pcap"
    r = _run(["analyze", phone, "--vantage", "client", "--radio", log, "--radio-format", "gnettrack", "-q",
              "-o", tmp_path / "out"], tmp_path)
    assert r.returncode == 3
    assert "drive.csv:1: missing column(s) NetworkMode" in r.stderr and "Traceback" not in r.stderr
    assert (tmp_path / "out" / "flows.parquet").exists() and (tmp_path / "out" / "context.parquet").exists()


def test_generic_csv_reads_a_strptime_time_format(tmp_path):
    """--radio-map time=Timestamp:%Y.%m.%d_%H.%M.%S (no time unit read it before: exit 2)."""
    log = _write(tmp_path, ["Timestamp,Operatorname,CellID,Speed",
                            "2020.02.14_09.52.07,B,5,40", "2020.02.14_09.52.08,B,5,41", "2020.02.14_09.52.09,B,6,42"])
    lg = read_radio(log, "csv", mapping={"time": ("Timestamp", "%Y.%m.%d_%H.%M.%S"), "carrier": ("Operatorname", None),
                                         "cid": ("CellID", None), "speed": ("Speed", None)})
    t = datetime(2020, 2, 14, 9, 52, 7, tzinfo=timezone.utc).timestamp()
    assert lg.frame["ts"].to_list() == [t, t + 1, t + 2]
    from hsrtcp.context.options import check_map

    assert check_map("time=Timestamp:%Y.%m.%d_%H:%M:%S,cid=CellID")["time"] == ("Timestamp", "%Y.%m.%d_%H:%M:%S")
    phone = ROOT / "tests" / "data" / "data_blackout.client.pcap"
    r = _run(["analyze", phone, "--vantage", "client", "--radio", log, "--radio-map",
              "time=Timestamp:%Y.%m.%d_%H.%M.%S,carrier=Operatorname,cid=CellID,speed=Speed", "-q",
              "-o", tmp_path / "out"], tmp_path)
    assert r.returncode == 3, r.stderr  # read, but the 2020 log overlaps no 2026 flow
    assert "no overlap with the captures" in r.stderr and "unknown unit" not in r.stderr
    bad = _write(tmp_path, ["Timestamp,CellID", "2020.02.14 09:52:07,5"], "bad.csv")
    with pytest.raises(RadioLogError, match=r"bad.csv:2: time '2020.02.14 09:52:07' does not match the format"):
        read_radio(bad, "csv", mapping={"time": ("Timestamp", "%Y.%m.%d_%H.%M.%S"), "cid": ("CellID", None)})


def test_generation_of_rat_names_and_the_lab_column(tmp_path):
    assert [generation_of(r) for r in ("LTE", "EDGE", "HSPA+", "TD-SCDMA", "NR", "nr-nsa", "5G", None)] == [
        "4G", "2G", "3G", "3G", "5G SA", "5G NSA", None, None]
    assert check_generation("5g  nsa") == "5G NSA"
    with pytest.raises(ValueError, match="is not one of 2G, 3G, 4G, 5G NSA, 5G SA"):
        check_generation("6G")
    # the lab format without the column: generation from rat; a change of rat is one of generation
    p = lab_log(tmp_path / "r.csv", [(0.0, "M", "LTE", 1, 10), (1.0, "M", "LTE", 1, 10), (2.0, "M", "EDGE", 2, 20)])
    lg = read_radio(p)
    assert lg.frame["generation"].to_list() == ["4G", "4G", "2G"]
    h = handoffs(lg.frame)
    assert h.select("old_generation", "new_generation", "type", "system").rows() == [("4G", "2G", "inter_rat", "inter")]
    # with the optional generation and arfcn columns: an SCG added on the same LTE cell is a handoff
    lines = p.read_text().splitlines()
    text = [lines[0] + ",arfcn,generation", lines[1] + ",1300,4G", lines[2] + ",1300,5G NSA"]
    q = tmp_path / "q.csv"
    q.write_text("\n".join(text) + "\n")
    h = handoffs(read_radio(q).frame)
    assert h.select("old_cid", "new_cid", "old_generation", "new_generation", "type").rows() == [
        (10, 10, "4G", "5G NSA", "inter_rat")]
    q.write_text("\n".join([text[0], text[1], text[2].replace("5G NSA", "5.5G")]) + "\n")
    with pytest.raises(RadioLogError, match=r"q.csv:3: generation: generation '5.5G' is not one of"):
        read_radio(q)
