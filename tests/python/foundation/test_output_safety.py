"""Issue 30 items 1, 3 and 15 (and 11's full-disk part): writing outputs safely.

- ``-o`` never replaces what is not a regular file: a character device (a node made here
  with mknod, root only) or a FIFO is written through, a symbolic link is followed, this
  process's own descriptor (``/dev/fd/1``) is written as a shell redirection would; a
  directory or a socket is refused (:mod:`hsrtcp.atomic`, one writer for every ``-o FILE``);
- no command writes into the tables of a results directory it reads (``study RES -o RES``,
  ``query``/``report -o RES/flows.parquet``), nor over files another command's manifest lists;
- a full disk (a small tmpfs mounted here, root only) is exit 3 naming the file and "No space
  left on device", and leaves no temporary file; the native Parquet writer's own error says
  why (errno, file), also when the disk is not full (a file size limit: "File too large").

Each test ran red before the fix, except where its docstring says otherwise. Inputs: the
fixture captures of tests/data (README there) and a radio log written here around the
flow's real packet times (docs/formats/radio.md, the generic CSV)."""

from __future__ import annotations

import errno
import os
import re
import resource
import shutil
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import polars as pl
import pytest

import hsrtcp
from hsrtcp.cli import main
from hsrtcp.output import MANIFEST

DATA = Path(__file__).resolve().parents[2] / "data"
SERVER = DATA / "drops_cubic.server.pcap"
CLIENT = DATA / "drops_cubic.client.pcap"
OTHERS = [DATA / "clean_200k.server.pcap", DATA / "multi_concurrent.server.pcap"]
RMAP = "time=Time:ms,carrier=Op,rat=Net,lac=TAC,cid=CI,speed=Vel:km/h,rsrp=RSRP,rsrq=RSRQ"
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (mknod, mount -t tmpfs)")
NOSPACE = "No space left on device"


def run(*args) -> int:
    """:func:`hsrtcp.cli.main` on ``args`` (the exit code; analyze ends with SystemExit)."""
    try:
        return main([os.fspath(a) for a in args])
    except SystemExit as exc:
        return exc.code


def tree(d: Path) -> dict[str, bytes | str]:
    """Every entry under ``d`` but the lock: a file's bytes, a link's target, a special file's type."""
    out: dict[str, bytes | str] = {}
    for p in sorted(d.rglob("*")):
        if p.name == ".hsrtcp.lock":
            continue
        mode = p.lstat().st_mode
        rel = str(p.relative_to(d))
        if stat.S_ISLNK(mode):
            out[rel] = "-> " + os.readlink(p)
        elif stat.S_ISREG(mode):
            out[rel] = p.read_bytes()
        elif not stat.S_ISDIR(mode):
            out[rel] = f"special {stat.S_IFMT(mode):o}"
    return out


def leftovers(d: Path) -> list[str]:
    """Temporary files of any writer, under ``d``."""
    return sorted(str(p.relative_to(d)) for p in d.rglob("*")
                  if re.search(r"\.tmp|^\.hsrtcp-(new|old|tmp)\.", p.name))


def radio_log(path: Path, start: float, end: float) -> Path:
    """Generic radio CSV every 2 ms around [start, end] at 300 km/h, one handoff in the middle."""
    first, last, mid = round(start * 1000) - 1000, round(end * 1000) + 1000, round((start + end) * 500)
    rows = ["Time,Op,Net,TAC,CI,Vel,RSRP,RSRQ"]
    rows += [f"{ms},M,LTE,1,{8 if ms >= mid else 7},300,-80,-10" for ms in range(first, last, 2)]
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.fixture(scope="module")
def res(tmp_path_factory) -> Path:
    """An analysis of one capture (read only: tests that change it work on a copy)."""
    d = tmp_path_factory.mktemp("res") / "res"
    assert run("analyze", SERVER, "-o", d, "-q") == 0
    return d


@pytest.fixture(scope="module")
def ctx_res(tmp_path_factory) -> Path:
    """A two-vantage analysis with a radio log: it has the context tables suspensions and
    coverage, whose names the study's tables share."""
    base = tmp_path_factory.mktemp("ctx")
    f = hsrtcp.analyze([CLIENT], vantage="client").flows
    log = radio_log(base / "radio.csv", float(f["first_ts"].min()), float(f["last_ts"].max()))
    d = base / "res"
    assert run("analyze", "--client", CLIENT, "--server", SERVER, "--radio", log, "--radio-map", RMAP,
               "-o", d, "-q") == 0
    assert (d / "suspensions.parquet").is_file() and (d / "coverage.parquet").is_file()
    return d


def copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".hsrtcp.lock"))
    return dst


# ---- item 1: special files ---------------------------------------------------------------------
SQL = "select flow_id, rtt_mean from flows order by flow_id"


def commands(res: Path, out: Path, fmt: str = "csv") -> dict[str, list]:
    return {"query": ["query", res, SQL, "-f", fmt, "-o", out], "report": ["report", res, "-o", out],
            "plot": ["plot", "throughput", res, "-o", out]}


@ROOT_ONLY
@pytest.mark.parametrize("command", ["query", "report", "plot"])
def test_o_writes_through_a_character_device(command, res, tmp_path, capsys):
    node = tmp_path / ("null.pdf" if command == "plot" else "null")
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # what /dev/null is
    assert run(*commands(res, node)[command]) == 0, capsys.readouterr().err
    st = node.lstat()
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3), "still the device, not a file"
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize(("command", "fmt", "magic"), [("query", "parquet", b"PAR1"), ("plot", None, b"%PDF")])
def test_o_writes_through_a_fifo_to_its_reader(command, fmt, magic, res, tmp_path, capsys):
    fifo = tmp_path / "pipe.pdf"
    os.mkfifo(fifo)
    os.link(fifo, tmp_path / "keep")  # the FIFO stays reachable even if the command replaced it
    got: list[bytes] = []

    def reader():
        with open(fifo, "rb") as f:
            got.append(f.read())

    t = threading.Thread(target=reader)
    t.start()
    code = run(*commands(res, fifo, fmt or "csv")[command])
    try:  # a reader still waiting (the command did not write to the FIFO): let it go
        os.close(os.open(tmp_path / "keep", os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass
    t.join()
    assert code == 0, capsys.readouterr().err
    assert stat.S_ISFIFO(fifo.lstat().st_mode), "still the FIFO"
    assert got and got[0].startswith(magic) and len(got[0]) > 100
    if command == "query":
        import io

        assert pl.read_parquet(io.BytesIO(got[0])).equals(hsrtcp.query.sql([res], SQL))
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("command", ["query", "report", "plot"])
def test_o_writes_through_a_symlink(command, res, tmp_path, capsys):
    target = tmp_path / "real" / "target.png"
    target.parent.mkdir()
    target.write_bytes(b"old")
    target.chmod(0o640)
    link = tmp_path / "link.png"
    link.symlink_to(os.path.relpath(target, tmp_path))
    assert run(*commands(res, link)[command]) == 0, capsys.readouterr().err
    assert link.is_symlink() and os.readlink(link) == "real/target.png", "the link stays a link"
    new = target.read_bytes()
    assert new != b"old" and new.startswith({"query": b"flow_id,", "report": b"<!DOCTYPE html",
                                             "plot": b"\x89PNG"}[command])
    assert stat.S_IMODE(target.stat().st_mode) == 0o640, "the file keeps its permissions"
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("command", ["query", "report", "plot"])
def test_o_through_a_link_into_a_missing_directory_makes_no_directory(command, res, tmp_path, capsys):
    """A dangling link is written through as a shell redirection would: where its target's
    directory is missing, nothing is made. Ran red: exit 0, the directories the link names
    made (as root anywhere, e.g. /nonexistent/dir/x.csv)."""
    link = tmp_path / "link.png"
    link.symlink_to("gone/deeper/target.png")
    assert run(*commands(res, link)[command]) == 3
    err = capsys.readouterr().err
    assert f"{link}: cannot write: links to {tmp_path}/gone/deeper/target.png, whose directory does not exist" \
        in err, err
    assert not (tmp_path / "gone").exists() and os.readlink(link) == "gone/deeper/target.png"
    assert leftovers(tmp_path) == []


def test_o_dev_fd_is_the_process_own_descriptor(res, tmp_path):
    """``-o /dev/fd/1`` writes where standard output goes, appending after a shell's ``>>``
    (before: exit 2, DuckDB could not create ``/dev/fd/.1.tmp``). ``/dev/stdout`` is the
    same path through one more link; it is not run here because the code before the fix
    replaced it, as root, for the whole machine."""
    out = tmp_path / "log.txt"
    out.write_text("first line\n")
    with open(out, "a") as f:
        p = subprocess.run([sys.executable, "-m", "hsrtcp", "query", res, "select 7 as seven", "-f", "csv",
                            "-o", "/dev/fd/1"], stdout=f, stderr=subprocess.PIPE, timeout=120)
    assert p.returncode == 0, p.stderr
    assert out.read_text() == "first line\nseven\n7\n"


def test_o_refuses_a_directory_and_a_socket(res, tmp_path, capsys):
    """(The directory was refused before too, by the rename's error; the socket was replaced.)"""
    (tmp_path / "dir.csv").mkdir()
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(os.fspath(tmp_path / "sock.csv"))
    try:
        assert run("query", res, SQL, "-f", "csv", "-o", tmp_path / "dir.csv") == 3
        assert f"{tmp_path / 'dir.csv'}: is a directory" in capsys.readouterr().err
        assert run("query", res, SQL, "-f", "csv", "-o", tmp_path / "sock.csv") == 3
        assert f"{tmp_path / 'sock.csv'}: is a socket" in capsys.readouterr().err
        assert stat.S_ISSOCK((tmp_path / "sock.csv").lstat().st_mode)
    finally:
        sock.close()
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("stop", [KeyboardInterrupt, ValueError])
def test_the_writer_removes_its_temporary_file_on_any_failure(stop, tmp_path):
    from hsrtcp.atomic import write_file

    (tmp_path / "x.csv").write_text("previous\n")

    def write(p):
        Path(p).write_text("half of it")
        raise stop("stopped")

    with pytest.raises(stop):
        write_file(tmp_path / "x.csv", write)
    assert tree(tmp_path) == {"x.csv": b"previous\n"}


def test_analysis_refuses_to_replace_a_symlinked_table(tmp_path, capsys):
    d = tmp_path / "res"
    assert run("analyze", SERVER, "-o", d, "-q") == 0
    kept = tmp_path / "kept.parquet"
    (d / "flows.parquet").rename(kept)
    (d / "flows.parquet").symlink_to(kept)
    before = tree(tmp_path)
    assert run("analyze", SERVER, "-o", d, "-q") == 3
    assert f"{d / 'flows.parquet'}: is a symbolic link" in capsys.readouterr().err
    assert tree(tmp_path) == before


# ---- item 2 (issue item 3): never into the tables of a results directory read -----------------
def test_study_refuses_the_results_directory_it_reads(ctx_res, tmp_path, capsys):
    d = copy(ctx_res, tmp_path / "res")
    before = tree(d)
    assert run("study", d, "-o", d, "-q", "--bootstrap", "0") == 2
    err = capsys.readouterr().err
    assert f"{d}: is a results directory this study reads" in err and "Traceback" not in err
    assert tree(d) == before
    assert run("study", d, "-o", tmp_path / "study", "-q", "--bootstrap", "0") == 0
    assert run("study", d, "-o", tmp_path / "again", "-q", "--bootstrap", "0") == 0, "the input still reads"


def test_study_refuses_any_analysis_directory(ctx_res, res, tmp_path, capsys):
    other = copy(res, tmp_path / "other")
    before = tree(other)
    assert run("study", ctx_res, "-o", other, "-q", "--bootstrap", "0") == 2
    assert f"{other}: is a results directory of hsrtcp analyze" in capsys.readouterr().err
    assert tree(other) == before


def test_query_and_report_never_write_a_table_they_read(res, tmp_path, capsys):
    d = copy(res, tmp_path / "res")
    (tmp_path / "alias.parquet").symlink_to(d / "flows.parquet")
    before = tree(tmp_path)
    for args in (["query", d, SQL, "-f", "parquet", "-o", d / "flows.parquet"],
                 ["query", d, SQL, "-f", "csv", "-o", tmp_path / "alias.parquet"],
                 ["query", d, SQL, "-f", "parquet", "-o", d / "extra.parquet"],
                 ["report", d, "-o", d / "flows.parquet"]):
        assert run(*args) == 3, args
        err = capsys.readouterr().err
        assert f"table of the results directory {d}, which this command reads" in err, err
    assert tree(tmp_path) == before


def test_report_refuses_a_table_it_reads_before_reading_anything(res, tmp_path, capsys):
    """The refusal comes first: with a damaged table beside it, the message is the output's,
    not the damaged table's (before, the whole page was built and only its write refused)."""
    d = copy(res, tmp_path / "res")
    (d / "events.parquet").write_bytes(b"not parquet")
    assert run("report", d, "-o", d / "flows.parquet") == 3
    err = capsys.readouterr().err
    assert f"table of the results directory {d}, which this command reads" in err, err
    assert "events.parquet" not in err, err


def test_mptcp_into_the_results_directory_leaves_its_tables(tmp_path, capsys):
    """(Passed before too: the metrics' names never collided with a table; now the four are
    written together with a manifest of their own.)"""
    d = tmp_path / "res"
    assert run("analyze", DATA / "mptcp" / "two_paths.client.pcap", "--vantage", "server", "-o", d, "-q") == 0
    before = tree(d)
    assert run("mptcp", d, "-o", d) == 0, capsys.readouterr().err
    after = tree(d)
    assert {n: after[n] for n in before} == before
    written = ["mptcp_instances.parquet", "mptcp_paths.parquet", "mptcp_kt.parquet", "mptcp_rates.parquet"]
    assert sorted(set(after) - set(before)) == sorted([*written, "hsrtcp-manifest.mptcp.txt"])
    assert (d / "hsrtcp-manifest.mptcp.txt").read_text().splitlines()[1:] == written


def test_no_run_overwrites_files_another_commands_manifest_lists(ctx_res, tmp_path, capsys):
    study = tmp_path / "study"
    assert run("study", ctx_res, "-o", study, "-q", "--bootstrap", "0") == 0
    before = tree(study)
    assert "suspensions.parquet" in before
    log = next(ctx_res.parent.glob("radio.csv"))
    assert run("analyze", "--client", CLIENT, "--server", SERVER, "--radio", log, "--radio-map", RMAP,
               "-o", study, "-q") == 3
    err = capsys.readouterr().err
    assert "belongs to the files of another command" in err and "hsrtcp-manifest.study.txt" in err
    assert tree(study) == before
    assert not (study / MANIFEST).exists()


# ---- item 3 (issue items 15 and 11): a full disk -----------------------------------------------
@pytest.fixture
def disk(tmp_path):
    """A 256 KiB tmpfs, unmounted at the end."""
    d = tmp_path / "disk"
    d.mkdir()
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a tmpfs")
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", d], capture_output=True, text=True)
    if p.returncode:
        pytest.skip(f"cannot mount a tmpfs: {p.stderr.strip()}")
    try:
        yield d
    finally:
        if subprocess.run(["umount", d]).returncode:  # a file left open in it: a defect too
            subprocess.run(["umount", "-l", d], check=True)
            pytest.fail(f"{d} was busy: a file of the test's command stayed open")


def fill(d: Path, leave: int) -> None:
    """Take all the space of ``d``'s file system but ``leave`` bytes."""
    st = os.statvfs(d)
    with open(d / "filler", "ab") as f:
        f.write(b"\0" * (st.f_bavail * st.f_frsize - leave))
    st = os.statvfs(d)
    assert st.f_bavail * st.f_frsize == leave


FULL = {  # command -> (arguments, bytes left free, the file the message names)
    "analyze": (["analyze", SERVER, "-o", "{d}/res", "-q"], 4096, r"{d}/res/\w+\.parquet"),
    "analyze 3 captures": (["analyze", SERVER, *OTHERS, "-o", "{d}/res", "-q"], 40960, r"{d}/res/\w+\.parquet"),
    "analyze a pair": (["analyze", "--client", CLIENT, "--server", SERVER, "-o", "{d}/res", "-q"], 16384,
                       r"{d}/res/\w+\.parquet"),
    "query": (["query", "{res}", "select * from rtt", "-f", "csv", "-o", "{d}/q.csv"], 4096, "{d}/q.csv"),
    "query table": (["query", "{res}", "select * from rtt", "--limit", "0", "-o", "{d}/q.txt"], 4096, "{d}/q.txt"),
    "report": (["report", "{res}", "-o", "{d}/r.html"], 4096, "{d}/r.html"),
    "plot": (["plot", "throughput", "{res}", "-o", "{d}/x.pdf"], 4096, "{d}/x.pdf"),
    "study": (["study", "{ctx}", "-o", "{d}/study", "-q", "--bootstrap", "0"], 4096,
              r"{d}/(study/\w+\.(parquet|json)|hsrtcp-study-\w+/(flows|tput)-\d+\.parquet)"),
    "model fit": (["model", "fit", "{ctx}", "-o", "{d}/fit"], 4096, r"{d}/fit/model_fit\w*\.\w+"),
    "mptcp": (["mptcp", "{mp}", "-o", "{d}/mp"], 4096, r"{d}/mp/mptcp_\w+\.parquet"),
}


@pytest.mark.parametrize("command", list(FULL))
def test_full_disk_names_the_file_and_leaves_no_temporary_file(command, disk, res, ctx_res, tmp_path, capsys):
    args, leave, named = FULL[command]
    mp = tmp_path / "mp"
    if command == "mptcp":
        assert run("analyze", DATA / "mptcp" / "two_paths.client.pcap", "--vantage", "server", "-o", mp, "-q") == 0
    values = {"d": disk, "res": res, "ctx": ctx_res, "mp": mp}
    args = [a.format(**values) if isinstance(a, str) else a for a in args]
    old = disk / "r.html"  # an earlier file of the same name survives a failed write
    old.write_text("earlier report\n")
    fill(disk, leave)
    capsys.readouterr()
    assert run(*args) == 3
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err, err
    assert re.search(f"^error: {named.format(d=re.escape(str(disk)))}: cannot write: {NOSPACE}$", err, re.M), err
    assert leftovers(disk) == []
    assert old.read_text() == "earlier report\n"
    files = {str(p.relative_to(disk)) for p in disk.rglob("*") if p.is_file() and p.name != ".hsrtcp.lock"}
    assert files == {"filler", "r.html"}, "nothing half-written"


NO_BLOCK = {  # command -> arguments; each writes a set of files into a new directory {d}/out
    "analyze": ["analyze", SERVER, "-o", "{d}/out", "-q"],
    "model fit": ["model", "fit", "{ctx}", "-o", "{d}/out"],
    "scenario generate": ["scenario", "generate", DATA.parents[1] / "scenarios" / "smoke.toml", "-o", "{d}/out"],
}


@pytest.mark.parametrize("command", list(NO_BLOCK))
def test_a_disk_with_no_block_left_names_the_output_directory(command, disk, ctx_res, capsys):
    """With not one block free the first write is the pid in the output directory's lock.
    Ran red: exit 3 with a bare "error: No space left on device", no path (the lock's
    os.pwrite raised past the output set's messages)."""
    args = [a.format(d=disk, ctx=ctx_res) if isinstance(a, str) else a for a in NO_BLOCK[command]]
    fill(disk, 0)
    capsys.readouterr()
    assert run(*args) == 3
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    assert re.search(f"^error: {re.escape(str(disk))}/out/\\.hsrtcp\\.lock: cannot write: {NOSPACE}$", err, re.M), err
    assert leftovers(disk) == []


def test_the_native_writer_raises_the_system_error_naming_the_staged_file(disk):
    """``ParquetOut`` on a full disk: OSError(ENOSPC, strerror, staged file), from analyze()
    (a write failed while the capture was read) or from close() (the last writes). Ran red:
    OSError("the Parquet writer stopped (...)") or "...: External: transport error", no errno."""
    from hsrtcp import _native

    fill(disk, 4096)
    out = _native.ParquetOut(disk / "res")
    with pytest.raises(OSError) as info:
        try:
            out.analyze(_native.FileJob(SERVER, "server.pcap"))
            out.close()
        finally:
            out.abort()
    e = info.value
    assert (e.errno, e.strerror) == (errno.ENOSPC, NOSPACE), repr(e)
    assert re.fullmatch(r"\.hsrtcp-new\.\w+\.(parquet|arrows)", os.path.basename(e.filename)), repr(e)
    assert os.path.dirname(e.filename) == str(disk / "res")
    assert os.listdir(disk / "res") == []


def _limit_file_size() -> None:
    # (in the child) as `ulimit -f 16`: a write past 16 KiB fails with EFBIG; Python ignores SIGXFSZ
    resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))


@pytest.mark.parametrize("command", ["analyze", "analyze 3 captures", "analyze a pair"])
def test_a_refused_write_names_the_file_and_the_reason_on_a_disk_with_room(command, tmp_path):
    """A file size limit refuses the Parquet writer's writes (flows.parquet is over 16 KiB)
    while the disk has room, so only the writer's own error can say why. Ran red: exit 3 with
    "RES/flows.parquet: cannot write: External: transport error" (the parquet crate's footer
    writer drops the io::Error): always with one capture, now and then with three or a pair
    (when the limit was first hit by the footer)."""
    args, _, named = FULL[command]
    args = [a.format(d=tmp_path) if isinstance(a, str) else os.fspath(a) for a in args]
    p = subprocess.run([sys.executable, "-m", "hsrtcp", *args], preexec_fn=_limit_file_size,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 3, p.stderr
    assert "Traceback" not in p.stderr
    reason = os.strerror(errno.EFBIG)
    assert re.search(f"^error: {named.format(d=re.escape(str(tmp_path)))}: cannot write: {reason}$", p.stderr,
                     re.M), p.stderr
    assert leftovers(tmp_path) == []
    assert sorted(os.listdir(tmp_path / "res")) == [".hsrtcp.lock"], "nothing half-written"
