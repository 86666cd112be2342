"""Provenance in every bundle (issue 38): hsrtcp's version and commit, the libraries that shape
results, Rattan, the kernel, the eBPF object's hash; a bundle names no path outside itself
where it matters (its compiled scenario, the trace cells of the Rattan config that ran) and
holds no lock file; a compiled scenario moved elsewhere still runs."""

from __future__ import annotations

import hashlib
import json
import platform
import re
import shutil
import subprocess
from pathlib import Path

import numpy
import polars
import pytest

from hsrtcp.lab import bundle, campaign, ebpf, rattan

from labtools import emulate_measure, hsrtcp_run

REPO = Path(__file__).resolve().parents[3]

SCEN = """
[scenario]
name = "prov"
seed = 5
duration_s = 8
[trip]
speed_kmh = 300
area = "rural"
[handoff]
rlf_p = 0.0
"""


def test_versions_name_the_commit_and_the_libraries():
    v = bundle.tool_versions()
    assert v["hsrtcp"] and v["numpy"] == numpy.__version__ and v["polars"] == polars.__version__
    assert v["kernel"] == platform.release()
    if (REPO / ".git").exists():
        assert re.fullmatch(r"[0-9a-f]{40}", v["hsrtcp_commit"])
        assert subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", v["hsrtcp_commit"]]).returncode == 0
        assert isinstance(v["hsrtcp_dirty"], bool)
    assert "ebpf" not in v


@pytest.mark.skipif(not (ebpf.source_dir() / "build" / "hsrbbr.bpf.o").is_file() and ebpf.missing_toolchain(),
                    reason="no hsrbbr object and no eBPF toolchain")
def test_versions_hash_the_ebpf_object():
    info = bundle.tool_versions(ebpf_ccs=["cubic", "hsrbbr"])["ebpf"]
    assert list(info) == ["hsrbbr"]
    obj = ebpf.object_path("hsrbbr")
    assert info["hsrbbr"]["object_sha256"] == hashlib.sha256(obj.read_bytes()).hexdigest()
    assert info["hsrbbr"]["object"] == "ebpf/build/hsrbbr.bpf.o"
    src = ebpf.source_dir() / "hsrbbr.bpf.c"
    assert info["hsrbbr"]["source_sha256"] == hashlib.sha256(src.read_bytes()).hexdigest()


@pytest.mark.netns
def test_a_bundle_records_its_provenance_and_moves_with_its_scenario(tmp_path):
    (tmp_path / "s.toml").write_text(SCEN)
    (tmp_path / "c.toml").write_text('[campaign]\nname = "prov"\nscenarios = ["s.toml"]\nccs = ["cubic"]\n'
                                     '[[flows]]\ntype = "size"\nsize = "300KB"\n')
    runs = tmp_path / "runs"
    res = campaign.run(campaign.load(tmp_path / "c.toml"), runs, progress=False)
    b = runs / res[0]["run_id"]
    m = json.loads((b / "manifest.json").read_text())
    v = m["versions"]
    assert v["numpy"] == numpy.__version__ and v["polars"] == polars.__version__
    assert v["rattan"] == rattan.RATTAN_VERSION and v["kernel"] == platform.release()
    assert "hsrtcp_commit" in v
    # no lock file of the compiler in the bundle (before: scenario/.hsrtcp.lock, listed in files)
    assert not list(b.rglob(".hsrtcp.lock")) and not [f for f in m["files"] if f.endswith(".hsrtcp.lock")]
    # the compiled scenario names nothing outside the bundle; the config that ran points at it
    for f in ("scenario/rattan.toml", "scenario/scenario.json"):
        assert str(tmp_path) not in (b / f).read_text(), f
    cfg = rattan.load_config(b / "rattan.toml")
    traces = [c["trace"] for c in cfg["cells"].values() if "trace" in c]
    assert traces and all(t.startswith("scenario/traces/") and (b / t).is_file() for t in traces)
    # moved elsewhere, the bundle's compiled scenario still checks and runs
    moved = tmp_path / "moved" / "bundle"
    moved.parent.mkdir()
    shutil.move(b, moved)
    res = hsrtcp_run("scenario", "check", moved / "scenario", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    res = emulate_measure(["-s", moved / "scenario" / "rattan.toml"], tmp_path / "again", "--cc", "cubic",
                          "--flow", "size", "--size", "300KB", cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    assert json.loads(res.stdout[res.stdout.index("["):])[0]["bytes"] == 300_000


@pytest.mark.parametrize("text, problem", [
    ("[1, 2]", "not a bundle manifest (a JSON object)"),
    ("{", "invalid JSON at line 1 column 2"),
    (b"\xff{}", "not a readable bundle manifest"),
])
def test_bundle_check_reads_the_manifest_as_the_analysis_does(tmp_path, text, problem):
    # one reader (hsrtcp.bundle.manifest): a manifest that is no JSON object is a problem
    # named in the list, not an AttributeError from the check
    m = tmp_path / "manifest.json"
    m.write_bytes(text if isinstance(text, bytes) else text.encode())
    problems = bundle.check(tmp_path)
    assert len(problems) == 1 and problems[0].startswith(f"{m}: {problem}"), problems
