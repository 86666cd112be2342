"""What a corpus may hold besides capture files (issue 30, items 12 and 16): a FIFO in the
tree or a device in a manifest is a failure row, never read (a FIFO blocks, /dev/zero never
ends); a file name that is not UTF-8 is analyzed like any other, shown printable in the
tables with its exact bytes beside."""

from __future__ import annotations

import json
import os
import shutil

import polars as pl
import pytest

from hsrtcp.scale.run import run_corpus

from .conftest import DATA, hsrtcp_cli
from .tables import assert_same_results, partitions


def failures(res) -> dict[str, dict]:
    return {r["input"]: r for r in pl.read_parquet(res / "failures.parquet").iter_rows(named=True)}


def statuses(res) -> dict[str, str | None]:
    df = pl.read_parquet(res / "inputs.parquet")
    return dict(zip(df["input"], df["status"]))


def test_a_fifo_in_the_tree_is_a_failure_row_not_a_hang(corpus, tmp_path):
    os.mkfifo(corpus / "trip2" / "live.pcap")  # nobody ever writes to it
    os.mkfifo(corpus / "nobody.client.pcap")  # half of a pair, with a real server side
    shutil.copy(DATA / "nano.server.pcap", corpus / "nobody.server.pcap")
    res = tmp_path / "res"
    p = hsrtcp_cli("analyze", corpus, "-o", res, timeout=120, check=3)
    assert "Traceback" not in p.stderr
    f = failures(res)
    assert set(f) == {"trip2--live.pcap", "nobody"}, f
    for inp, name in (("trip2--live.pcap", "live.pcap"), ("nobody", "nobody.client.pcap")):
        assert f[inp]["kind"] == "unreadable"
        assert name in f[inp]["reason"] and "is a FIFO, not a regular file" in f[inp]["reason"], f[inp]
    st = statuses(res)
    assert st.pop("trip2--live.pcap") == "failed" and st.pop("nobody") == "failed"
    assert set(st.values()) == {"analyzed"} and set(partitions(res)) == set(st)
    assert not (res / ".staging").exists()


def test_a_device_or_fifo_in_a_manifest_is_a_failure_row(tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    shutil.copy(DATA / "zero_window.server.pcap", d / "solo.pcap")
    shutil.copy(DATA / "nano.server.pcap", d / "nano.pcap")
    os.mkfifo(d / "radio.csv")
    (d / "corpus.csv").write_text("capture,radio,trip\n/dev/zero,,T1\nsolo.pcap,,T1\nnano.pcap,radio.csv,T2\n")
    res = tmp_path / "res"
    p = hsrtcp_cli("analyze", d / "corpus.csv", "-o", res, "-q", timeout=120, check=3)
    assert "Traceback" not in p.stderr
    f = failures(res)
    assert set(f) == {"dev--zero", "nano.pcap"}, f
    assert f["dev--zero"]["kind"] == "unreadable"
    assert f["dev--zero"]["reason"] == "/dev/zero: is a character device, not a regular file; only regular " \
                                       "files are analyzed"
    # a radio log that is a FIFO is not read: a context problem, the flows are kept
    assert f["nano.pcap"]["kind"] == "context" and "radio.csv: is a FIFO" in f["nano.pcap"]["reason"]
    assert statuses(res) == {"dev--zero": "failed", "solo.pcap": "analyzed", "nano.pcap": "analyzed"}
    assert pl.read_parquet(partitions(res)["nano.pcap"] / "flows.parquet").height > 0


@pytest.mark.parametrize("mode", ["threads", "processes"])
def test_file_names_that_are_not_utf8_are_analyzed(corpus, tmp_path, mode):
    raw = os.fsencode(corpus) + b"/trip2/caf\xe9.pcap"
    shutil.copy(DATA / "drops_cubic.server.pcap", raw)
    for side in ("client", "server"):
        shutil.copy(DATA / f"multi_sequential.{side}.pcap", os.fsencode(corpus) + b"/\xff\xfe." + side.encode() +
                    b".pcap")
    res = tmp_path / "res"
    if mode == "threads":
        p = hsrtcp_cli("analyze", corpus, "-o", res, timeout=300, check=0)
        assert "Traceback" not in p.stderr and "surrogates" not in p.stderr, p.stderr
    else:
        assert run_corpus(str(corpus), str(res), quiet=True, workers=2, mode=mode) == 0
    assert not (res / ".staging").exists()
    df = pl.read_parquet(res / "inputs.parquet")
    odd = df.filter(pl.col("source").str.contains("\ufffd"))
    assert odd.height == 2, df
    assert set(odd["status"]) == {"analyzed"}
    # the printable name, and the exact bytes to open the files by
    by_bytes = {tuple(r["source_bytes"]): r for r in odd.iter_rows(named=True)}
    single = by_bytes[(raw,)]
    assert single["source"] == raw.decode("utf-8", "replace")
    pair = by_bytes[tuple(os.fsencode(corpus) + b"/\xff\xfe." + s + b".pcap" for s in (b"client", b"server"))]
    assert pair["kind"] == "pair"
    parts = partitions(res)
    assert set(parts) == set(df["input"])
    # the same tables as the one-input run of a copy with a plain name (but for that name)
    plain = tmp_path / "plain" / "drops_cubic.server.pcap"
    plain.parent.mkdir()
    shutil.copy(DATA / "drops_cubic.server.pcap", plain)
    ref = tmp_path / "ref"
    hsrtcp_cli("analyze", plain, "-q", "--no-plot", "-o", ref, check=0)
    got = parts[single["input"]]
    for table in ("flows", "captures"):
        a, b = pl.read_parquet(got / f"{table}.parquet"), pl.read_parquet(ref / f"{table}.parquet")
        assert set(a["capture"]) == {single["source"]} and set(b["capture"]) == {str(plain)}
        assert a.drop("capture").equals(b.drop("capture")), table
    assert_same_results(got, ref, ignore=("flows", "captures"))
    rec = json.loads((got / "_input.json").read_text(encoding="utf-8"))  # printable: no lone surrogates
    assert rec["files"] == [single["source"]]
    # a re-run skips them like any other input
    assert run_corpus(str(corpus), str(res), quiet=True, workers=2, mode=mode) == 0
    assert set(statuses(res).values()) == {"skipped"}
