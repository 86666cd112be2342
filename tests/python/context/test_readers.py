"""Reading radio/GPS logs: the lab format, the generic CSV with a column mapping, NMEA and
GPX tracks (generated here with pynmea2 / gpxpy from a known trajectory), and the clear
errors for bad logs (file and line, never a traceback)."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import gpxpy.gpx
import pynmea2
import pytest

from hsrtcp.context.csvlog import parse_mapping
from hsrtcp.context.gps import EARTH_RADIUS_M
from hsrtcp.context.readers import GAP_S, read_radio
from hsrtcp.context.schema import RadioLogError

from .logs import HEADER, lab_log, one_hz

T0 = 1_700_000_000.0


def test_lab_log_on_bundle_clock_and_offset(tmp_path):
    p = lab_log(tmp_path / "radio.csv", [(0.0, "M", "LTE", 1, 10), (0.0, "U", "LTE", 2, 20),
                                         (1.0, "M", "LTE", 1, 11), (1.0, "U", "EDGE", 3, 30)])
    lg = read_radio(p, t0=T0, offset_s=0.25)
    assert lg.format == "lab"
    assert lg.carriers == ["M", "U"]  # first-appearance order = the lab's path order
    assert lg.frame["ts"].to_list() == [T0 + 0.25, T0 + 0.25, T0 + 1.25, T0 + 1.25]
    assert lg.frame["line"].to_list() == [2, 3, 4, 5]
    assert lg.frame["rsrp_dbm"].to_list() == [-80.0, -80.0, -80.0, None]  # EDGE: null, not 0


def test_generic_csv_mapping_units_and_iso_times(tmp_path):
    p = tmp_path / "field.csv"
    p.write_text("Time,Lat,Lng,Vel,Op,Net,TAC,PCI,RSRP,RSRQ\n"
                 "2016-05-04T10:20:30+08:00,39.9,116.4,83.3333,CMCC,LTE,4100,17,-90,-11\n"
                 "2016-05-04T10:20:31.5+08:00,39.9,116.41,80,CMCC,LTE,4100,18,-91,-12\n")
    m = parse_mapping("time=Time:iso,lat=Lat,lon=Lng,speed=Vel:m/s,carrier=Op,rat=Net,tac=TAC,"
                      "pci=PCI,rsrp=RSRP,rsrq=RSRQ")
    lg = read_radio(p, "auto", m)
    assert lg.format == "csv"
    f = lg.frame
    t = datetime(2016, 5, 4, 2, 20, 30, tzinfo=timezone.utc).timestamp()
    assert f["ts"].to_list() == [t, t + 1.5]
    assert f["speed_kmh"].to_list() == pytest.approx([300.0, 288.0])
    assert f["lac"].to_list() == [4100, 4100] and f["cid"].to_list() == [17, 18]
    assert f["carrier"].to_list() == ["CMCC", "CMCC"]


def test_generic_csv_time_neither_epoch_nor_iso_names_its_line(tmp_path):
    p = tmp_path / "field.csv"
    p.write_text("Time,Op,Net,TAC,PCI\n2016-05-04T10:20:30+08:00,CMCC,LTE,4100,17\n"
                 "yesterday,CMCC,LTE,4100,18\n")
    m = parse_mapping("time=Time:iso,carrier=Op,rat=Net,tac=TAC,pci=PCI")
    with pytest.raises(RadioLogError, match=r"field\.csv:3: time 'yesterday' is neither epoch seconds nor "
                                            r"ISO 8601 \(e\.g\. 2016-05-04T10:20:30\.5\+08:00\)$"):
        read_radio(p, "auto", m)


def test_generic_csv_epoch_milliseconds_and_default_names(tmp_path):
    p = tmp_path / "ms.csv"
    p.write_text("timestamp,latitude,longitude,speed\n1462328430000,39.9,116.4,3.6\n1462328431000,39.9,116.4,7.2\n")
    lg = read_radio(p, "csv", parse_mapping("time=timestamp:ms"))
    assert lg.frame["ts"].to_list() == [1462328430.0, 1462328431.0]
    assert lg.frame["speed_kmh"].to_list() == [3.6, 7.2]  # km/h by default


@pytest.mark.parametrize("text, message", [
    ("speed=Vel:furlong", "unknown unit 'furlong' for speed"),
    ("time=T:minutes", "unknown unit 'minutes' for time"),
    ("height=H", "unknown field 'height'"),
    ("time", "is not FIELD=COLUMN"),
])
def test_radio_map_usage_errors(text, message):
    with pytest.raises(ValueError, match=message):
        parse_mapping(text)


def _track(n: int, v_kmh: float, dt: float = 1.0):
    """Fixes going due north from (39.0, 116.0) at v_kmh: (time, lat, lon)."""
    start = datetime(2016, 5, 4, 2, 0, 0, tzinfo=timezone.utc)
    dlat = math.degrees(v_kmh / 3.6 * dt / EARTH_RADIUS_M)
    return [(start + timedelta(seconds=i * dt), 39.0 + i * dlat, 116.0) for i in range(n)]


def _nmea_coord(x: float, pos: str, neg: str, width: int) -> tuple[str, str]:
    d = int(abs(x))
    return f"{d:0{width}d}{(abs(x) - d) * 60:07.4f}", pos if x >= 0 else neg


def test_nmea_rmc_speed_and_gga_only_derived_speed(tmp_path):
    """RMC gives 300 km/h directly (161.987 kn); a GGA-only file after one ZDA gets the speed
    from positions (haversine over time)."""
    rmc, gga = [], ["$" + str(pynmea2.ZDA("GP", "ZDA", ("020000.00", "04", "05", "2016", "00", "00")))[1:]]
    for t, lat, lon in _track(6, 300.0):
        la, ns = _nmea_coord(lat, "N", "S", 2)
        lo, ew = _nmea_coord(lon, "E", "W", 3)
        hhmmss = t.strftime("%H%M%S.00")
        rmc.append(str(pynmea2.RMC("GP", "RMC", (hhmmss, "A", la, ns, lo, ew, f"{300 / 1.852:.3f}", "0.0",
                                                  t.strftime("%d%m%y"), "", ""))))
        gga.append(str(pynmea2.GGA("GP", "GGA", (hhmmss, la, ns, lo, ew, "1", "08", "0.9", "10.0", "M",
                                                  "0.0", "M", "", ""))))
    (tmp_path / "rmc.nmea").write_text("\n".join(rmc) + "\n")
    (tmp_path / "gga.nmea").write_text("\n".join(gga) + "\n")
    a = read_radio(tmp_path / "rmc.nmea")
    assert a.format == "nmea" and len(a.frame) == 6
    assert a.frame["speed_kmh"].to_list() == pytest.approx([300.0] * 6, abs=0.01)
    b = read_radio(tmp_path / "gga.nmea")
    assert b.frame["line"].to_list() == [2, 3, 4, 5, 6, 7]
    # positions rounded to 1e-4 minutes (≈ 0.19 m) per fix: ±1 km/h at 1 s spacing
    assert b.frame["speed_kmh"].to_list() == pytest.approx([300.0] * 6, abs=1.0)
    assert b.frame["ts"][0] == datetime(2016, 5, 4, 2, 0, 0, tzinfo=timezone.utc).timestamp()


def test_nmea_bad_checksum_names_the_line(tmp_path):
    ok = "$GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W*6A"
    p = tmp_path / "bad.nmea"
    p.write_text(ok + "\n" + ok[:-2] + "6B\n")
    with pytest.raises(RadioLogError, match=r"bad\.nmea:2: not a valid NMEA sentence"):
        read_radio(p)


@pytest.mark.parametrize("at", [1, 3])
def test_nmea_non_ascii_names_its_line(tmp_path, at):
    """A byte that is not ASCII on the first line (hypothesis found "$\\x80": the message
    then read a line number not yet set) or further down: a RadioLogError naming that line."""
    ok = b"$GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W*6A"
    lines = [ok] * 4
    lines[at - 1] = b"$\xc2\x80,"
    p = tmp_path / "junk.nmea"
    p.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(RadioLogError, match=rf"junk\.nmea:{at}: not ASCII text"):
        read_radio(p, "nmea")


def test_gpx_track_speed_from_positions(tmp_path):
    g = gpxpy.gpx.GPX()
    trk = gpxpy.gpx.GPXTrack()
    seg = gpxpy.gpx.GPXTrackSegment()
    trk.segments.append(seg)
    g.tracks.append(trk)
    for t, lat, lon in _track(10, 120.0, dt=2.0):
        seg.points.append(gpxpy.gpx.GPXTrackPoint(lat, lon, time=t))
    p = tmp_path / "trip.gpx"
    p.write_text(g.to_xml())
    lg = read_radio(p)
    assert lg.format == "gpx" and lg.carriers == []
    assert lg.frame["speed_kmh"].to_list() == pytest.approx([120.0] * 10, rel=1e-6)


def test_gpx_point_without_time(tmp_path):
    p = tmp_path / "t.gpx"
    p.write_text('<?xml version="1.0"?><gpx version="1.1" creator="t" xmlns="http://www.topografix.com/GPX/1/1">'
                 '<trk><trkseg><trkpt lat="39" lon="116"><time>2016-05-04T02:00:00Z</time></trkpt>'
                 '<trkpt lat="39.001" lon="116"></trkpt></trkseg></trk></gpx>')
    with pytest.raises(RadioLogError, match=r"t\.gpx: track point 2 \(track 1, segment 1\) has no <time>"):
        read_radio(p)


@pytest.mark.parametrize("body, message", [
    ("0.000,1,2,300,M,LTE,1,10,-80,-10\n1.000,1,2,300,M,LTE,1,10,-80,-10\n1.000,1,2,300,M,LTE,1,11,-80,-10\n",
     r"r\.csv:4: duplicate time for carrier M: 1\.000 after 1\.000 \(line 3\)"),
    ("0.000,1,2,300,M,LTE,1,10,-80,-10\n2.000,1,2,300,M,LTE,1,10,-80,-10\n1.500,1,2,300,M,LTE,1,11,-80,-10\n",
     r"r\.csv:4: time goes backwards for carrier M: 1\.500 after 2\.000 \(line 3\)"),
    ("0.000,1,2,300,M,LTE,1,10,-80,-10\n1.000,1,2,fast,M,LTE,1,10,-80,-10\n",
     r"r\.csv:3: speed_kmh 'fast' is not a number"),
    ("0.000,1,2,300,M,LTE,1,10,-80,-10\n1.000,1,2,300,M,LTE,1,10,0.00001,-10\n",
     r"r\.csv:3: rsrp_dbm 1e-05 outside -140 … -44 dBm \(wrong unit\?\)"),
    ("0.000,1,2,300,M,LTE,1,10,-80,-10\n1.000,1,2,300,M,LTE,1,10\n",
     r"r\.csv:3: 8 fields, the header has 10"),
    ("0.000,1,2,300,M,LTE,1,10.5,-80,-10\n", r"r\.csv:2: cid '10\.5' is not a whole number"),
    ("", r"r\.csv: no samples"),
])
def test_bad_lab_logs_name_file_and_line(tmp_path, body, message):
    p = tmp_path / "r.csv"
    p.write_text("ts,lat,lon,speed_kmh,carrier,rat,lac,cid,rsrp_dbm,rsrq_db\n" + body)
    with pytest.raises(RadioLogError, match=message):
        read_radio(p, "lab")


def test_missing_columns_and_files(tmp_path):
    p = tmp_path / "r.csv"
    p.write_text("ts,carrier,rat\n0,M,LTE\n")
    with pytest.raises(RadioLogError, match=r"r\.csv:1: missing column\(s\) lac, cid"):
        read_radio(p, "lab")
    q = tmp_path / "g.csv"
    q.write_text("when,x\n1,2\n")
    with pytest.raises(RadioLogError, match=r"g\.csv:1: no time column"):
        read_radio(q, "csv")
    with pytest.raises(RadioLogError, match=r"g\.csv:1: no column 'Zeit'"):
        read_radio(q, "csv", parse_mapping("time=Zeit"))
    with pytest.raises(RadioLogError, match=r"nope\.csv: no such file"):
        read_radio(tmp_path / "nope.csv")


def test_gap_is_a_warning_naming_the_line(tmp_path):
    rows = one_hz([(0.0, "LTE", 1, 10)], 30, skip=(10, 23))  # 10 s, then 23 s: a 13-s hole
    lg = read_radio(lab_log(tmp_path / "r.csv", rows))
    assert len(lg.warnings) == 1
    assert lg.warnings[0].startswith(f"{tmp_path / 'r.csv'}:13: no sample of carrier M for 13.0 s")
    assert GAP_S < 13


def test_generic_csv_without_a_carrier_column_is_one_carrier(tmp_path):
    from hsrtcp.context.handoffs import handoffs

    p = tmp_path / "cells.csv"
    p.write_text("time,cid,rat\n10,1,LTE\n11,1,LTE\n12,2,LTE\n")
    lg = read_radio(p, "csv")
    assert lg.carriers == ["-"]
    assert handoffs(lg.frame).select("ts", "old_cid", "new_cid").rows() == [(12.0, 1, 2)]


def _fixes(n: int) -> list[tuple[datetime, float, float]]:
    return _track(n, 300.0)


def _nmea(path, fixes, kinds=("RMC", "GGA")):
    """An NMEA log as a receiver writes it: per fix one sentence of each of ``kinds``."""
    lines = []
    for t, lat, lon in fixes:
        la, ns = _nmea_coord(lat, "N", "S", 2)
        lo, ew = _nmea_coord(lon, "E", "W", 3)
        hhmmss = t.strftime("%H%M%S.00")
        for k in kinds:
            if k == "RMC":
                lines.append(str(pynmea2.RMC("GP", "RMC", (hhmmss, "A", la, ns, lo, ew, f"{300 / 1.852:.3f}", "0.0",
                                                            t.strftime("%d%m%y"), "", ""))))
            else:
                lines.append(str(pynmea2.GGA("GP", "GGA", (hhmmss, la, ns, lo, ew, "1", "08", "0.9", "10.0", "M",
                                                            "0.0", "M", "", ""))))
    path.write_text("\n".join(lines) + "\n")
    return path


def _gpx(path, fixes):
    g = gpxpy.gpx.GPX()
    trk = gpxpy.gpx.GPXTrack()
    seg = gpxpy.gpx.GPXTrackSegment()
    trk.segments.append(seg)
    g.tracks.append(trk)
    for t, lat, lon in fixes:
        seg.points.append(gpxpy.gpx.GPXTrackPoint(lat, lon, time=t))
    path.write_text(g.to_xml())
    return path


def _csv(path, fixes):
    path.write_text("time,lat,lon\n" + "".join(f"{t.timestamp()},{lat:.7f},{lon}\n" for t, lat, lon in fixes))
    return path


def test_nmea_rmc_and_gga_of_one_time_are_one_fix(tmp_path):
    """A receiver's RMC + GGA pair per second is one fix (the RMC, with its speed): not a
    repeated time."""
    lg = read_radio(_nmea(tmp_path / "a.nmea", _fixes(4)))
    assert lg.frame["line"].to_list() == [1, 3, 5, 7]
    assert lg.frame["speed_kmh"].to_list() == pytest.approx([300.0] * 4, abs=0.01)


@pytest.mark.parametrize("fmt, at", [("nmea", "{}:9"), ("gpx", "{}: track point 5"), ("csv", "{}:6")])
def test_a_log_concatenated_with_itself_is_rejected_alike(tmp_path, fmt, at):
    """Item 7 of issue 30: an NMEA log concatenated with itself was de-duplicated silently
    (exit 0); CSV and GPX reject it. Now the three formats say the same, naming the line
    where time goes back and the line it goes back from."""
    fixes = _fixes(4)
    p = {"nmea": _nmea, "gpx": _gpx, "csv": _csv}[fmt](tmp_path / f"twice.{fmt}", fixes + fixes)
    t_last, t_first = fixes[-1][0].timestamp(), fixes[0][0].timestamp()
    prev = {"nmea": 7, "gpx": 4, "csv": 5}[fmt]
    unit = "track point" if fmt == "gpx" else "line"  # (a GPX point is named as such on both sides)
    expect = (f"{at.format(p)}: time goes backwards: {t_first:.3f} after {t_last:.3f} ({unit} {prev}); "
              f"times must increase per carrier")
    with pytest.raises(RadioLogError) as e:
        read_radio(p, fmt)
    assert str(e.value) == expect


@pytest.mark.parametrize("fmt, at, prev", [("nmea", "{}:5", 3), ("gpx", "{}: track point 3", 2),
                                           ("csv", "{}:4", 3)])
def test_a_repeated_fix_is_a_duplicate_time_alike(tmp_path, fmt, at, prev):
    """The second fix written twice in a row: "duplicate time" naming both lines, in the
    same words for NMEA (an RMC repeated after its GGA), GPX and CSV."""
    fixes = _fixes(3)
    rows = fixes[:2] + [fixes[1]] + fixes[2:]
    if fmt == "nmea":
        p = _nmea(tmp_path / "rep.nmea", fixes)
        lines = p.read_text().splitlines()
        p.write_text("\n".join(lines[:4] + [lines[2]] + lines[4:]) + "\n")  # RMC of fix 2 again at line 5
    else:
        p = {"gpx": _gpx, "csv": _csv}[fmt](tmp_path / f"rep.{fmt}", rows)
    t = fixes[1][0].timestamp()
    with pytest.raises(RadioLogError) as e:
        read_radio(p, fmt)
    unit = "track point" if fmt == "gpx" else "line"
    assert str(e.value) == (f"{at.format(p)}: duplicate time: {t:.3f} after {t:.3f} ({unit} {prev}); "
                            f"times must increase per carrier")


def test_nmea_gga_only_repeated_time_is_a_duplicate(tmp_path):
    """GGA-only logs (no RMC to pair with): a repeated GGA time is a duplicate too."""
    z = "$" + str(pynmea2.ZDA("GP", "ZDA", ("020000.00", "04", "05", "2016", "00", "00")))[1:]
    p = _nmea(tmp_path / "g.nmea", _fixes(3), kinds=("GGA",))
    lines = p.read_text().splitlines()
    p.write_text("\n".join([z, lines[0], lines[1], lines[1], lines[2]]) + "\n")
    with pytest.raises(RadioLogError, match=r"g\.nmea:4: duplicate time: \S+ after \S+ \(line 3\)"):
        read_radio(p, "nmea")


LAB_ROW = "0.000,1,2,300,M,LTE,{lac},{cid},-80,-10\n"


@pytest.mark.parametrize("col", ["lac", "cid"])
@pytest.mark.parametrize("value, message", [
    ("18446744073709551616", "is larger than 2^63-1 (9223372036854775807)"),   # 2^64
    ("9223372036854775808", "is larger than 2^63-1 (9223372036854775807)"),    # 2^63
    ("-1", "is negative (a cell identity is >= 0; leave the field empty when it is unknown)"),
    ("0x1A2B", "is hexadecimal: give cell identities in decimal"),
    ("10.5", "is not a whole number"),
    ("1e19", "is beyond 2^53 in float notation, where it is not exact: write its digits"),
    ("ten", "is not a whole number"),
])
def test_cell_identities_out_of_int64_are_errors_naming_the_line(tmp_path, col, value, message):
    """Item 10 of issue 30: a cid or lac > 2^63 aborted (polars' Int64 conversion) before
    any table was written. Now every reader that has cells (lab radio.csv, generic CSV)
    names the file, the line and the value."""
    ok = {"lac": 1, "cid": 10}
    bad = dict(ok, **{col: value})
    lab = tmp_path / "r.csv"
    lab.write_text(HEADER + "\n" + LAB_ROW.format(**ok).replace("0.000", "1.000", 1)
                   + LAB_ROW.format(**bad).replace("0.000", "2.000", 1))
    with pytest.raises(RadioLogError) as e:
        read_radio(lab, "lab")
    assert str(e.value) == f"{lab}:3: {col} {value!r} {message}"
    gen = tmp_path / "g.csv"
    gen.write_text(f"Time,Area,Cell\n1,1,10\n2,{bad['lac']},{bad['cid']}\n")
    with pytest.raises(RadioLogError) as e:
        read_radio(gen, "csv", parse_mapping("time=Time,tac=Area,cid=Cell"))
    assert str(e.value) == f"{gen}:3: {col} ({ {'lac': 'Area', 'cid': 'Cell'}[col]}) {value!r} {message}"


def test_cell_identities_are_read_exactly(tmp_path):
    """The whole Int64 range, exactly: 2^53 + 1 went through a float before (read as 2^53);
    an exporter's ``10.0`` is 10; an empty field is null."""
    p = tmp_path / "r.csv"
    p.write_text(HEADER + "\n" + "".join(LAB_ROW.format(lac=lac, cid=cid).replace("0.000", f"{i}.000", 1)
                                        for i, (lac, cid) in enumerate([(1, 9223372036854775807),
                                                                         (2, 9007199254740993),
                                                                         ("7.0", "10.0"), ("", "")])))
    lg = read_radio(p, "lab")
    assert lg.frame["cid"].to_list() == [9223372036854775807, 9007199254740993, 10, None]
    assert lg.frame["lac"].to_list() == [1, 2, 7, None]


def test_a_mapping_for_a_log_that_is_not_csv_is_refused(tmp_path):
    """A --radio-map (radio_map) given for a log that `auto` reads as NMEA was ignored."""
    p = _nmea(tmp_path / "a.nmea", _fixes(2))
    with pytest.raises(RadioLogError, match=r"a\.nmea: a column mapping \(--radio-map, radio_map\) is for a generic "
                                            r"CSV log; this one is nmea"):
        read_radio(p, "auto", parse_mapping("time=ts"))


# Several bad values: the earliest line is named, whichever column holds it (a user mends a
# log from the top). Before, the first column in the reader's order won: lac on line 4 was
# named while line 3 held a cid too large to store; lat on line 3 while line 2's rsrq was out.
EARLIEST = [
    ("0.000,1,2,300,M,LTE,1,10,-80,-10\n1.000,1,2,300,M,LTE,1,18446744073709551615,-80,-10\n"
     "2.000,1,2,300,M,LTE,-3,10,-80,-10\n",
     r"r\.csv:3: cid '18446744073709551615' is larger than 2\^63-1"),
    ("0.000,1,2,300,M,LTE,1,10,-80,-10\n1.000,1,2,300,M,LTE,1,10,-80,-90\n2.000,91,2,300,M,LTE,1,10,-80,-10\n",
     r"r\.csv:3: rsrq_db -90 outside"),
]


@pytest.mark.parametrize("body, message", EARLIEST)
def test_several_bad_values_name_the_earliest_line(tmp_path, body, message):
    p = tmp_path / "r.csv"
    p.write_text("ts,lat,lon,speed_kmh,carrier,rat,lac,cid,rsrp_dbm,rsrq_db\n" + body)
    with pytest.raises(RadioLogError, match=message):
        read_radio(p, "lab")


@pytest.mark.parametrize("body, message", EARLIEST)
def test_several_bad_values_name_the_earliest_line_block_by_block(tmp_path, body, message):
    from hsrtcp.context.stream import scan_radio

    p = tmp_path / "r.csv"
    p.write_text("ts,lat,lon,speed_kmh,carrier,rat,lac,cid,rsrp_dbm,rsrq_db\n" + body)
    with pytest.raises(RadioLogError, match=message):
        scan_radio(p, "lab", parquet=str(tmp_path / "radio.parquet.part0"))
    q = tmp_path / "g.csv"  # the generic reader (any column names) too
    q.write_text("time,lat,lon,speed,carrier,rat,lac,cid,rsrp,rsrq\n" + body)
    with pytest.raises(RadioLogError, match=message.replace("r\\.csv", "g\\.csv").replace("cid '", "cid \\(cid\\) '")):
        read_radio(q, "csv")
