"""`hsrtcp analyze --radio ...` end to end on the shipped example captures (python/hsrtcp/examples/, one
download seen from the phone and the server) with radio logs written here around the
flow's real packet times: the context tables are written, every flow keeps a context row,
and bad radio logs exit 3 with file and line while the flows are still written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

import hsrtcp
from hsrtcp.cli import quick

from .logs import lab_log

ROOT = Path(__file__).resolve().parents[3]
# the subprocesses run the hsrtcp this test imported
PKG_ROOT = str(Path(hsrtcp.__file__).resolve().parents[1])
PHONE, SERVER = ROOT / "python/hsrtcp/examples" / "phone.pcap", ROOT / "python/hsrtcp/examples" / "server.pcap"
TABLES = ("radio", "handoffs", "context", "suspensions", "coverage", "labels")


@pytest.fixture(scope="module")
def span():
    f = hsrtcp.analyze([PHONE], vantage="client").flows
    return float(f["first_ts"].min()), float(f["last_ts"].max())


def _run(*args, cwd):
    env = dict(os.environ, PYTHONPATH=PKG_ROOT)
    return subprocess.run([sys.executable, "-m", "hsrtcp", "analyze", *map(str, args), "-q", "--no-plot"],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


def _two_carrier_csv(path: Path, start: float, mid: float):
    """Generic CSV, epoch ms, speed in m/s: carrier U hands over once at ``mid`` (cell 7 -> 8),
    carrier M never; 83.333 m/s = 300 km/h."""
    lines = ["Time,Op,Net,TAC,CI,Vel,RSRP,RSRQ"]
    t = float(int(start) - 2)  # on the 0.25-s grid
    while t < start + 10.0:
        for op in ("M", "U"):
            cid = 8 if op == "U" and t >= mid else 7
            lines.append(f"{round(t * 1000)},{op},LTE,1,{cid},83.333,-80,-10")
        t += 0.25
    path.write_text("\n".join(lines) + "\n")
    return path


def test_pair_with_a_two_carrier_generic_csv(tmp_path, span):
    a, b = span
    mid = round((a + b) / 2 * 4) / 4  # on the 0.25-s grid, inside the flow
    log = _two_carrier_csv(tmp_path / "trip.csv", a, mid)
    rmap = "time=Time:ms,carrier=Op,rat=Net,lac=TAC,cid=CI,speed=Vel:m/s,rsrp=RSRP,rsrq=RSRQ"
    p = _run("--client", PHONE, "--server", SERVER, "--radio", log, "--radio-map", rmap, "--carrier", "U",
             "--label", "site=lab", "--label", "train=G1", "-o", "out", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    out = tmp_path / "out"
    for t in TABLES:
        assert (out / f"{t}.parquet").exists()
    flows = pl.read_parquet(out / "flows.parquet")
    ctx = pl.read_parquet(out / "context.parquet")
    assert sorted(ctx["flow_id"]) == sorted(flows["flow_id"])  # one row per flows row, client/server/matched
    assert set(ctx["carrier"]) == {"U"}
    assert ctx["handoffs"].to_list() == [1, 1, 1]
    assert set(ctx["flow_class"]) == {"high_1_8"} and set(ctx["speed_class"]) == {"high"}
    h = pl.read_parquet(out / "handoffs.parquet")
    assert h.select("carrier", "ts", "old_cid", "new_cid").rows() == [("U", mid, 7, 8)]
    lab = pl.read_parquet(out / "labels.parquet")
    assert lab.select("site", "train").rows() == [("lab", "G1")]
    assert lab["client_capture"][0].endswith("phone.pcap")
    # phone-side flow only: one suspension row for the one handoff
    sus = pl.read_parquet(out / "suspensions.parquet")
    phone_id = flows.filter(pl.col("vantage") == "client")["flow_id"].to_list()
    assert sus["flow_id"].to_list() == phone_id and sus["handoff_ts"].to_list() == [mid]
    # the results directory loads with its context tables
    ds = hsrtcp.Dataset.read(out)
    assert set(TABLES) <= set(ds.extra)
    # without --carrier the flows stay, classed unknown
    p = _run("--client", PHONE, "--server", SERVER, "--radio", log, "--radio-map", rmap, "-o", "o2", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    c2 = pl.read_parquet(tmp_path / "o2" / "context.parquet")
    assert set(c2["flow_class"]) == {"unknown"}
    assert set(c2["class_reason"]) == {"several carriers in the log (say --carrier NAME)"}
    # a carrier the log does not have: flows written, unknown, and exit 3 naming the log's carriers
    p = _run("--client", PHONE, "--server", SERVER, "--radio", log, "--radio-map", rmap, "--carrier", "T",
             "-o", "o3", cwd=tmp_path)
    assert p.returncode == 3, p.stderr
    assert f"{log}: carrier T is not in the radio log, which has M, U: its flows are unknown" in p.stderr
    c3 = pl.read_parquet(tmp_path / "o3" / "context.parquet")
    assert set(c3["class_reason"]) == {"carrier T not in the radio log (M, U)"}


def test_single_capture_streaming_path_with_offset(tmp_path, span):
    a, b = span
    # lab-format log on a clock 3600.5 s behind the capture: one handoff 1 s into the flow
    rows = [(t - a - 1 + 0.0, "M", "LTE", 1, 10 if t < a + 1 else 11) for t in
            [a - 1 + 0.5 * i for i in range(int((b - a) * 2) + 6)]]
    log = lab_log(tmp_path / "radio.csv", [(r[0] + a - 3600.5 + 1, *r[1:]) for r in rows])
    p = _run(PHONE, "--vantage", "client", "--radio", log, "-o", "late", cwd=tmp_path)
    assert p.returncode == 3
    assert f"{log}: no overlap with the captures" in p.stderr
    assert (tmp_path / "late" / "flows.parquet").exists()
    p = _run(PHONE, "--vantage", "client", "--radio", log, "--radio-offset", "3600.5", "-o", "ok", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    ctx = pl.read_parquet(tmp_path / "ok" / "context.parquet")
    assert ctx.select("handoffs", "flow_class").rows() == [(1, "high_1_8")]


def test_bad_radio_log_exits_3_and_keeps_the_flows(tmp_path, span):
    a, _ = span
    log = lab_log(tmp_path / "radio.csv", [(a, "M", "LTE", 1, 10), (a + 1, "M", "LTE", 1, 10),
                                           (a + 0.5, "M", "LTE", 1, 11)])
    p = _run("--client", PHONE, "--server", SERVER, "--radio", log, "-o", "out", cwd=tmp_path)
    assert p.returncode == 3
    assert f"{log}:4: time goes backwards for carrier M" in p.stderr
    assert "Traceback" not in p.stderr
    flows = pl.read_parquet(tmp_path / "out" / "flows.parquet")
    ctx = pl.read_parquet(tmp_path / "out" / "context.parquet")
    assert len(ctx) == len(flows) == 3
    assert set(ctx["flow_class"]) == {"unknown"}
    assert ctx["class_reason"][0].startswith(f"radio log rejected: {log}:4: time goes backwards")


@pytest.mark.parametrize("args, message", [
    (["--radio-map", "speed=v:furlong"], "unknown unit 'furlong' for speed"),
    (["--label", "novalue"], "expected KEY=VALUE"),
    (["--label", "cc=x"], "a built-in labels column"),
])
def test_usage_errors_exit_2(tmp_path, args, message):
    p = _run(PHONE, "--radio", PHONE, *args, "-o", "out", cwd=tmp_path)
    assert p.returncode == 2 and message in p.stderr


def test_radio_options_are_left_to_click():
    for opt in ("--radio", "--radio-offset", "--radio-format", "--radio-map", "--carrier", "--label"):
        assert quick.parse(["analyze", str(PHONE), opt, "x"]) is None


def test_bundle_paths_map_to_carriers_in_log_order(tmp_path, span):
    """A two-path bundle layout (bundle.md) built from the example pair: phone_p1 and
    phone_p2 (the same phone capture twice) with one server capture, and a radio.csv relative
    to the manifest's t0 where carrier M (path 1) hands over once and U (path 2) twice."""
    a, b = span
    d = tmp_path / "run"
    (d / "capture").mkdir(parents=True)
    for name, src in (("phone_p1.pcap", PHONE), ("phone_p2.pcap", PHONE), ("server.pcap", SERVER)):
        (d / "capture" / name).write_bytes(src.read_bytes())
    # Byte-identical phone captures are refused as one capture given twice: p2's pcap header
    # gets sigfigs 1 (a field no reader uses).
    with open(d / "capture" / "phone_p2.pcap", "r+b") as f:
        f.seek(12)
        f.write(b"\x01")
    t0 = a - 1.0
    (d / "manifest.json").write_text(
        '{"run_id": "001_two_cubic_x_r1", "t0": %r, "radio": "radio.csv", "cc": "cubic", '
        '"scenario": {"name": "two"}, "flow": {"type": "size", "size_bytes": 2000000}, "mptcp": true}' % t0)
    mid = (a + b) / 2 - t0
    rows = []
    for i in range(int(b - a) + 4):
        t = float(i)
        rows.append((t, "M", "LTE", 1, 10 if t < mid else 11))
        rows.append((t, "U", "LTE", 2, 20 if t < mid - 0.5 or t >= mid + 0.5 else 21))
    lab_log(d / "radio.csv", rows)
    p = _run(d, "--label", "batch=7", "-o", "out", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    out = tmp_path / "out"
    flows = pl.read_parquet(out / "flows.parquet")
    ctx = pl.read_parquet(out / "context.parquet").join(flows.select("flow_id", "vantage", "capture"), on="flow_id")
    assert len(ctx) == len(flows)
    for r in ctx.filter(pl.col("vantage") == "client").iter_rows(named=True):
        expect = ("M", 1) if r["capture"].endswith("phone_p1.pcap") else ("U", 2)
        assert (r["carrier"], r["handoffs"]) == expect
    assert set(ctx["run_id"]) == {"001_two_cubic_x_r1"}
    lab = pl.read_parquet(out / "labels.parquet")
    assert lab.select("run_id", "scenario", "cc", "flow_type", "flow_size_bytes", "mptcp", "batch").rows() == [
        ("001_two_cubic_x_r1", "two", "cubic", "size", 2000000, True, "7")]
    cov = pl.read_parquet(out / "coverage.parquet")
    assert cov["carrier"].to_list() == ["M", "U", "*"]


def test_bundle_with_a_broken_manifest_and_a_gappy_radio_log(tmp_path, span):
    """A bundle whose manifest.json is cut and whose radio.csv (epoch times: no t0 without a
    manifest) has a 12-s hole: exit 3 naming both files, all tables written, the flows
    across the hole unknown with the reason."""
    a, b = span
    d = tmp_path / "run"
    (d / "capture").mkdir(parents=True)
    (d / "capture" / "phone_p1.pcap").write_bytes(PHONE.read_bytes())
    (d / "capture" / "server.pcap").write_bytes(SERVER.read_bytes())
    (d / "manifest.json").write_text('{"run_id": "x", "t0": ')
    rows = [(t, "M", "LTE", 1, 10) for t in (a - 10 + i for i in range(7))]    # to a - 4
    rows += [(t, "M", "LTE", 1, 10) for t in (a + 8 + i for i in range(10))]   # from a + 8
    log = lab_log(d / "radio.csv", rows)
    p = _run(d, "-o", "out", cwd=tmp_path)
    assert p.returncode == 3
    assert f"{d / 'manifest.json'}: invalid JSON at line 1" in p.stderr
    assert f"{log}:9: no sample of carrier M for 12.0 s" in p.stderr
    assert "Traceback" not in p.stderr
    ctx = pl.read_parquet(tmp_path / "out" / "context.parquet")
    assert len(ctx) == len(pl.read_parquet(tmp_path / "out" / "flows.parquet"))
    assert set(ctx["flow_class"]) == {"unknown"}
    assert {r.split(";")[0] for r in ctx["class_reason"]} == {"gps gap 12.0 s"}
    assert pl.read_parquet(tmp_path / "out" / "labels.parquet")["run_id"].to_list() == ["run"]


def _flows_kept_context_unknown(out: Path, reason_start: str) -> None:
    flows = pl.read_parquet(out / "flows.parquet")
    ctx = pl.read_parquet(out / "context.parquet")
    assert len(ctx) == len(flows) > 0
    assert set(ctx["flow_class"]) == {"unknown"}
    assert all(r.startswith(reason_start) for r in ctx["class_reason"]), ctx["class_reason"].to_list()


def _bundle(d: Path, manifest: str) -> Path:
    (d / "capture").mkdir(parents=True)
    (d / "capture" / "phone_p1.pcap").write_bytes(PHONE.read_bytes())
    (d / "capture" / "server.pcap").write_bytes(SERVER.read_bytes())
    (d / "manifest.json").write_text(manifest)
    return d


@pytest.mark.parametrize("how", ["lab", "generic", "bundle"])
@pytest.mark.parametrize("col, value", [("cid", 2**64), ("lac", 2**63), ("cid", -1)])
def test_cell_identity_beyond_int64_exits_3_with_the_tables(tmp_path, span, how, col, value):
    """Issue 30, item 10: a cid or lac > 2^63 aborted with a polars traceback (exit 4)
    before any table was written. Now: exit 3 naming file, line and value; every table is
    written and the context is unknown with the reason. For a --radio log in the lab format,
    a generic CSV and a run bundle's radio.csv."""
    a, b = span
    cells = {"lac": 1, "cid": 10}
    rows = [(a - 2 + i, "M", "LTE", cells["lac"], cells["cid"]) for i in range(int(b - a) + 5)]
    rows[3] = (rows[3][0], "M", "LTE", value if col == "lac" else 1, value if col == "cid" else 10)
    if how == "bundle":
        t0 = a - 10.0
        d = _bundle(tmp_path / "run", '{"run_id": "r", "t0": %r}' % t0)
        log = lab_log(d / "radio.csv", [(r[0] - t0, *r[1:]) for r in rows])
        args = [d]
    else:
        log = lab_log(tmp_path / "radio.csv", rows)
        args = ["--client", PHONE, "--server", SERVER, "--radio", log]
        if how == "generic":
            args += ["--radio-map", "time=ts,tac=lac,cid=cid", "--radio-format", "csv"]
    p = _run(*args, "-o", "out", cwd=tmp_path)
    assert p.returncode == 3, p.stderr
    what = col if how != "generic" else f"{col} ({col})"
    assert f"{log}:5: {what} '{value}' is " in p.stderr
    assert "Traceback" not in p.stderr
    _flows_kept_context_unknown(tmp_path / "out", f"radio log rejected: {log}:5: {what} '{value}'")


def test_nmea_log_concatenated_with_itself_exits_3(tmp_path, span):
    """Issue 30, item 7: an NMEA log written twice into one file was de-duplicated silently
    (exit 0, the second copy gone). Now it is rejected like a CSV or GPX log: exit 3 naming
    the line where time goes back; flows written, context unknown."""
    import pynmea2
    from datetime import datetime, timezone

    a, b = span
    lines = []
    for i in range(int(b - a) + 5):
        t = datetime.fromtimestamp(int(a) - 2 + i, tz=timezone.utc)
        hh = t.strftime("%H%M%S.00")
        lines.append(str(pynmea2.RMC("GP", "RMC", (hh, "A", "3900.0000", "N", "11600.0000", "E", "161.987", "0.0",
                                                    t.strftime("%d%m%y"), "", ""))))
        lines.append(str(pynmea2.GGA("GP", "GGA", (hh, "3900.0000", "N", "11600.0000", "E", "1", "08", "0.9",
                                                    "10.0", "M", "0.0", "M", "", ""))))
    once = tmp_path / "once.nmea"
    once.write_text("\n".join(lines) + "\n")
    twice = tmp_path / "twice.nmea"
    twice.write_text("\n".join(lines + lines) + "\n")
    p = _run(PHONE, "--vantage", "client", "--radio", once, "-o", "ok", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert pl.read_parquet(tmp_path / "ok" / "context.parquet")["speed_class"].to_list() == ["high"]  # RMC speed
    p = _run(PHONE, "--vantage", "client", "--radio", twice, "-o", "out", cwd=tmp_path)
    assert p.returncode == 3, p.stderr
    n = len(lines)
    assert f"{twice}:{n + 1}: time goes backwards: " in p.stderr and f"(line {n - 1})" in p.stderr
    _flows_kept_context_unknown(tmp_path / "out", f"radio log rejected: {twice}:{n + 1}: time goes backwards")


def test_carrier_absent_from_the_log_exits_3_and_gps_only_logs_take_any(tmp_path, span):
    """Issue 30, item 8: --carrier ZZ absent from the log was exit 0 without a word. Now
    exit 3 naming the carriers the log has, the flows written with context unknown. A
    GPS-only log names no carrier, so --carrier is only a label there: the speed is still
    judged (before: every flow unknown, "carrier M not in the radio log (GPS only)")."""
    a, b = span
    log = lab_log(tmp_path / "radio.csv", [(a - 2 + i, c, "LTE", 1, 10) for i in range(int(b - a) + 5)
                                           for c in ("M", "U")])
    p = _run(PHONE, "--vantage", "client", "--radio", log, "--carrier", "ZZ", "-o", "out", cwd=tmp_path)
    assert p.returncode == 3
    assert p.stderr.strip() == (f"hsrtcp: {log}: carrier ZZ is not in the radio log, which has M, U: its flows "
                                f"are unknown (--carrier, or the manifest's carrier)")
    _flows_kept_context_unknown(tmp_path / "out", "carrier ZZ not in the radio log (M, U)")
    p = _run(PHONE, "--vantage", "client", "--radio", log, "--carrier", "U", "-o", "u", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    gps = tmp_path / "gps.csv"
    gps.write_text("time,lat,lon,speed\n" + "".join(f"{a - 2 + i},39.0,116.0,300\n" for i in range(int(b - a) + 5)))
    p = _run(PHONE, "--vantage", "client", "--radio", gps, "--carrier", "M", "-o", "gps", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    ctx = pl.read_parquet(tmp_path / "gps" / "context.parquet")
    assert ctx.select("speed_class", "class_reason").rows() == [("high", "no cell information in the log (GPS only)")]


@pytest.mark.parametrize("t0, shown", [("NaN", "nan"), ('"soon"', "'soon'"), ("Infinity", "inf")])
def test_bundle_manifest_t0_must_be_a_number(tmp_path, span, t0, shown):
    """A bundle's manifest.json t0 is its radio log's clock: NaN made every radio time NaN
    (every flow unknown, "no overlap") and text crashed the addition; now exit 3 naming the
    manifest and t0, the tables written."""
    a, _ = span
    d = _bundle(tmp_path / "run", '{"run_id": "r", "t0": %s}' % t0)
    lab_log(d / "radio.csv", [(float(i), "M", "LTE", 1, 10) for i in range(5)])
    p = _run(d, "-o", "out", cwd=tmp_path)
    assert p.returncode == 3, p.stderr
    assert f"{d / 'manifest.json'}: t0 {shown} is not a finite number of epoch seconds" in p.stderr
    assert "Traceback" not in p.stderr
    _flows_kept_context_unknown(tmp_path / "out", f"radio log rejected: {d / 'manifest.json'}: t0")
