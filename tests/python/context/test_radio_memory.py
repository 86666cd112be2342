"""What keeps `hsrtcp analyze --radio` on a long log within issue 32's 200 MB, checked on the
program itself (a fresh interpreter through the console script's ``entry``): polars' allocator
is set before polars loads (one arena, no thread caches: 20-30 MB of the 1 GB log's peak), a
user's own options are kept, polars' defaults inherited from a Python parent are not taken for them, the variable is the one polars' jemalloc reads, and the run never
loads pyarrow (30-35 MB). The peak itself is bench/'s (scale_consumers.py --radio-analyze)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import hsrtcp

from .logs import lab_log

ROOT = Path(__file__).resolve().parents[3]
# the subprocesses run the hsrtcp this test imported
PKG_ROOT = str(Path(hsrtcp.__file__).resolve().parents[1])
PHONE = ROOT / "python/hsrtcp/examples" / "phone.pcap"
VAR = "_RJEM_MALLOC_CONF"

# Runs `hsrtcp ARGS...` as the console script does (hsrtcp.cli.entry) and prints what polars'
# allocator saw: the variable when polars was first imported, and whether pyarrow was loaded.
PROGRAM = """
import json, os, sys
seen = {}
class Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "polars" and "polars" not in seen:
            seen["polars"] = os.environ.get(%r)
        return None
sys.meta_path.insert(0, Watch())
sys.argv = ["hsrtcp", *sys.argv[1:]]
from hsrtcp.cli import entry
code = entry()
print(json.dumps({"code": code, "at_polars_import": seen.get("polars", "not imported"),
                  "pyarrow": sorted(m for m in sys.modules if m.split(".")[0] == "pyarrow")}))
""" % VAR


@pytest.fixture(scope="module")
def flow_span():
    f = hsrtcp.analyze([PHONE], vantage="client").flows
    return float(f["first_ts"].min()), float(f["last_ts"].max())


def _analyze(tmp_path: Path, span, env: dict) -> dict:
    a, b = span
    # one carrier at 2 Hz over the flow, a cell change in its middle: the block-by-block path
    times = [a - 2 + 0.5 * i for i in range(int((b - a) * 2) + 10)]
    log = lab_log(tmp_path / "radio.csv", [(t, "M", "LTE", 1, 10 if t < (a + b) / 2 else 11) for t in times])
    env = {k: v for k, v in dict(os.environ, PYTHONPATH=PKG_ROOT, **env).items() if v is not None}
    p = subprocess.run([sys.executable, "-c", PROGRAM, "analyze", str(PHONE), "--vantage", "client",
                        "--radio", str(log), "-o", str(tmp_path / "out"), "-q", "--no-plot"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert got["code"] == 0
    assert (tmp_path / "out" / "handoffs.parquet").exists() and (tmp_path / "out" / "radio.parquet").exists()
    return got


def test_the_program_sets_polars_allocator_before_polars_loads(tmp_path, flow_span):
    got = _analyze(tmp_path, flow_span, {VAR: None})
    assert got["at_polars_import"] == "narenas:1,tcache:false"


def test_a_users_allocator_setting_is_kept(tmp_path, flow_span):
    """An option the user set wins; the program adds only the other."""
    got = _analyze(tmp_path, flow_span, {VAR: "narenas:2"})
    assert got["at_polars_import"] == "tcache:false,narenas:2"


def test_polars_own_setting_inherited_from_a_python_parent_is_completed(tmp_path, flow_span):
    """A Python process that imported polars (a bench, a test, a Dask nanny) passes polars'
    defaults on in the environment: the program's options still go in (they did not in the
    first version, which kept any value: the bench then measured the run without them)."""
    clean = {k: v for k, v in os.environ.items() if k != VAR}
    parent = subprocess.run([sys.executable, "-c", f"import os, polars; print(os.environ[{VAR!r}])"],
                            capture_output=True, text=True, env=clean, timeout=120)
    inherited = parent.stdout.strip()
    assert "narenas" not in inherited and "tcache" not in inherited
    got = _analyze(tmp_path, flow_span, {VAR: inherited})
    assert got["at_polars_import"] == "narenas:1,tcache:false," + inherited


def test_the_radio_analysis_does_not_load_pyarrow(tmp_path, flow_span):
    """radio.parquet moved into place, handoffs.parquet copied by polars' sink (before: both
    through pyarrow's writer, which it imported at the end of the scan)."""
    assert _analyze(tmp_path, flow_span, {})["pyarrow"] == []


@pytest.mark.parametrize("var, read", [(VAR, True), ("MALLOC_CONF", False)])
def test_polars_jemalloc_reads_the_variable_the_program_sets(var, read):
    """jemalloc prints its statistics at exit when its configuration says stats_print: polars'
    does for _RJEM_MALLOC_CONF, not for the unprefixed MALLOC_CONF."""
    code = "import polars as pl; pl.DataFrame({'a': [1, 2]}).sum()"
    env = {k: v for k, v in os.environ.items() if k not in (VAR, "MALLOC_CONF")}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(env, **{var: "stats_print:true"}), timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert ("jemalloc statistics" in p.stderr) is read
