"""RESULTS on a file system that fills up during a corpus run (issue 30, item 15): the run
stops at once with exit 3 naming RESULTS and "No space left on device", keeps the partitions
it finished, removes its staging directory and writes an inputs table that agrees with the
partitions; no input gets an `unreadable` row for the full disk. Run again with room, it
does the rest. A real tmpfs of a few hundred KiB (root only)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from hsrtcp.scale.pool import POOL_ENV
from hsrtcp.scale.tasks import RECORD

from .conftest import env, make_capture
from .tables import partitions

INPUTS = 10


def block_usage(d: Path) -> int:
    return sum(os.stat(os.path.join(r, f)).st_blocks * 512 for r, _, fs in os.walk(d) for f in fs)


def run(corpus: Path, res: Path, pool: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hsrtcp", "analyze", str(corpus), "-o", str(res), "-j", "2"],
                          env=dict(env(), **{POOL_ENV: pool}), capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("pool", ["threads", "processes"])
@pytest.mark.parametrize("full", ["blocks", "inodes"])
def test_a_full_disk_stops_the_corpus_run(tmp_path, small_disk, pool, full):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(INPUTS):
        make_capture(corpus / f"cap{i:02d}.pcap", i, 1_000_000)
    # one partition, measured: the disk takes three and a half (and the run's own files)
    probe = tmp_path / "probe"
    probe.mkdir()
    os.link(corpus / "cap00.pcap", probe / "cap00.pcap")
    assert run(probe, tmp_path / "probe_res", pool).returncode == 0
    one = partitions(tmp_path / "probe_res")["cap00.pcap"]
    if full == "blocks":
        size = int(3.5 * block_usage(one)) + 64 * 1024 + 512 * INPUTS + 4 * 4096  # + the run's reserve, lock ...
        disk = small_disk(f"size={size // 4096 * 4096}")
    else:  # the root, RESULTS, its lock, reserve and staging directory, then 3.5 partitions
        disk = small_disk(f"size=64m,nr_inodes={5 + int(3.5 * (len(os.listdir(one)) + 1))}")
    res = disk / "res"

    p = run(corpus, res, pool)
    assert p.returncode == 3, p.stderr
    assert "Traceback" not in p.stderr
    error = [line for line in p.stderr.splitlines() if line.startswith("error: ")]
    assert len(error) == 1 and error[0].startswith(f"error: {res}: cannot write the results, the corpus run "
                                                   f"stopped: {res}/.staging/"), p.stderr
    # the file and the system's reason, from whichever writer hit the limit (the Rust
    # Parquet writer's ended "External: transport error" now and then when the blocks ran out)
    # a write that fails names its file ("cannot write: ..."); a staging directory that cannot be
    # made (the disk filled between two inputs) names the directory with the system's reason; a
    # temporary file that cannot be made in it (no inode left: a CI run) says so
    assert re.search(r"/\.staging/[^ ]+: (cannot write( in the output directory)?: )?No space left on device($|; )",
                     error[0]), p.stderr
    parts = partitions(res)
    assert 1 <= len(parts) < INPUTS, p.stderr
    assert all((d / RECORD).is_file() for d in parts.values())
    leftovers = [n for n in os.listdir(res) if n.startswith(".") and n != ".hsrtcp.lock"]
    assert leftovers == [], leftovers  # no .staging, no reserve, no temporary table files
    df = pl.read_parquet(res / "inputs.parquet")
    st = dict(zip(df["input"], df["status"]))
    assert {i for i, s in st.items() if s == "analyzed"} == set(parts), (st, p.stderr)
    assert set(st.values()) <= {"analyzed", None} and None in st.values()
    assert pl.read_parquet(res / "failures.parquet").height == 0  # the inputs are not at fault

    subprocess.run(["mount", "-o", "remount,size=64m,nr_inodes=10000", str(disk)], check=True)
    again = run(corpus, res, pool)
    assert again.returncode == 0, again.stderr
    df = pl.read_parquet(res / "inputs.parquet")
    st = dict(zip(df["input"], df["status"]))
    assert {i for i, s in st.items() if s == "skipped"} == set(parts)
    assert set(partitions(res)) == set(st) and len(st) == INPUTS
