"""One grammar for `hsrtcp analyze` (issue 37): the options are declared once
(hsrtcp.cli.analyze_options.OPTIONS); click builds the command from the table and the quick
path (hsrtcp.cli.quick) reads the same table. These tests fail when a second, hand-kept
copy of the grammar comes back."""

from __future__ import annotations

import ast
from pathlib import Path

import polars as pl
import pytest

from hsrtcp.cli import main, quick
from hsrtcp.cli.analyze_options import FLAG, OPTIONS

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
CAP = str(DATA / "multi_concurrent.server.pcap")
PAIR = (str(DATA / "drops_cubic.client.pcap"), str(DATA / "drops_cubic.server.pcap"))
# a value each kind of option takes on both paths
SAMPLE = {"out": "res", "path": CAP, "text": "x", "count": "3", "seconds": "2.5", "float": "0.5"}


def _option_literals(path: Path) -> set[str]:
    """String constants in a module that look like option spellings ("-o", "--out")."""
    tree = ast.parse(path.read_text())
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and n.value.startswith("-") and n.value.lstrip("-")[:1].isalpha()}


def test_the_quick_path_names_no_option_of_its_own():
    """The quick path spells no option: every spelling comes from the declaration (the
    earlier quick.py listed each option and its type by hand, beside click's)."""
    assert _option_literals(ROOT / "python/hsrtcp/cli/quick.py") == set()
    # analyze.py builds the command from the table: no click.option of its own on `analyze`
    tree = ast.parse((ROOT / "python/hsrtcp/cli/analyze.py").read_text())
    (command,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "analyze"]
    assert [ast.unparse(d) for d in command.decorator_list] == [
        "click.command()", "click.argument('captures', nargs=-1, type=click.Path(path_type=Path))", "_with_options"]


@pytest.mark.parametrize("option", [o for o in OPTIONS if o.quick], ids=lambda o: o.name)
def test_every_quick_option_runs_on_the_quick_path(option):
    """An option marked quick is parsed without click, with click's value for it."""
    from tests.python.foundation.test_quick_cli import _click_params

    if option.kind == FLAG:
        args = [CAP, (option.off or option.opts)[0]]
    elif option.name in ("client", "server"):
        args = ["--client", PAIR[0], "--server", PAIR[1]]
    else:
        value = option.choices[-1] if option.choices else SAMPLE[option.kind]
        args = [CAP, option.opts[-1], value]
    got = quick.parse(["analyze", *args])
    assert got is not None and got == _click_params(args)


@pytest.mark.parametrize("option", [o for o in OPTIONS if not o.quick], ids=lambda o: o.name)
def test_options_not_marked_quick_go_to_click(option):
    value = [] if option.kind == FLAG else [option.choices[-1] if option.choices else SAMPLE[option.kind]]
    assert quick.parse(["analyze", CAP, option.opts[0], *value]) is None


def test_match_memory_runs_on_the_quick_path_with_clicks_tables(tmp_path):
    """--match-memory was left to click by the hand-kept quick parser; from the table it runs
    on the quick path, and writes what the click run writes."""
    args = ["analyze", "--client", PAIR[0], "--server", PAIR[1], "--match-memory", "64", "-q"]
    assert quick.parse([*args, "-o", "x"])["match_memory_mb"] == 64
    assert main([*args, "-o", str(tmp_path / "quick")]) == 0
    assert main([*args, "-o", str(tmp_path / "click"), "--radio-offset", "0"]) == 0
    for t in ("flows", "events", "rtt", "series", "captures", "pair_stats"):
        a = pl.read_parquet(tmp_path / "quick" / f"{t}.parquet")
        b = pl.read_parquet(tmp_path / "click" / f"{t}.parquet")
        a, b = a.sort(a.columns, nulls_last=True), b.sort(b.columns, nulls_last=True)
        assert a.height > 0 and a.equals(b), t


@pytest.mark.parametrize("window", ["0", "-1", "nan", "inf"])
def test_a_window_that_is_not_a_positive_number_is_a_usage_error(window, capsys):
    """The value check lives in the option's kind: the quick path leaves it to click, which
    names the option (exit 2)."""
    assert quick.parse(["analyze", CAP, f"--window={window}"]) is None
    assert main(["analyze", CAP, f"--window={window}", "-o", "unused"]) == 2
    assert "--window" in capsys.readouterr().err
