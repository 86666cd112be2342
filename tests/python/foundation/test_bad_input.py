"""Bad input: no crash, no hang; flows read so far are kept and marked truncated; the error
names the file and the byte offset; the CLI exits with the input-error code."""

from __future__ import annotations

import subprocess
import sys

import polars as pl
import pytest

import hsrtcp
from hsrtcp.errors import InputError

from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "data"

BROKEN = DATA / "broken"


@pytest.mark.parametrize("name,needle", [
    ("wrong_magic.pcap", "offset 0"),
    ("truncated_global_header.pcap", "wrong_magic"),
    ("empty.pcap", "empty"),
])
def test_unreadable_files_report_file_and_position(name, needle):
    ds = hsrtcp.analyze(BROKEN / name)
    assert ds.flows.is_empty()
    (err,) = ds.errors
    assert name in err
    assert "byte" in err or "offset" in err or "empty" in err


def test_record_cut_keeps_previous_packets():
    ds = hsrtcp.analyze(BROKEN / "record_cut.pcap")
    cap = ds.captures.row(0, named=True)
    assert cap["packets"] == 5 and cap["truncated"]
    assert "record_cut.pcap" in cap["error"] and "574" in cap["error"]
    assert ds.flows["truncated"].to_list() == [True]


def test_absurd_caplen():
    ds = hsrtcp.analyze(BROKEN / "absurd_caplen.pcap")
    cap = ds.captures.row(0, named=True)
    assert cap["packets"] == 3 and "286" in cap["error"]


def test_garbage_link_layer_counted_per_reason():
    ds = hsrtcp.analyze(BROKEN / "garbage_linklayer.pcap")
    cap = ds.captures.row(0, named=True)
    assert cap["error"] is None
    assert cap["packets"] == 12
    # 6 damaged records. An IP length beyond the *captured* bytes is normal (snaplen), but
    # the record claiming 65535 bytes was 1514 bytes on the wire: that one is malformed.
    assert cap["malformed_packets"] + cap["other_packets"] == 6
    assert cap["tcp_packets"] == 6
    reasons = dict(kv.split("=") for kv in cap["malformed_reasons"].split(";"))
    assert {"short_link_header", "bad_ip_header_len", "bad_tcp_data_offset",
            "ip_len_exceeds_frame"} <= set(reasons)


def test_bad_pcapng_block():
    ds = hsrtcp.analyze(BROKEN / "pcapng_bad_block_length.pcapng")
    assert "128" in ds.errors[0]


def test_header_only_is_not_an_error():
    ds = hsrtcp.analyze(BROKEN / "header_only.pcap")
    assert ds.errors == [] and ds.flows.is_empty()


def test_missing_file_is_an_input_error():
    with pytest.raises(InputError, match="no such file"):
        hsrtcp.analyze(DATA / "does-not-exist.pcap")


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "hsrtcp", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=120)


def test_cli_exit_codes_and_partial_output(tmp_path):
    out = tmp_path / "out"
    p = _cli("analyze", str(BROKEN / "record_cut.pcap"), str(DATA / "clean_200k.server.pcap"),
             "-o", str(out), "-q")
    assert p.returncode == 3, p.stderr
    flows = pl.read_parquet(out / "flows.parquet")
    assert len(flows) == 2 and sorted(flows["truncated"].to_list()) == [False, True]
    assert _cli("analyze", "-o", str(out)).returncode == 2
    assert _cli("analyze", "--bogus-option").returncode == 2
    p = _cli("analyze", str(tmp_path / "nope.pcap"), "-o", str(out))
    assert p.returncode == 3 and "nope.pcap" in p.stderr
