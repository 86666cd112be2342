"""What `hsrtcp analyze` (and hsrtcp.analyze / analyze_to) makes of its list of captures
(issue 30, items 8 and 17; docs/formats/output.md's exit codes).

- One capture given twice would count its flows twice: the same path, another spelling,
  a symlink, a hard link, a byte-identical copy — a usage error (exit 2, nothing written),
  as a file on both sides of a pair is; an input error from the Python API.
- A missing capture among existing ones is recorded like an empty one: the others' results
  are written, the captures table has its row and error, the exit code is 3.

Both parsers of the command line are run (hsrtcp.cli.quick, and click through an option the
quick one leaves to it): they must agree.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import polars as pl
import pytest

import hsrtcp
from hsrtcp.cli import main, quick
from hsrtcp.errors import InputError

DATA = Path(__file__).resolve().parents[2] / "data"
CAP = DATA / "small_50k.server.pcap"
PHONE, SERVER = DATA / "drops_cubic.client.pcap", DATA / "drops_cubic.server.pcap"
PARSERS = {"quick": [], "click": ["--radio-offset", "0"]}  # (click's parser: no radio log, no context)


def _analyze(parser: str, *args, usage_error: bool = False) -> int:
    argv = ["analyze", *map(str, args), "-q", *PARSERS[parser]]
    # each parser really runs; usage errors are click's to report (hsrtcp.cli.quick)
    assert (quick.parse(argv) is None) == (parser == "click" or usage_error)
    return main(argv)


def _twin(tmp_path: Path, how: str) -> tuple[Path, str]:
    """A capture in tmp_path and another name for the same capture."""
    a = tmp_path / "a.pcap"
    shutil.copyfile(CAP, a)
    if how == "path":
        return a, str(a)
    if how == "spelling":
        return a, f"{tmp_path}/./a.pcap"
    b = tmp_path / "b.pcap"
    if how == "symlink":
        b.symlink_to(a)
    elif how == "hardlink":
        os.link(a, b)
    else:
        shutil.copyfile(a, b)
    return a, str(b)


HOWS = ["path", "spelling", "symlink", "hardlink", "copy"]


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("parser", PARSERS)
def test_one_capture_given_twice_is_a_usage_error(tmp_path, capsys, parser, how):
    a, b = _twin(tmp_path, how)
    out = tmp_path / "out"
    assert _analyze(parser, a, b, "-o", out, usage_error=True) == 2
    err = capsys.readouterr().err
    assert "give each capture once" in err and str(a) in err
    assert ("byte-identical" in err) == (how == "copy")
    assert not out.exists()


@pytest.mark.parametrize("how", HOWS)
def test_one_capture_given_twice_is_an_input_error_in_python(tmp_path, how):
    a, b = _twin(tmp_path, how)
    with pytest.raises(InputError, match="give each capture once"):
        hsrtcp.analyze([a, b])
    with pytest.raises(InputError, match="give each capture once"):
        hsrtcp.analyze_to([a, b], tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("parser", PARSERS)
def test_a_byte_identical_copy_as_client_and_server_is_refused_like_the_same_file(tmp_path, capsys, parser):
    copy = tmp_path / "copy.pcap"
    shutil.copyfile(SERVER, copy)
    assert _analyze(parser, "--client", SERVER, "--server", copy, "-o", tmp_path / "out", usage_error=True) == 2
    err = capsys.readouterr().err
    assert f"--client {SERVER} and --server {copy} are byte-identical copies of one capture" in err
    assert not (tmp_path / "out").exists()
    with pytest.raises(InputError, match="byte-identical"):
        hsrtcp.analyze(client=SERVER, server=copy)


@pytest.mark.parametrize("parser", PARSERS)
def test_a_capture_both_alone_and_in_a_pair_is_refused(tmp_path, capsys, parser):
    assert _analyze(parser, PHONE, "--client", PHONE, "--server", SERVER, "-o", tmp_path / "out", usage_error=True) == 2
    assert "give each capture once" in capsys.readouterr().err


@pytest.mark.parametrize("parser", PARSERS)
def test_different_captures_of_one_size_and_one_server_capture_for_two_pairs_are_accepted(tmp_path, parser):
    """What is not one capture twice: equal sizes with other bytes; a server capture that
    serves two phone captures under one name (an MPTCP bundle's layout)."""
    a = tmp_path / "a.pcap"
    shutil.copyfile(CAP, a)
    data = bytearray(CAP.read_bytes())
    data[-1] ^= 0xFF  # the last payload byte
    (tmp_path / "b.pcap").write_bytes(data)
    assert _analyze(parser, a, tmp_path / "b.pcap", "-o", tmp_path / "o1") == 0
    assert pl.read_parquet(tmp_path / "o1" / "flows.parquet").height == 2
    other_phone = DATA / "small_50k.client.pcap"
    assert _analyze(parser, "--client", PHONE, "--server", SERVER, "--client", other_phone, "--server", SERVER,
                    "-o", tmp_path / "o2") == 3  # (the second pair shares no connection: its own error)
    caps = pl.read_parquet(tmp_path / "o2" / "captures.parquet")["capture"].to_list()
    assert caps == [str(PHONE), str(SERVER), str(other_phone)]  # the server capture analyzed once


@pytest.mark.parametrize("bad", ["missing", "empty"])
@pytest.mark.parametrize("parser", PARSERS)
def test_a_missing_capture_among_several_is_recorded_like_an_empty_one(tmp_path, capsys, parser, bad):
    other = tmp_path / "other.pcap"
    if bad == "empty":
        other.write_bytes(b"")
    out = tmp_path / "out"
    assert _analyze(parser, CAP, other, "-o", out) == 3
    assert f"error: {other}: " in capsys.readouterr().err
    caps = pl.read_parquet(out / "captures.parquet").to_dicts()
    assert [c["capture"] for c in caps] == [str(CAP), str(other)]
    assert caps[0]["error"] is None and caps[1]["packets"] == 0 and caps[1]["truncated"]
    assert caps[1]["error"].startswith(f"{other}: empty file (0 bytes)" if bad == "empty" else
                                       f"{other}: cannot read at byte 0: ")
    # the good capture's results as it gives them alone
    assert _analyze(parser, CAP, "-o", tmp_path / "alone") == 0
    for t in ("flows", "events", "rtt", "series"):
        assert pl.read_parquet(out / f"{t}.parquet").equals(pl.read_parquet(tmp_path / "alone" / f"{t}.parquet")), t


@pytest.mark.parametrize("parser", PARSERS)
def test_a_missing_capture_beside_a_pair_or_as_its_side_is_recorded_too(tmp_path, capsys, parser):
    missing = tmp_path / "nope.pcap"
    assert _analyze(parser, missing, "--client", PHONE, "--server", SERVER, "-o", tmp_path / "o1") == 3
    assert f"error: {missing}: " in capsys.readouterr().err
    flows = pl.read_parquet(tmp_path / "o1" / "flows.parquet")
    assert (flows["vantage"] == "matched").sum() == 1 and flows["p_d"].drop_nulls().len() == 1
    assert _analyze(parser, "--client", PHONE, "--server", missing, "-o", tmp_path / "o2") == 3
    err = capsys.readouterr().err
    assert f"error: {missing}: " in err and "in common" not in err  # the read error says it all
    caps = pl.read_parquet(tmp_path / "o2" / "captures.parquet")
    assert caps["capture"].to_list() == [str(PHONE), str(missing)] and caps["error"][1].startswith(str(missing))


def test_a_missing_capture_among_several_in_python(tmp_path):
    missing = tmp_path / "nope.pcap"
    ds = hsrtcp.analyze([CAP, missing])
    assert len(ds.errors) == 1 and ds.errors[0].startswith(f"{missing}: ")
    assert ds.flows.height == 1 and ds.captures.height == 2
    w = hsrtcp.analyze_to([CAP, missing], tmp_path / "out")
    assert w.errors == ds.errors and pl.read_parquet(tmp_path / "out" / "flows.parquet").height == 1


@pytest.mark.parametrize("parser", PARSERS)
def test_no_existing_capture_at_all_writes_nothing(tmp_path, capsys, parser):
    """Nothing to analyze: an earlier run's results in the directory stay."""
    out = tmp_path / "out"
    assert _analyze(parser, CAP, "-o", out) == 0
    before = (out / "flows.parquet").read_bytes()
    a, b = tmp_path / "a.pcap", tmp_path / "b.pcap"
    assert _analyze(parser, a, b, "-o", out) == 3
    assert f"error: {a}: no such file; {b}: no such file" in capsys.readouterr().err
    assert (out / "flows.parquet").read_bytes() == before


def test_a_vantage_list_beside_a_run_bundle_needs_one_entry_per_path(tmp_path):
    """hsrtcp.analyze splits its paths with pair.split_inputs, like the command line: a run
    bundle among the paths still takes its place in a per-path vantage list. (Before, a list
    one short dropped the capture after the bundle without a word: the zip of paths and
    vantages stopped at the bundle.)"""
    bundle = tmp_path / "run"
    bundle.mkdir()
    shutil.copy(PHONE, bundle / "client.pcap")
    shutil.copy(SERVER, bundle / "server.pcap")
    with pytest.raises(ValueError, match="vantage needs one entry per capture"):
        hsrtcp.analyze([bundle, CAP], vantage=["server"])
    ds = hsrtcp.analyze([bundle, CAP], vantage=[None, "server"])
    assert ds.captures["capture"].to_list() == [str(bundle / "client.pcap"), str(bundle / "server.pcap"), str(CAP)]
    assert ds.flows.filter(pl.col("capture") == str(CAP))["vantage"].to_list() == ["server"]
