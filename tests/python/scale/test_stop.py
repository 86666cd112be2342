"""A corpus run that is stopped (Ctrl-C to the process group, SIGTERM, SIGKILL) leaves no
process behind, no partition appears after it ended, and the inputs table agrees with the
partitions: after Ctrl-C and SIGTERM at once, after SIGKILL once the run is resumed (issue
30, item 13; docs/scale.md, "Stopping a run"). Above all the process pool, whose fork
server, resource tracker and workers outlived the run before.

The processes of a run are found by a mark in their environment (the fork server, the
resource tracker and the workers inherit it), whoever their parent is by then."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import polars as pl
import pytest

from hsrtcp.scale.pool import POOL_ENV
from hsrtcp.scale.tasks import RECORD, analyze_input, partition_dir

from .conftest import DATA, env, make_capture
from .tables import partitions

MARK = "HSRTCP_TEST_RUN_MARK"
INPUTS = 16


@pytest.fixture(scope="module")
def big_corpus(tmp_path_factory) -> Path:
    """16 distinct captures of 24 MB: long enough a run that it is still busy when the first
    partition appears."""
    root = tmp_path_factory.mktemp("big") / "corpus"
    root.mkdir()
    for i in range(INPUTS):
        make_capture(root / f"cap{i:02d}.pcap", i, 24_000_000)
    return root


def marked(mark: str) -> dict[int, str]:
    """{pid: command line} of the live processes whose environment holds the mark."""
    out = {}
    want = f"{MARK}={mark}".encode()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                if want not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{d}/cmdline", "rb") as f:
                out[int(d)] = f.read().replace(b"\0", b" ").decode(errors="replace")[:160]
        except OSError:  # ended meanwhile
            continue
    return out


def wait_gone(mark: str, deadline_s: float = 60) -> dict[int, str]:
    """The marked processes still alive after waiting up to ``deadline_s`` for them to end
    (a deadline for a failure only: a passing run returns as soon as they are gone)."""
    end = time.monotonic() + deadline_s
    while (left := marked(mark)) and time.monotonic() < end:
        time.sleep(0.05)
    return left


def start(corpus: Path, res: Path, mark: str, log: Path, pool: str = "processes") -> subprocess.Popen:
    e = dict(env(), **{MARK: mark, POOL_ENV: pool})
    with open(log, "wb") as err:
        return subprocess.Popen([sys.executable, "-m", "hsrtcp", "analyze", str(corpus), "-o", str(res), "-q",
                                 "-j", "2"], env=e, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)


def parts_done(res: Path) -> set[str]:
    """The partitions; every one is whole (has its record)."""
    parts = partitions(res)
    assert all((p / RECORD).is_file() for p in parts.values()), parts
    return set(parts)


def statuses(res: Path) -> dict[str, str | None]:
    df = pl.read_parquet(res / "inputs.parquet")
    return dict(zip(df["input"], df["status"]))


@pytest.mark.parametrize(("pool", "how"), [("processes", "sigint-group"), ("processes", "sigterm"),
                                         ("processes", "sigkill"), ("threads", "sigterm")])
def test_a_stopped_run_leaves_nothing_running(big_corpus, tmp_path, pool, how):
    res, mark, log = tmp_path / "res", uuid.uuid4().hex, tmp_path / "stderr.txt"
    p = start(big_corpus, res, mark, log, pool)
    try:
        end = time.monotonic() + 300
        while not partitions(res) and p.poll() is None and time.monotonic() < end:
            time.sleep(0.01)
        assert p.poll() is None, ("the run ended before it could be stopped", log.read_text())
        assert partitions(res), log.read_text()
        if how == "sigint-group":
            os.killpg(p.pid, signal.SIGINT)  # what Ctrl-C at a terminal does
        elif how == "sigterm":
            p.send_signal(signal.SIGTERM)
        else:
            p.kill()
        code = p.wait(timeout=120)
        at_end = parts_done(res)
        left = wait_gone(mark)
    finally:
        for pid in marked(mark):  # never leave them to the next test
            os.kill(pid, signal.SIGKILL)
        if p.poll() is None:
            p.kill()
    stderr = log.read_text()
    assert not left, (left, stderr)
    assert code == {"sigint-group": 130, "sigterm": 143, "sigkill": -9}[how], stderr
    assert "Traceback" not in stderr, stderr
    assert parts_done(res) == at_end  # nothing was renamed in after the run ended
    assert len(at_end) < INPUTS  # (it was stopped, not finished)
    if how != "sigkill":
        # a clean stop: no staging left, the table says analyzed for exactly the partitions
        assert not (res / ".staging").exists()
        st = statuses(res)
        assert {i for i, s in st.items() if s == "analyzed"} == at_end, (st, stderr)
        assert set(st.values()) <= {"analyzed", None}
    # resuming does the rest and skips what was done
    again = start(big_corpus, res, mark, tmp_path / "stderr2.txt", pool)
    assert again.wait(timeout=600) == 0, (tmp_path / "stderr2.txt").read_text()
    assert not wait_gone(mark)
    st = statuses(res)
    assert {i for i, s in st.items() if s == "skipped"} == at_end
    assert {i for i, s in st.items() if s == "analyzed"} == set(st) - at_end
    assert parts_done(res) == set(st) and len(st) == INPUTS
    assert not (res / ".staging").exists()


def test_a_task_commits_nothing_once_its_run_is_gone(tmp_path):
    """The check before the rename: a worker whose run no longer holds RESULTS (it was
    killed; its lock is free) writes no partition."""
    from hsrtcp.scale.discover import discover
    from hsrtcp.scale.lock import ResultsLock

    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.pcap").write_bytes((DATA / "nano.server.pcap").read_bytes())
    inp = discover(str(corpus))[0]
    res = tmp_path / "res"
    (res / ".staging").mkdir(parents=True)
    killed = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                            text=True, check=True)
    gone = {"pid": int(killed.stdout), "token": "x"}  # a run process that has ended
    with ResultsLock(str(res)):
        # held by this process, not by the run of the task
        assert analyze_input(inp, str(res), 30.0, {"input": inp.id}, gone)["status"] == "stopped"
    assert analyze_input(inp, str(res), 30.0, {"input": inp.id}, gone)["status"] == "stopped"  # free
    assert not os.path.exists(partition_dir(str(res), inp.id))
    assert os.listdir(res / ".staging") == []
    # the same task of a live run is committed
    here = {"pid": os.getpid(), "token": uuid.uuid4().hex}
    with ResultsLock(str(res)):
        assert analyze_input(inp, str(res), 30.0, {"input": inp.id}, here)["status"] == "done"
    assert os.path.exists(os.path.join(partition_dir(str(res), inp.id), RECORD))
