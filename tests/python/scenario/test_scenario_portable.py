"""Every example scenario works from a clone in any directory: the files it names (Mahimahi
traces) are found inside the copy, relative to the scenario file, whatever the working
directory."""

import json
import shutil
from pathlib import Path

from hsrtcp.cli import main

REPO = Path(__file__).resolve().parents[3]


def test_examples_compile_from_a_copy_of_the_repository(tmp_path, monkeypatch):
    clone = tmp_path / "elsewhere" / "clone"
    shutil.copytree(REPO / "scenarios", clone / "scenarios")
    shutil.copytree(REPO / "data", clone / "data")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    examples = sorted((clone / "scenarios").glob("*.toml"))
    assert len(examples) >= 10
    traced = 0
    for f in examples:
        out = tmp_path / "out" / f.stem
        assert main(["scenario", "generate", str(f), "-o", str(out), "--duration", "5"]) == 0, f.name
        params = json.loads((out / "scenario.json").read_text())["params"]
        for c in params["carriers"]:
            for k in ("trace_down", "trace_up"):
                if c[k] is not None:
                    traced += 1
                    # named relative to the compiled directory (issue 38: no absolute path)
                    assert not Path(c[k]).is_absolute(), (f.name, c[k])
                    assert (out / c[k]).resolve().is_relative_to(clone / "data" / "mahimahi"), (f.name, c[k])
    assert traced == 2  # hsr-mahimahi-att: both directions
