"""The quick parser of `hsrtcp analyze` (hsrtcp.cli.quick) against click's.

Both read one declaration of the options (hsrtcp.cli.analyze_options). Click stays the
reference: every command line the quick parser accepts must give the parameters click gives
for it, the click command must have exactly the declared options, and the run the quick
path starts must write the same tables as click's run of the same analysis.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hsrtcp.cli import main, quick
from hsrtcp.cli.analyze import analyze
from hsrtcp.cli.analyze_options import OPTIONS

DATA = Path(__file__).resolve().parents[2] / "data"
CAP_A = str(DATA / "multi_concurrent.server.pcap")
CAP_B = str(DATA / "ipv6_drops.client.pcap")
CAP_PAIR = (str(DATA / "drops_cubic.client.pcap"), str(DATA / "drops_cubic.server.pcap"))


def _click_params(args: list[str]) -> dict:
    """What click parses from ``analyze ARGS`` (paths as strings, repeated options as lists),
    or raises UsageError."""
    ctx = analyze.make_context("analyze", list(args))

    def plain(v):
        if isinstance(v, tuple):
            return [plain(x) for x in v]
        return str(v) if isinstance(v, Path) else v

    return {k: plain(v) for k, v in ctx.params.items()}


def test_the_click_command_has_exactly_the_declared_options():
    """One declaration (hsrtcp.cli.analyze_options.OPTIONS): the click command is built from
    it, so an option added to the command by hand, past the table, fails here."""
    options = [p for p in analyze.params if isinstance(p, click.Option)]
    assert [(tuple(p.opts), tuple(p.secondary_opts), p.name) for p in options] == \
        [(o.opts, o.off, o.name) for o in OPTIONS]
    assert [p.multiple for p in options] == [o.multiple for o in OPTIONS]
    # (the defaults: `analyze CAPTURE` parses alike below)


@pytest.mark.parametrize("args", [
    [CAP_A],
    [CAP_A, "-o", "res", "-q", "--no-plot"],
    [CAP_A, CAP_B, "--out=res", "--vantage", "server", "-j", "2", "--csv"],
    ["-q", CAP_A, "-ores", "-j3", "--plot", "--no-plot", CAP_B],
    [CAP_A, "--vantage=client", "--workers=1", "--quiet", "-o", "a", "-o", "b"],
    ["--client", CAP_A, "--server", CAP_B],
    [CAP_A, "--window", "10"],
    [CAP_A, "--packets", "-q"],
    ["--client=" + CAP_PAIR[0], "-q", "--server", CAP_PAIR[1], "--window=2.5", "--client", CAP_A,
     "--server=" + CAP_B, "-o", "res"],
])
def test_accepted_command_lines_parse_as_click_parses_them(args):
    assert quick.parse(["analyze", *args]) == _click_params(args)


@pytest.mark.parametrize("args", [
    [],                                   # click's usage error
    ["-o", "res"],                        # no capture
    [CAP_A, "--help"], [CAP_A, "-h"],
    ["--client", CAP_A],                  # click's usage error: unpaired
    ["--client", CAP_A, "--server", CAP_B, "--server", CAP_PAIR[1]],
    ["--client", CAP_A, "--server", CAP_A],  # one file on both sides: click's usage error
    [CAP_A, "--window", "0"], [CAP_A, "--window", "nan"], [CAP_A, "--window", "x"],
    [CAP_A, "--radio-offset", "0"],       # radio/GPS context
    [str(DATA)],                          # a directory: click checks for a run bundle
    [CAP_A, "--vantage", "phone"],        # click's choice error
    [CAP_A, "-j", "many"],                # click's integer error
    [CAP_A, "-o"],                        # missing value
    [CAP_A, "--bogus"], [CAP_A, "-qv"], [CAP_A, "--quiet=yes"],
    [CAP_A, "--", "-x.pcap"], ["-"],
])
def test_anything_else_is_left_to_click(args):
    assert quick.parse(["analyze", *args]) is None


def test_other_subcommands_are_left_to_click():
    assert quick.parse(["model", "pftk"]) is None
    assert quick.parse([]) is None


# Random command lines, built from the declaration (an option added to OPTIONS is drawn too):
# every spelling of every option, each with values its kind takes and values it refuses,
# separate, `--opt=VALUE` and `-oVALUE`, missing at the end, repeated; flags with a value;
# unknown options; captures that exist, are missing, are directories, globs or manifests.
_VALUES = {
    "out": ["res", "a/b", ""],
    "path": [CAP_A, CAP_B, *CAP_PAIR, "nope.pcap", ""],
    "text": ["x", "time=t:ms", ""],
    "count": ["1", "3", "0", "-1", "2.5", "many", " 2", "+2", "0x10", "1_0"],
    "seconds": ["30", "2.5", "1e-3", "0", "-1", "nan", "inf", "x", " 2", "1_0"],
    "float": ["0", "-1.5", "nan", "inf", "x"],
}
_POSITIONAL = [CAP_A, CAP_B, CAP_PAIR[0], "nope.pcap", str(DATA), "*.pcap", "corpus.csv", "-", "--"]
_UNKNOWN = ["--bogus", "--bogus=1", "-x", "-qv", "--ou", "--no-csv", "--quiet=yes", "-q1"]


def _values(option) -> list[str]:
    if option.kind == "choice":
        return [*option.choices, "phone", option.choices[0].upper(), ""]
    return _VALUES[option.kind]


def _uses(option) -> list[list[str]]:
    """Every way of giving ``option`` on a command line: each spelling, each value, each form."""
    spellings = [*option.opts, *option.off]
    if option.kind == "flag":
        return [w for s in spellings for w in ([s], [s + "=1"], [s + "="])]
    uses = [[s] for s in spellings]  # no value: last word, or the next word taken as one
    for s in spellings:
        for v in _values(option):
            uses += [[s, v], [f"{s}={v}"] if s.startswith("--") else [s + v]]  # --opt=V, -oV
    return uses


_EVERY_USE = [(o.name, use) for o in OPTIONS for use in _uses(o)]


def _agrees_with_click(args: list[str]) -> None:
    """quick.parse gives None or exactly click's parameters; a line click refuses (a usage
    error, exit 2) it leaves to click."""
    got = quick.parse(["analyze", *args])
    try:
        want = _click_params(args)
    except click.UsageError:
        assert got is None, args
        return
    assert got is None or got == want, args


def test_every_use_of_every_option_parses_as_click_parses_it():
    """Each option alone beside a capture, before it and last (where a value can be missing),
    in every spelling and form, with values its kind takes and values it refuses."""
    assert len(_EVERY_USE) > 200
    taken = 0
    for _, use in _EVERY_USE:
        for args in ([CAP_A, *use], [*use, CAP_A], [*use, CAP_A, *use]):
            _agrees_with_click(args)
            taken += quick.parse(["analyze", *args]) is not None
    assert taken > 100  # (the quick path takes many of them: the comparison is not vacuous)


_WORDS = st.one_of(st.sampled_from([use for _, use in _EVERY_USE]),
                   st.sampled_from(_POSITIONAL).map(lambda w: [w]),
                   st.sampled_from(_UNKNOWN).map(lambda w: [w]))


@settings(max_examples=40, deadline=None)
@given(data=st.data())
@pytest.mark.parametrize("option", [o.name for o in OPTIONS])
def test_random_command_lines_never_disagree_with_click(option, data):
    """Lines of several options, repeats and captures in any order; each run of this test
    puts one option of the declaration in every line, so each is drawn often."""
    mine = st.sampled_from([use for name, use in _EVERY_USE if name == option])
    chunks = data.draw(st.lists(_WORDS, max_size=6))
    chunks.insert(data.draw(st.integers(0, len(chunks))), data.draw(mine))
    if data.draw(st.booleans()):
        chunks.insert(data.draw(st.integers(0, len(chunks))), [data.draw(st.sampled_from([CAP_A, CAP_B]))])
    _agrees_with_click([w for c in chunks for w in c])


def test_quick_run_writes_what_the_click_run_writes(tmp_path):
    """`--radio-offset 0` (no radio log: no context) sends the same analysis through click."""
    assert quick.parse(["analyze", CAP_A, "-o", "x", "--radio-offset", "0"]) is None
    assert main(["analyze", CAP_A, CAP_B, "-o", str(tmp_path / "quick"), "-q", "--no-plot", "-j1"]) == 0
    # (main returns the command's exit code, like for the quick path)
    assert main(["analyze", CAP_A, CAP_B, "-o", str(tmp_path / "click"), "-q", "--no-plot", "-j1",
                 "--radio-offset", "0"]) == 0
    for t in ("flows", "events", "rtt", "series", "captures"):
        a = pl.read_parquet(tmp_path / "quick" / f"{t}.parquet")
        b = pl.read_parquet(tmp_path / "click" / f"{t}.parquet")
        assert a.height > 0 and a.equals(b), t


def test_quick_pair_run_writes_what_the_click_run_writes(tmp_path):
    """A two-vantage pair on the quick path (issue 19: start-up is a large part of the pair
    bench too) writes the tables click's run of the same pair writes."""
    pair = ["--client", CAP_PAIR[0], "--server", CAP_PAIR[1], "--window", "20"]
    assert quick.parse(["analyze", *pair, "-o", "x"]) is not None
    assert main(["analyze", *pair, "-o", str(tmp_path / "quick"), "-q", "--no-plot"]) == 0
    assert main(["analyze", *pair, "-o", str(tmp_path / "click"), "-q", "--no-plot", "--radio-offset", "0"]) == 0
    for t in ("flows", "events", "rtt", "series", "captures", "pair_stats"):
        a = pl.read_parquet(tmp_path / "quick" / f"{t}.parquet")
        b = pl.read_parquet(tmp_path / "click" / f"{t}.parquet")
        a, b = a.sort(a.columns, nulls_last=True), b.sort(b.columns, nulls_last=True)
        assert a.height > 0 and a.equals(b), t
    flows = pl.read_parquet(tmp_path / "quick" / "flows.parquet")
    assert (flows["vantage"] == "matched").sum() >= 1


def test_quick_path_errors_are_the_same_as_clicks(tmp_path, capsys):
    missing = str(tmp_path / "nope.pcap")
    assert main(["analyze", missing, "-o", str(tmp_path / "o"), "-q"]) == 3
    assert f"error: {missing}: no such file" in capsys.readouterr().err
    assert main(["analyze", CAP_A, "--vantage", "phone"]) == 2
    assert "phone" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "o" / "flows.parquet")


def _program(args: list[str], tmp_path) -> subprocess.CompletedProcess:
    """`python -m hsrtcp ARGS` (what the console script runs), with an atexit handler and a
    non-daemon thread registered first, as a program's own code could."""
    code = ("import atexit, sys, threading, time\n"
            "atexit.register(lambda: print('atexit ran', flush=True))\n"
            "threading.Thread(target=lambda: (time.sleep(0.3), print('thread done', flush=True))).start()\n"
            "import runpy; sys.argv = ['hsrtcp', *sys.argv[1:]]; runpy.run_module('hsrtcp', run_name='__main__')\n")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=tmp_path)


def test_program_ending_after_a_quick_run_keeps_what_an_exit_does(tmp_path):
    """entry() skips only the interpreter's teardown after a quick run: threads are waited
    for, atexit handlers run, output is flushed, the tables are complete, the code is kept."""
    p = _program(["analyze", CAP_A, "-o", "res", "--no-plot"], tmp_path)
    assert p.returncode == 0, p.stderr
    assert "thread done" in p.stdout and p.stdout.rstrip().endswith("atexit ran")
    assert "wrote captures.parquet" in p.stdout  # the summary, flushed before the exit
    assert pl.read_parquet(tmp_path / "res" / "flows.parquet").height > 0
    bad = _program(["analyze", str(tmp_path / "nope.pcap"), "-o", "res2", "-q"], tmp_path)
    assert bad.returncode == 3 and "no such file" in bad.stderr and "atexit ran" in bad.stdout
