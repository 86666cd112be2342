"""`hsrtcp report`'s progress (issue 32: "progress on long runs ... on a terminal and as plain
lines when not on one"): the real command in a subprocess on the ``drops`` results directory.
Off a terminal, one plain line per phase on stderr, nothing on stdout, and the same page as
with ``-q`` (which prints nothing); on a terminal (a pty), rich's bar instead of the lines."""

from __future__ import annotations

import re
import subprocess
import sys

from hsrtcp.testing.terminal import run_on_a_terminal

#: the report's generation time (seconds): the only bytes two runs on the same input may differ in
_GENERATED = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00")


def _report(args: list, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hsrtcp", "report", *map(str, args)], capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=600, **kw)


def test_phases_as_plain_lines_off_a_terminal(drops, tmp_path):
    page, quiet_page = tmp_path / "r.html", tmp_path / "q.html"
    # (--no-gallery: the gallery makes a study and its figures, 10-20 s here, and matplotlib
    # may warn on stderr; the bar's test below keeps it)
    p = _report([drops, "-o", page, "--top", "1", "--no-gallery"])
    assert p.returncode == 0, p.stderr.decode()
    assert p.stdout == b""
    err = p.stderr.decode().splitlines()
    lines = [x for x in err if x.startswith("report: ")]
    assert [re.sub(r", [\d.]+ s$", "", x) for x in lines] == [
        f"report: 1/5 reading flows: {drops}",
        "report: 2/5 model fit: 1 flow(s)",
        "report: 3/5 tables: flows, top flows",
        "report: 4/5 figures: drill-downs of 1 flow(s), per-class tables and CDFs",
        f"report: 5/5 writing HTML: {page}",
    ]
    seconds = [float(re.search(r", ([\d.]+) s$", x).group(1)) for x in lines]
    assert seconds == sorted(seconds)  # time since the start, at each phase's start
    assert err[-1].startswith(f"wrote {page} (") and len(err) == len(lines) + 1
    q = _report([drops, "-o", quiet_page, "--top", "1", "--no-gallery", "-q"])
    assert q.returncode == 0 and q.stdout == b"" and q.stderr == b""
    # the progress changes nothing in the page
    a, b = page.read_bytes(), quiet_page.read_bytes()
    assert len(_GENERATED.findall(a)) >= 1
    assert _GENERATED.sub(b"T", a) == _GENERATED.sub(b"T", b)


def test_phases_as_a_bar_on_a_terminal(drops, tmp_path):
    """On a terminal (stderr a pty) the phases are rich's bar, not the plain lines."""
    code, err = run_on_a_terminal([sys.executable, "-m", "hsrtcp", "report", str(drops), "-o", str(tmp_path / "r.html")],
                                  timeout=600)
    assert code == 0
    assert "writing HTML" in err  # a phase in the bar
    assert "report: 5/5" not in err  # no plain line
    assert (tmp_path / "r.html").stat().st_size > 0
