"""One check of the per-input radio options for every entry point (issue 30, item 5): the
command line's --radio-* / --carrier (a usage error, exit 2) and a corpus manifest's
columns of the same names (exit 3 naming the manifest, the line and the column, nothing
analyzed) say the same thing about the same value. Captures: the shipped example
(python/hsrtcp/examples/) and tests/data; radio logs written by tests/python/context/logs.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from hsrtcp.cli import main
from hsrtcp.cli.analyze import analyze
from hsrtcp.context.options import FORMATS, VANTAGES, OptionError, check_options
from hsrtcp.scale.manifest import read_manifest

from .logs import lab_log

ROOT = Path(__file__).resolve().parents[3]
PHONE, SERVER = ROOT / "python/hsrtcp/examples" / "phone.pcap", ROOT / "python/hsrtcp/examples" / "server.pcap"
DATA = ROOT / "tests" / "data"


@pytest.mark.parametrize("given, field, message", [
    ({"radio": "r.csv", "radio_offset": "nan"}, "radio_offset", "must be a finite number of seconds, not nan"),
    ({"radio": "r.csv", "radio_offset": float("inf")}, "radio_offset", "must be a finite number of seconds, not inf"),
    ({"radio": "r.csv", "radio_offset": "-1e400"}, "radio_offset", "must be a finite number of seconds, not -inf"),
    ({"radio": "r.csv", "radio_offset": "4 s"}, "radio_offset", "'4 s' is not a number of seconds"),
    ({"radio": "r.csv", "radio_format": "NMEA"}, "radio_format", "'NMEA' is not one of auto, lab, csv, nmea, gpx, "
     "gnettrack, gsmtap"),
    ({"radio": "r.csv", "radio_map": "time=T:minutes"}, "radio_map",
     "unknown unit 'minutes' for time (known: s, ms, us, iso or a strptime format such as %Y.%m.%d_%H.%M.%S)"),
    ({"radio": "r.csv", "radio_map": "time=T,ts=U"}, "radio_map", "time is mapped twice"),
    ({"radio": "r.csv", "radio_map": "speed=:m/s"}, "radio_map", "'speed=:m/s': no column name for speed"),
    ({"radio": "r.csv", "radio_map": "time=T", "radio_format": "nmea"}, "radio_map",
     "maps the columns of a generic CSV log (radio format csv or auto), not nmea"),
    ({"radio_offset": "3"}, "radio_offset", "applies to a radio log, and none is given"),
    ({"radio_format": "gpx"}, "radio_format", "applies to a radio log, and none is given"),
    ({"radio_map": "time=T"}, "radio_map", "applies to a radio log, and none is given"),
    ({"carrier": "  "}, "carrier", "must not be empty"),
])
def test_bad_options(given, field, message):
    with pytest.raises(OptionError) as e:
        check_options(**given)
    assert (e.value.field, str(e.value)) == (field, message)


def test_good_options_are_typed():
    assert check_options(radio="r.csv", radio_offset="-0.04", radio_map="time=T:ms", carrier=" M ") == {
        "radio": "r.csv", "radio_format": "auto", "radio_offset": -0.04, "radio_map": {"time": ("T", "ms")},
        "carrier": "M"}
    # a carrier alone is a label (a manifest's carrier column): no log needed
    assert check_options(carrier="M", radio_offset="0", radio_format="")["carrier"] == "M"


def test_click_choices_are_the_checked_lists():
    """--radio-format and --vantage are click choices: the same lists as the manifest's."""
    opts = {p.name: p for p in analyze.params}
    assert tuple(opts["radio_format"].type.choices) == FORMATS
    assert tuple(opts["vantage"].type.choices) == VANTAGES


# (column, manifest value, CLI arguments, the message both give)
SAME = [
    ("radio_offset", "nan", ["--radio-offset", "nan"], "must be a finite number of seconds, not nan"),
    ("radio_offset", "-inf", ["--radio-offset", "-inf"], "must be a finite number of seconds, not -inf"),
    ("radio_map", "speed=Vel:furlong", ["--radio-map", "speed=Vel:furlong"],
     "unknown unit 'furlong' for speed (known: km/h, kmh, m/s, mps, mph, kn, knots)"),
    ("radio_map", "time=T", ["--radio-map", "time=T", "--radio-format", "lab"],
     "maps the columns of a generic CSV log (radio format csv or auto), not lab"),
]


@pytest.mark.parametrize("column, value, args, message", SAME)
def test_cli_and_manifest_say_the_same(tmp_path, capsys, column, value, args, message):
    """Before: `radio_offset` = nan in a manifest was exit 0 (every flow unknown) while
    --radio-offset nan was exit 2. Now: exit 2 on the command line, exit 3 from the
    manifest naming its line and column, with the same words, and nothing written."""
    log = lab_log(tmp_path / "radio.csv", [(1.0, "M", "LTE", 1, 10)])
    fmt = "lab" if "--radio-format" in args else ""
    man = tmp_path / "corpus.csv"
    man.write_text("capture,vantage,radio,radio_format,radio_offset,radio_map\n"
                   f"{PHONE},client,radio.csv,{fmt},{value if column == 'radio_offset' else ''},"
                   f"{value if column == 'radio_map' else ''}\n")
    assert main(["analyze", PHONE, "--vantage", "client", "--radio", log, *args, "-q", "-o", tmp_path / "cli"]) == 2
    err = capsys.readouterr().err
    assert f"Invalid value for '--{column.replace('_', '-')}': {message}" in err, err
    assert main(["analyze", man, "-q", "-o", tmp_path / "res"]) == 3
    err = capsys.readouterr().err
    assert f"{man}:2: {column}: {message}" in err, err
    assert "Traceback" not in err
    assert not (tmp_path / "cli").exists() and not (tmp_path / "res").exists()


def _manifest(tmp_path, text: str) -> Path:
    shutil.copy(PHONE, tmp_path / "phone.pcap")
    lab_log(tmp_path / "radio.csv", [(1.0, "M", "LTE", 1, 10)])
    p = tmp_path / "corpus.csv"
    p.write_text(text)
    return p


def test_manifest_rows_are_checked_like_the_cli(tmp_path, capsys):
    """Every bad row is listed with its line (a quoted field spanning two lines and a blank
    line counted), in one message, and nothing is analyzed (exit 3). Before: an unquoted
    radio_map shifted the columns (carrier became 'speed=Speed:m/s', exit 0), and so did a
    row with too many fields; NaN and infinite offsets were taken."""
    man = _manifest(tmp_path, "capture,vantage,radio,radio_offset,radio_map,carrier,trip\n"
                              "phone.pcap,client,radio.csv,0,time=ts,speed=speed_kmh:km/h,M,T1\n"   # 2
                              "phone.pcap,client,radio.csv,inf,,M,\"a\nb\"\n"                        # 3-4
                              "\n"                                                                    # 5
                              "phone.pcap,sever,,,,,T3\n"                                            # 6
                              "phone.pcap,client,,2.5,,,T4\n"                                        # 7
                              "phone.pcap,client\n"                                                  # 8
                              "phone.pcap,client,radio.csv,0.5,time=Zeit:ms,M,T9\n")                # 9: fine
    assert main(["analyze", man, "-q", "-o", tmp_path / "res"]) == 3
    err = capsys.readouterr().err
    assert f"{man}: 5 bad row(s), nothing analyzed" in err
    for line in (f"{man}:2: 8 fields, the header has 7 (a value with commas, such as a radio_map, must be quoted)",
                 f"{man}:3: radio_offset: must be a finite number of seconds, not inf",
                 f"{man}:6: vantage: 'sever' is not one of client, server",
                 f"{man}:7: radio_offset: applies to a radio log, and none is given",
                 f"{man}:8: 2 fields, the header has 7"):
        assert line in err.splitlines(), err
    assert ":9:" not in err and not (tmp_path / "res").exists()


@pytest.mark.parametrize("header, message", [
    ("capture,radio,radio_ofset", ":1: unknown column(s) radio_ofset (the radio columns are radio, "
                                  "radio_format, radio_offset, radio_map)"),
    ("capture,radio,radio", ":1: column(s) radio appear more than once"),
    ("capture,cc,radio", ":1: column(s) cc are built-in labels columns; rename them"),
])
def test_manifest_header_problems(tmp_path, header, message):
    """A misspelt radio column would have become a label and the option gone unused."""
    man = _manifest(tmp_path, header + "\nphone.pcap,radio.csv,1\n")
    with pytest.raises(Exception) as e:
        read_manifest(str(man))
    assert e.type.__name__ == "InputError" and str(e.value) == f"{man}{message}"


def test_manifest_values_reach_the_input(tmp_path):
    man = _manifest(tmp_path, "capture,vantage,radio,radio_format,radio_offset,radio_map,carrier,trip\n"
                              "phone.pcap,client,radio.csv,csv,-0.04,\"time=ts,cid=cid\",M,T1\n")
    [inp] = read_manifest(str(man))
    assert (inp.vantage, inp.radio, inp.radio_format, inp.radio_offset, inp.radio_map, inp.carrier, inp.labels) == (
        "client", str(tmp_path / "radio.csv"), "csv", -0.04, {"time": ("ts", None), "cid": ("cid", None)}, "M",
        {"carrier": "M", "trip": "T1"})


def test_manifest_pair_rows_with_different_radio_logs_and_a_missing_carrier(tmp_path):
    """A pair whose two rows name different radio logs is a failures row (before: the
    client row's log was taken silently) and the rest runs; a row whose carrier the log
    does not have is analyzed with context unknown and a `context` failures row naming the
    carriers of the log (item 8: before, exit 0 without a word)."""
    d = tmp_path / "m"
    d.mkdir()
    for side in ("client", "server"):
        shutil.copy(DATA / f"nano.{side}.pcap", d / f"nano.{side}.pcap")
    lab_log(d / "a.csv", [(1.0, "M", "LTE", 1, 10), (1.0, "U", "LTE", 2, 20)])
    lab_log(d / "b.csv", [(1.0, "M", "LTE", 1, 10)])
    (d / "corpus.csv").write_text("capture,vantage,pair,id,radio,carrier\n"
                                  "nano.client.pcap,client,p1,,a.csv,\n"
                                  "nano.server.pcap,server,p1,,b.csv,\n"
                                  "nano.server.pcap,server,,solo,a.csv,ZZ\n")
    res = tmp_path / "res"
    assert main(["analyze", d / "corpus.csv", "-q", "-o", res]) == 3
    f = pl.read_parquet(res / "failures.parquet").sort("input")
    assert f["input"].to_list() == ["p1", "solo"]
    assert f["kind"].to_list() == ["unreadable", "context"]
    assert f["reason"][0] == (f"{d / 'corpus.csv'}: pair 'p1' (lines 2, 3): its two rows give different radio "
                              f"logs or carriers; give them on one row")
    assert f["reason"][1].startswith(f"{d / 'a.csv'}: carrier ZZ is not in the radio log, which has M, U")
    ctx = pl.read_parquet(res / "input=solo" / "context.parquet")
    assert len(ctx) == len(pl.read_parquet(res / "input=solo" / "flows.parquet")) > 0
    assert set(ctx["class_reason"]) == {"carrier ZZ not in the radio log (M, U)"}
    assert not (res / "input=p1").exists()



@pytest.mark.parametrize("args", [["--radio-offset", "5"], ["--radio-format", "gpx"]])
def test_corpus_refuses_the_radio_options_it_would_ignore(tmp_path, capsys, args):
    """--radio-offset and --radio-format with a corpus were ignored without a word (exit 0);
    like --radio and --radio-map they are per input, in the manifest."""
    man = _manifest(tmp_path, "capture\nphone.pcap\n")
    assert main(["analyze", man, *args, "-q", "-o", tmp_path / "res"]) == 2
    assert f"{args[0]} does not apply to a corpus" in capsys.readouterr().err
    assert not (tmp_path / "res").exists()
