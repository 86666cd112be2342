"""Makefile targets that reproduce committed results say every option those results depend on.

`make study` remakes the tables committed in tests/data/study*/ (their README) and judges
the orderings on them; a default of `hsrtcp study` that changed since (``--min-flows`` went
from 5 to 1, issue 38) must not change what the target computes.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def recipe(target: str) -> tuple[str, dict[str, str]]:
    """The recipe of ``target`` (continuation lines joined) and the Makefile's ``?=`` variables."""
    text = (ROOT / "Makefile").read_text()
    variables = dict(re.findall(r"^([A-Z_]+) \?= (.*)$", text, re.M))
    m = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", text, re.M)
    assert m, f"no target {target} in the Makefile"
    return m.group(1).replace("\\\n", " "), variables


def test_make_study_passes_the_options_of_the_committed_tables():
    body, variables = recipe("study")
    calls = [line for line in body.splitlines() if "-m hsrtcp study " in line]
    assert len(calls) == 3, calls
    for d in ("study", "study-with-static", "study-by-workload"):
        committed = json.loads((ROOT / "tests" / "data" / d / "study.json").read_text())["min_flows"]
        assert committed == 5
    for line in calls:
        words = shlex.split(re.sub(r"\$\((\w+)\)", lambda m: variables.get(m.group(1), m.group(0)), line))
        assert "--min-flows" in words, line
        assert words[words.index("--min-flows") + 1] == "5", line
