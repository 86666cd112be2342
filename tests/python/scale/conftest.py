"""Fixtures of the corpus tests: a small corpus made of copies of the project's test
captures (tests/data, origin in tests/data/README.md): two client/server pairs, single
captures, a run bundle (a directory with client.pcap + server.pcap, the plain bundle
layout of docs/formats/bundle.md, made from the nano pair) and, where a test asks,
broken files from tests/data/broken."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import hsrtcp

DATA = Path(__file__).resolve().parents[2] / "data"
#: the hsrtcp the tests imported: subprocesses run the same one
PYPATH = str(Path(hsrtcp.__file__).resolve().parents[1])


def env() -> dict:
    e = dict(os.environ)
    e["PYTHONPATH"] = PYPATH + os.pathsep + e.get("PYTHONPATH", "")
    return e


def hsrtcp_cli(*args, timeout: float = 300, check: int | None = None) -> subprocess.CompletedProcess:
    p = subprocess.run([sys.executable, "-m", "hsrtcp", *map(str, args)], capture_output=True, text=True,
                       env=env(), timeout=timeout)
    if check is not None:
        assert p.returncode == check, (p.returncode, p.stdout, p.stderr)
    return p


def make_corpus(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name in ("clean_200k", "small_50k"):
        for side in ("client", "server"):
            shutil.copy(DATA / f"{name}.{side}.pcap", root / f"{name}.{side}.pcap")
    (root / "trip2").mkdir()
    shutil.copy(DATA / "multi_sequential.server.pcap", root / "trip2" / "multi_sequential.server.pcap")
    shutil.copy(DATA / "zero_window.server.pcap", root / "trip2" / "zero_window.server.pcap")
    shutil.copy(DATA / "reuse_4tuple.client.pcap", root / "trip2" / "reuse_4tuple.client.pcap")
    b = root / "bundles" / "run-0001"
    b.mkdir(parents=True)
    shutil.copy(DATA / "nano.client.pcap", b / "client.pcap")
    shutil.copy(DATA / "nano.server.pcap", b / "server.pcap")
    return root


def make_capture(path: Path, index: int, size: int, src: Path = DATA / "reno_lost_dupack.server.pcap") -> None:
    """A pcap of about ``size`` bytes: the records of ``src`` over and over, each copy later
    in time (``index`` shifts the whole file, so every file has other content)."""
    raw = src.read_bytes()
    head, body = raw[:24], raw[24:]
    assert struct.unpack("<I", head[:4])[0] == 0xA1B2C3D4  # classic little-endian, microseconds
    records, off = [], 0
    while off < len(body):
        sec, usec, incl, orig = struct.unpack_from("<IIII", body, off)
        records.append((sec, usec, body[off + 16:off + 16 + incl], orig))
        off += 16 + incl
    span = records[-1][0] - records[0][0] + 2
    with open(path, "wb") as f:
        f.write(head)
        written, copy = len(head), 0
        while written < size:
            shift = index * 1_000_000 + copy * span
            chunk = b"".join(struct.pack("<IIII", sec + shift, usec, len(data), orig) + data
                             for sec, usec, data, orig in records)
            f.write(chunk)
            written += len(chunk)
            copy += 1


@pytest.fixture
def corpus(tmp_path) -> Path:
    return make_corpus(tmp_path / "corpus")
