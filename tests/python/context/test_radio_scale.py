"""The CSV radio reader in bounded memory (issue 32): the file is streamed in blocks, a line
longer than the documented bound is an error naming the file and the line (not a
MemoryError), and reading block by block gives exactly the frame of the exact csv-module
path, whatever the blocks' size and wherever their ends fall (quotes, blank lines, CRLF,
whitespace, a second of a G-NetTrack log split by a block's end)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import hsrtcp
from hsrtcp.context import csvlog
from hsrtcp.context.readers import read_radio
from hsrtcp.context.schema import RadioLogError

from .logs import HEADER

ROOT = Path(__file__).resolve().parents[3]
PKG_ROOT = str(Path(hsrtcp.__file__).resolve().parents[1])
PHONE = ROOT / "python/hsrtcp/examples" / "phone.pcap"


def _rows(n: int, t0: float = 1_714_816_800.0) -> list[str]:
    out = []
    for i in range(n):
        c = "MU"[i % 2]
        rsrp = f"-{70 + i % 30}.5" if i % 7 else ""
        out.append(f"{t0 + i // 2:.3f},39.86{i % 10},116.37{i % 9},{300 - i % 50}.0,{c},LTE,{1 + i // 40},"
                   f"{100 + i // 13},{rsrp},{'' if not rsrp else '-9.5'}")
    return out


def _long_line_log(path: Path, before: int, length: int, end: bytes = b"\n") -> Path:
    with open(path, "wb") as f:
        f.write(("\n".join([HEADER, *_rows(before)]) + "\n").encode())
        f.write(b"1" * length + end)
        f.write(("\n".join(_rows(3, 1_714_900_000.0)) + "\n").encode())
    return path


@pytest.mark.parametrize("end", [b"\n", b"", b"\r\n"])
def test_a_line_over_the_bound_names_file_and_line(tmp_path, end):
    """A line one byte over MAX_LINE_BYTES (2 MiB of digits when end is empty: the rest of the
    file joins it) is a RadioLogError naming the file and its line; before, the reader read
    the whole file and failed on the field count, or ran out of memory on a 1 GB line."""
    log = _long_line_log(tmp_path / "r.csv", 5, csvlog.MAX_LINE_BYTES + 1, end)
    with pytest.raises(RadioLogError) as e:
        read_radio(log, "lab")
    assert str(e.value).startswith(f"{log}:7: line longer than {csvlog.MAX_LINE_BYTES} bytes")


def test_a_line_at_the_bound_is_read(tmp_path, monkeypatch):
    """The bound counts the line's bytes without its end (LF or CRLF): a line of exactly
    MAX_LINE_BYTES is read (and here rejected for what it holds, not for its length)."""
    monkeypatch.setattr(csvlog, "MAX_LINE_BYTES", 100)
    monkeypatch.setattr(csvlog, "BLOCK_BYTES", 64)
    for end in (b"\n", b"\r\n"):
        log = _long_line_log(tmp_path / "r.csv", 4, 100, end)
        with pytest.raises(RadioLogError, match=r"r\.csv:6: 1 fields, the header has 10"):
            read_radio(log, "lab")
        log = _long_line_log(tmp_path / "r.csv", 4, 101, end)
        with pytest.raises(RadioLogError, match=r"r\.csv:6: line longer than 100 bytes"):
            read_radio(log, "lab")


def test_cli_long_line_exits_3_and_keeps_the_flows(tmp_path):
    """hsrtcp analyze --radio with a log holding a 1.5 MiB line: exit 3, the message names the
    file and the line, the flows are written with context unknown."""
    log = _long_line_log(tmp_path / "radio.csv", 3, 3 << 19)
    env = dict(os.environ, PYTHONPATH=PKG_ROOT)
    p = subprocess.run([sys.executable, "-m", "hsrtcp", "analyze", str(PHONE), "--vantage", "client", "--radio",
                        str(log), "-o", "out", "-q", "--no-plot"], capture_output=True, text=True, cwd=tmp_path,
                       env=env, timeout=120)
    assert p.returncode == 3, p.stderr
    assert f"{log}:5: line longer than {csvlog.MAX_LINE_BYTES} bytes" in p.stderr
    assert "Traceback" not in p.stderr
    ctx = pl.read_parquet(tmp_path / "out" / "context.parquet")
    assert len(ctx) == len(pl.read_parquet(tmp_path / "out" / "flows.parquet")) > 0
    assert set(ctx["flow_class"]) == {"unknown"}


def _mixed_log(path: Path, quoted_at: int | None) -> Path:
    """300 rows with CRLF and LF ends, blank lines, whitespace around values, a line of only
    commas, and (from row ``quoted_at`` on) quoted fields, one of them over two lines."""
    lines = [HEADER]
    for i, r in enumerate(_rows(300)):
        if i % 37 == 5:
            lines.append("")
        if i % 41 == 3:
            lines.append(",,, ,,,,,,")
        if i % 23 == 4:
            r = " " + r.replace(",", " , ", 2)
        if quoted_at is not None and i >= quoted_at and i % 11 == 0:
            f = r.split(",")
            f[4] = f'"{f[4]}"'
            r = ",".join(f)
        lines.append(r + ("\r" if i % 3 == 0 else ""))
    if quoted_at is not None:
        # a quoted RAT spanning two lines: the row's line is where it starts
        f = _rows(1, 1_714_900_000.0)[0].split(",")
        f[5] = '"LT\nE"'
        lines.append(",".join(f))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("quoted_at", [None, 0, 150])
@pytest.mark.parametrize("block", [64, 200, 1000, 1 << 20])
def test_blocks_give_the_frame_of_the_exact_path(tmp_path, monkeypatch, quoted_at, block):
    """Reading in blocks of any size gives the frame the csv module gives reading the file as
    one block with every row through it (the reference: EXACT path forced)."""
    log = _mixed_log(tmp_path / "r.csv", quoted_at)
    monkeypatch.setattr(csvlog, "BLOCK_BYTES", block)
    got = csvlog.read_lab(log)
    monkeypatch.setattr(csvlog, "BLOCK_BYTES", 1 << 30)
    monkeypatch.setattr(csvlog, "_fast_rows", lambda name, piece, line, header, types=None: csvlog._exact_rows(
        name, csvlog.io.StringIO(piece.decode("utf-8"), newline=""), header, line))
    want = csvlog.read_lab(log)
    assert want.height == 300 + (quoted_at is not None)
    assert_frame_equal(got, want)
    if quoted_at is not None:
        assert want["rat"][-1] == "LT\nE"
        assert want["line"][-1] == want["line"][-2] + 1


NUMBERS = ["1714900000", "1714900000.5", "1.7149e9", "-0.0", "0", "007", "9223372036854775807",
           "9223372036854775808", "1e400", "nan", "inf", "-inf", "-3", "10.0", "0x1F", "+5", "", "1_0",
           "4.9e-324", "123456789012345678", "9007199254740993", ".5", "5.", "-.5e1", "1E5"]


@pytest.mark.parametrize("column", ["ts", "lat", "speed_kmh", "rsrp_dbm", "lac", "cid"])
def test_numbers_parsed_by_the_reader_equal_the_text_path(tmp_path, monkeypatch, column):
    """The lab columns parsed as numbers by polars' reader (issue 32, s14) give the frame, or
    the error, of the text path (strings then to_number / to_identity), whatever the
    spelling: each value alone in a log (a block each), both ways."""
    rows = _rows(3)
    header = HEADER.split(",")
    k = header.index(column)
    for v in NUMBERS:
        body = []
        for r in rows:
            f = r.split(",")
            f[k] = v
            body.append(",".join(f))
        (tmp_path / "r.csv").write_text("\n".join([HEADER, *body]) + "\n")
        got = want = None
        try:
            got = csvlog.read_lab(tmp_path / "r.csv")
        except RadioLogError as exc:
            got = str(exc)
        with monkeypatch.context() as m:
            m.setattr(csvlog, "_typed", lambda *a: None)
            try:
                want = csvlog.read_lab(tmp_path / "r.csv")
            except RadioLogError as exc:
                want = str(exc)
        if isinstance(want, str):
            assert got == want, (column, v)
        else:
            assert not isinstance(got, str), (column, v, got)
            assert_frame_equal(got, want, check_exact=True)


@pytest.mark.parametrize("block", [64, 500])
def test_errors_name_the_same_line_whatever_the_block(tmp_path, monkeypatch, block):
    monkeypatch.setattr(csvlog, "BLOCK_BYTES", block)
    rows = _rows(40)
    bad = {17: rows[17].replace(",LTE,", ",LTE,x,"), 25: rows[25].replace("39.86", "3x.86", 1)}
    for i, line in bad.items():
        body = rows[:i] + [line] + rows[i + 1:]
        (tmp_path / "r.csv").write_text("\n".join([HEADER, *body]) + "\n")
        with pytest.raises(RadioLogError, match=rf"r\.csv:{i + 2}: "):
            read_radio(tmp_path / "r.csv", "lab")
    (tmp_path / "r.csv").write_bytes(("\n".join([HEADER, *rows[:30]]) + "\n").encode() + b"1.0,\xff\n")
    with pytest.raises(RadioLogError, match=r"r\.csv:32: not UTF-8"):
        read_radio(tmp_path / "r.csv", "lab")


def test_gnettrack_second_split_by_a_block(tmp_path, monkeypatch):
    """Rows sharing a second are spread over it over the whole file, also when a block's end
    falls between them."""
    head = "Timestamp,Longitude,Latitude,Speed,Operatorname,CellID,NetworkMode,RSRP,RSRQ"
    rows = [f"2019.12.14_10.16.{30 + i // 3:02d},-8.4,51.9,50,Op,{7 + i // 6},LTE,-90,-10" for i in range(30)]
    (tmp_path / "g.csv").write_text("\n".join([head, *rows]) + "\n")
    want = read_radio(tmp_path / "g.csv", "gnettrack").frame
    monkeypatch.setattr(csvlog, "BLOCK_BYTES", 100)
    got = read_radio(tmp_path / "g.csv", "gnettrack").frame
    assert_frame_equal(got, want)
    t = got["ts"].to_list()
    assert t[:3] == pytest.approx([t[0], t[0] + 1 / 3, t[0] + 2 / 3])


def test_nmea_long_line_names_its_line(tmp_path):
    """An NMEA log whose second line runs on for more than the bound: an error naming it
    (before, the whole line was read, and pynmea2 then refused it as a bad sentence)."""
    body = "GPRMC,102030.00,A,3951.912,N,11622.716,E,162.0,90.0,040516,,,A"
    x = 0
    for ch in body:
        x ^= ord(ch)
    rmc = f"${body}*{x:02X}"
    p = tmp_path / "g.nmea"
    p.write_bytes(rmc.encode() + b"\n$GPGGA," + b"1" * (csvlog.MAX_LINE_BYTES + 1) + b"\n")
    with pytest.raises(RadioLogError, match=rf"g\.nmea:2: line longer than {csvlog.MAX_LINE_BYTES} bytes"):
        read_radio(p, "nmea")


def test_run_log_holds_numbers_not_a_python_string_per_sample(tmp_path):
    """The per-flow context keeps a run's cell samples as numeric arrays: a RAT per sample as
    a code (4 bytes), not a Python string (about 60 bytes: 10 M samples were 0.6 GB)."""
    from hsrtcp.context.classes import _RunLog, flow_context

    rows = _rows(400)
    # an EDGE stretch without RSRP and a sample with no RAT, on carrier M
    rows = [r.replace(",LTE,", ",EDGE,") if 100 <= i < 140 and r.split(",")[4] == "M" else r
            for i, r in enumerate(rows)]
    rows[201] = rows[201].replace(",LTE,", ",,")
    log = tmp_path / "radio.csv"
    log.write_text(HEADER + "\n" + "\n".join(rows) + "\n")
    frame = read_radio(log, "lab").frame.with_columns(pl.lit(None, pl.String).alias("run_id"))
    rl = _RunLog(frame, pl.DataFrame(schema={"carrier": pl.String, "ts": pl.Float64, "system": pl.String,
                                             "ping_pong": pl.Boolean}))
    for c, cols in rl.cells.items():
        for name, a in cols.items():
            assert a.dtype != object, (c, name)
            assert a.dtype.itemsize <= 8, (c, name)
    t0 = 1_714_816_800.0
    base = pl.DataFrame({"flow_id": pl.Series([1, 2, 3], dtype=pl.UInt64),
                         "first_ts": [t0 + 10, t0 + 45, t0 + 95], "last_ts": [t0 + 30, t0 + 80, t0 + 110],
                         "run_id": pl.Series([None] * 3, dtype=pl.String), "carrier": ["M", "M", "U"],
                         "preset_reason": pl.Series([None] * 3, dtype=pl.String)})
    ctx = flow_context(base, frame, None).sort("flow_id")
    # rows 100..139 are seconds 50..69: flow 2 spans LTE and EDGE, flow 1 LTE only; the
    # sample without a RAT (row 201, carrier U, second 100) is left out of flow 3's RATs
    assert ctx["rats"].to_list() == ["LTE", "EDGE,LTE", "LTE"]
    assert ctx["rat_change"].to_list() == [False, True, False]
    assert ctx["class_reason"][1] == "rat change"


def _coverage_by_pieces(frame: pl.DataFrame) -> dict[str, tuple[float, float]]:
    """Reference: the sample-and-hold pieces added one by one in Python (coverage.md)."""
    from hsrtcp.context.readers import GAP_S

    pieces = {}
    for c in frame["carrier"].unique(maintain_order=True).to_list():
        g = frame.filter(pl.col("carrier") == c).sort("ts")
        ts, rat = g["ts"].to_list(), g["rat"].to_list()
        pieces[c] = [(a, b, r == "LTE") for a, b, r in zip(ts, ts[1:], rat) if b - a <= GAP_S]
    out = {c: (float(sum(b - a for a, b, x in p if x)), float(sum(b - a for a, b, _ in p)))
           for c, p in pieces.items()}
    ev = sorted(e for p in pieces.values() for a, b, x in p for e in ((a, 1, int(x)), (b, -1, -int(x))))
    known = lte_n = 0
    total = lte = 0.0
    last = None
    for t, dk, dl in ev:
        if last is not None and t > last and known > 0:
            total += t - last
            lte += (t - last) if lte_n > 0 else 0.0
        known, lte_n, last = known + dk, lte_n + dl, t
    out["*"] = (lte, total)
    return out


def test_coverage_sums_equal_adding_pieces_one_by_one(tmp_path):
    """Coverage runs on arrays (no Python tuple per sample); its sums are the same floats as
    adding the pieces one by one, with irregular times, holes, shared instants and EDGE."""
    import random

    from hsrtcp.context.coverage import coverage

    rnd = random.Random(32)
    lines, t = [HEADER], {c: 1_714_816_800.0 for c in "MUT"}
    for i in range(3000):
        c = "MUT"[rnd.randrange(3)]
        t[c] += rnd.choice((0.37, 1.0, 1.1, 0.9137, 6.5)) if i % 97 else 12.0
        rat = "EDGE" if rnd.random() < 0.2 else "LTE"
        lines.append(f"{t[c]:.4f},,,,{c},{rat},1,{1 + i // 50},,")
    log = tmp_path / "radio.csv"
    log.write_text("\n".join(lines) + "\n")
    frame = read_radio(log, "lab").frame
    got = {r["carrier"]: (r["lte_s"], r["total_s"]) for r in coverage(frame).iter_rows(named=True)}
    want = _coverage_by_pieces(frame)
    assert got == want  # exact floats
    assert 0 < want["*"][0] < want["*"][1]
