"""The built wheel works on its own (issue 39): installed into a new virtual environment outside
the repository and run from a directory with no repository file, `hsrtcp --version`,
`hsrtcp doctor`, `hsrtcp demo`, `hsrtcp analyze` on a packaged example, `hsrtcp report` and
`hsrtcp query` work; the wheel is abi3 and manylinux-tagged and carries the package data; the
sdist (the wheel is built from it by `make wheel`) carries what a build needs.

The wheel and sdist come from `make wheel` (target/wheels, or $HSRTCP_WHEELS); `make test`
builds them first. Run alone without them, the tests skip; under CI they fail instead."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
WHEELS = Path(os.environ.get("HSRTCP_WHEELS") or ROOT / "target" / "wheels")


def _one(pattern: str) -> Path:
    found = sorted(WHEELS.glob(pattern))
    if len(found) != 1:
        message = f"expected one {pattern} in {WHEELS}, found {[p.name for p in found]}: run `make wheel`"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found[0]


@pytest.fixture(scope="module")
def wheel() -> Path:
    return _one("hsrtcp-*.whl")


@pytest.fixture(scope="module")
def sdist() -> Path:
    return _one("hsrtcp-*.tar.gz")


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory):
    """A fresh venv with the wheel (its dependencies from the package index) and an empty
    working directory, both outside the repository; ``run(*argv)`` runs there."""
    base = tmp_path_factory.mktemp("wheel")
    assert ROOT not in base.parents
    venv, work = base / "venv", base / "work"
    work.mkdir()
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", str(venv)], check=True)
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                          str(wheel)], capture_output=True, text=True, timeout=1200)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["MPLCONFIGDIR"] = str(base / "mpl")

    def run(*argv: str, ok: bool = True) -> subprocess.CompletedProcess:
        r = subprocess.run([str(a) for a in argv], capture_output=True, text=True, cwd=work, env=env, timeout=600)
        if ok:
            assert r.returncode == 0, f"{argv}: exit {r.returncode}\n{r.stdout}\n{r.stderr}"
        return r

    run.venv, run.work = venv, work
    return run


def test_wheel_is_abi3_manylinux_and_carries_the_package_data(wheel):
    assert "-cp311-abi3-manylinux_" in wheel.name, wheel.name
    names = set(zipfile.ZipFile(wheel).namelist())
    for f in ("examples/phone.pcap", "examples/server.pcap", "examples/truth.json", "examples/README.md",
              "examples/__init__.py", "py.typed", "_native.pyi", "_native.abi3.so", "_build.json",
              "report/js/node_modules/uplot/LICENSE", "report/js/node_modules/uplot/package.json",
              "report/js/node_modules/uplot/dist/uPlot.iife.min.js",
              "report/js/node_modules/uplot/dist/uPlot.min.css", "report/static/template.html",
              "lab/bpf/hsrbbr.bpf.c"):
        assert f"hsrtcp/{f}" in names, f
    assert not [n for n in names if n.startswith("tests/") or "/tests/data/" in n or "__pycache__" in n]
    # the eBPF source travels as the file, not as the source tree's link, and nothing else of ebpf/
    zf = zipfile.ZipFile(wheel)
    assert zf.read("hsrtcp/lab/bpf/hsrbbr.bpf.c") == (ROOT / "ebpf" / "hsrbbr.bpf.c").read_bytes()
    assert not [n for n in names if n.startswith("ebpf/") or n.endswith((".bpf.o", "vmlinux.h"))]
    record = json.loads(zipfile.ZipFile(wheel).read("hsrtcp/_build.json"))
    assert len(record["commit"]) == 12 and isinstance(record["dirty"], bool)


def test_sdist_carries_what_a_build_needs(sdist):
    names = {n.split("/", 1)[1] for n in tarfile.open(sdist).getnames() if "/" in n}
    for f in ("pyproject.toml", "Cargo.toml", "Cargo.lock", "LICENSE", "README.md",
              "crates/hsrtcp-core/Cargo.toml", "crates/hsrtcp-core/src/lib.rs", "crates/hsrtcp-py/Cargo.toml",
              "crates/hsrtcp-py/src/lib.rs", "python/hsrtcp/__init__.py", "python/hsrtcp/examples/phone.pcap",
              "python/hsrtcp/examples/server.pcap", "python/hsrtcp/py.typed", "python/hsrtcp/_native.pyi",
              "python/hsrtcp/report/js/node_modules/uplot/dist/uPlot.iife.min.js",
              "python/hsrtcp/lab/bpf/hsrbbr.bpf.c"):
        assert f in names, f
    member = next(m for m in tarfile.open(sdist).getmembers() if m.name.endswith("lab/bpf/hsrbbr.bpf.c"))
    assert member.isfile(), "the sdist must carry the file, not the source tree's link to ebpf/"


def test_installed_hsrtcp_is_the_wheel_and_names_its_commit(installed, wheel):
    where = installed("python", "-c", "import hsrtcp, hsrtcp._native as n; print(hsrtcp.__file__); print(n.__file__)")
    for line in where.stdout.splitlines():
        assert Path(line).is_relative_to(installed.venv), line
    lines = installed("hsrtcp", "--version").stdout.splitlines()
    record = json.loads(zipfile.ZipFile(wheel).read("hsrtcp/_build.json"))
    assert lines[0] == "hsrtcp 0.1.0"
    assert lines[1].startswith(f"commit: {record['commit']}")
    assert lines[2].startswith("built: native core 0.1.0 (abi3), report charts (uPlot 1.6.32)")


def test_doctor_in_the_fresh_venv(installed):
    need = ["--need", "analysis", "--need", "plots", "--need", "reports", "--need", "query", "--need", "dask"]
    r = installed("hsrtcp", "doctor", *need)
    assert r.stdout.splitlines()[-1] == "Needed parts work: analysis, plots, reports, query, dask."
    found = json.loads(installed("hsrtcp", "doctor", "--json", ok=False).stdout)
    parts = {p["name"]: p for p in found["parts"]}
    assert "server.pcap: 4,461 packets, 1 flow" in parts["analysis"]["detail"]
    # the lab's verdict is the machine's; the exit status must say the same
    plain = installed("hsrtcp", "doctor", ok=False)
    assert plain.returncode == (0 if parts["lab"]["ok"] else 1), plain.stdout
    # the wheel carries hsrbbr's source: no checkout needed (issue 39)
    assert not [w for w in parts["hsrbbr"]["why"] if "source" in w], parts["hsrbbr"]
    assert not [f for f in parts["hsrbbr"]["fix"] if "HSRTCP_EBPF_DIR" in f], parts["hsrbbr"]


def test_the_installed_package_builds_hsrbbr_from_its_own_source(installed, tmp_path):
    """No HSRTCP_EBPF_DIR, no checkout: the packaged source, compiled into a cache outside the
    package (site-packages is no place to write)."""
    code = ("from hsrtcp.lab import ebpf; print(ebpf.source_dir()); print(ebpf.build_dir()); "
            "print(ebpf.missing_toolchain() or '')")
    src, build, why = (installed("env", f"XDG_CACHE_HOME={tmp_path}", "python", "-c", code).stdout.splitlines() + [""])[:3]
    assert Path(src).is_relative_to(installed.venv) and Path(src).name == "bpf", src
    assert (Path(src) / "hsrbbr.bpf.c").read_bytes() == (ROOT / "ebpf" / "hsrbbr.bpf.c").read_bytes()
    assert Path(build).is_relative_to(tmp_path), build
    if why:
        pytest.skip(f"cannot compile eBPF here: {why}")
    obj = installed("env", f"XDG_CACHE_HOME={tmp_path}", "python", "-c",
                    "from hsrtcp.lab import ebpf; print(ebpf.build('hsrbbr'))").stdout.strip()
    assert Path(obj).is_relative_to(tmp_path) and Path(obj).stat().st_size > 0, obj


def test_demo_analyze_report_query_from_a_directory_without_the_repository(installed):
    assert list(installed.work.iterdir()) == []
    demo = installed("hsrtcp", "demo", "-o", "demo")
    assert "hsrtcp demo: analyzing phone.pcap (phone side) and server.pcap (server side)" in demo.stdout
    assert (installed.work / "demo" / "flows.parquet").is_file()
    server = installed("python", "-m", "hsrtcp.examples", "server").stdout.strip()
    assert Path(server).is_relative_to(installed.venv)
    installed("hsrtcp", "analyze", server, "-o", "one", "-q")
    q = installed("hsrtcp", "query", "one", "select count(*) as n, sum(s2c_payload_bytes) as b from flows", "-f", "csv")
    assert q.stdout.splitlines() == ["n,b", "1,4024616"]
    installed("hsrtcp", "report", "demo", "-o", "report.html")
    html = (installed.work / "report.html").read_text()
    assert "uPlot" in html and len(html) > 50_000
