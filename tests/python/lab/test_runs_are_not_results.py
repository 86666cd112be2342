"""A lab run or campaign folder given to a consumer of results (report, plot, study) says what
reads it (issue 38: `report` on a campaign said only "missing table 'flows'")."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hsrtcp.cli import main

REPO = Path(__file__).resolve().parents[3]
BUNDLE = REPO / "tests" / "data" / "lab_truth" / "run"


@pytest.mark.parametrize("kind", ["bundle", "campaign"])
def test_report_on_lab_runs_names_analyze_and_compare(tmp_path, capsys, kind):
    if kind == "bundle":
        given = BUNDLE
    else:
        given = tmp_path / "runs"
        given.mkdir()
        shutil.copyfile(REPO / "campaigns" / "smoke.toml", given / "campaign.toml")
        shutil.copytree(BUNDLE, given / "001_run")
    assert main(["report", str(given), "-o", str(tmp_path / "r.html")]) == 3
    err = capsys.readouterr().err
    assert f"{given}/flows.parquet: missing table 'flows'" in err
    assert f"{given} holds lab runs, not results: `hsrtcp analyze RUN -o OUT`" in err
    assert f"`hsrtcp compare {given} -o OUT`" in err
    assert not (tmp_path / "r.html").exists()
