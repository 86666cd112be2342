"""`hsrtcp doctor` and `hsrtcp --version` (issue 39): what works here, why a part does not and
the Debian command that installs it; the exit status says whether the lab (or the parts
named with --need) can run. The machine is changed for real: PATH without the system tools,
HOME without ~/.cargo/bin, a non-root user through setpriv."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PY_DIR = str(Path(sys.executable).parent)


def doctor(*args: str, env: dict | None = None, user: int | None = None, cwd=None) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "hsrtcp", *args]
    if user is not None:
        argv = [shutil.which("setpriv") or "/usr/bin/setpriv", f"--reuid={user}", f"--regid={user}",
                "--clear-groups", *argv]
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


def bare_env(tmp_path: Path) -> dict:
    """No system tool on PATH (an empty directory) and a HOME without ~/.cargo/bin."""
    (tmp_path / "bin").mkdir(exist_ok=True)
    (tmp_path / "home").mkdir(exist_ok=True)
    return {"PATH": str(tmp_path / "bin"), "HOME": str(tmp_path / "home"), "MPLCONFIGDIR": str(tmp_path / "mpl")}


def parts(out: str) -> dict:
    return {p["name"]: p for p in json.loads(out)["parts"]}


def test_doctor_names_each_missing_tool_with_its_debian_package_and_the_lab_cannot_run(tmp_path):
    r = doctor("doctor", "--json", env=bare_env(tmp_path))
    assert r.returncode == 1, r.stderr
    found = json.loads(r.stdout)
    assert found["ready"] is False and found["need"] == ["lab"]
    p = parts(r.stdout)
    assert set(p) == {"analysis", "plots", "reports", "query", "dask", "lab", "testbed", "hsrbbr", "mptcp",
                      "witnesses"}
    # the analysis needs no system tool: it ran the native core on the bundled example
    assert p["analysis"]["ok"], p["analysis"]
    assert "server.pcap: 4,461 packets, 1 flow" in p["analysis"]["detail"]
    assert p["query"]["ok"] and p["query"]["detail"].startswith("DuckDB ")
    lab = p["lab"]
    assert not lab["ok"]
    assert {"ip not found", "tcpdump not found", "the emulator Rattan is not installed"} <= set(lab["why"])
    assert lab["fix"][0] == "apt-get install -y iproute2 tcpdump"
    assert any(f.startswith("cargo install rattan --locked --version 0.1.1") for f in lab["fix"])
    assert not p["testbed"]["ok"] and p["testbed"]["fix"][0] == "apt-get install -y iproute2 nftables tcpdump"
    assert not p["witnesses"]["ok"] and p["witnesses"]["fix"] == ["apt-get install -y tshark tcptrace"]


def test_doctor_screen_says_why_and_how_and_the_exit_status_follows_need(tmp_path):
    env = bare_env(tmp_path)
    r = doctor("doctor", env=env)
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert lines[0].startswith("hsrtcp 0.1.0, commit ")
    lab = next(i for i, line in enumerate(lines) if line.split()[:2] == ["MISSING", "lab"])
    assert "tcpdump not found" in lines[lab]
    assert "fix: apt-get install -y iproute2 tcpdump" in lines[lab + 2]
    assert lines[-2].startswith("Every missing Debian package at once: apt-get install -y ")
    assert {"tcpdump", "iproute2", "nftables", "tshark", "tcptrace", "bpftool"} <= set(lines[-2].split()[8:])
    assert lines[-1] == "The lab cannot run here (see above)."
    # the parts a user of the analysis needs work without any system tool
    ok = doctor("doctor", "--need", "analysis", "--need", "query", "--need", "plots", env=env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.splitlines()[-1] == "Needed parts work: analysis, query, plots."
    bad = doctor("doctor", "--need", "analysis", "--need", "witnesses", env=env)
    assert bad.returncode == 1 and bad.stdout.splitlines()[-1] == "Needed parts missing: witnesses."
    assert doctor("doctor", "--need", "everything").returncode == 2


@pytest.mark.skipif(os.geteuid() == 0 and not Path("/usr/bin/setpriv").exists(), reason="needs setpriv to drop root")
def test_doctor_as_a_user_says_the_lab_needs_root(tmp_path):
    tmp_path.chmod(0o755)
    env = bare_env(tmp_path)
    if os.geteuid() == 0:
        probe = subprocess.run(["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                sys.executable, "-c", "import hsrtcp.cli.doctor"], capture_output=True, env=env)
        if probe.returncode != 0:
            pytest.skip("user nobody cannot read this checkout's venv or sources")
    r = doctor("doctor", "--json", env=env, user=65534 if os.geteuid() == 0 else None, cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    p = parts(r.stdout)
    assert any(w.startswith("not root:") for w in p["lab"]["why"])
    assert any(w.startswith("not root:") for w in p["hsrbbr"]["why"])
    assert "run it as root: sudo $(command -v hsrtcp) ..." in p["lab"]["fix"]
    assert p["analysis"]["ok"]


@pytest.mark.skipif(os.geteuid() != 0 or any(shutil.which(t) is None for t in ("ip", "tcpdump")),
                    reason="needs root, ip and tcpdump")
def test_doctor_exit_0_when_the_lab_can_run():
    from hsrtcp.lab.netns import find_tool
    from hsrtcp.lab.rattan import RATTAN_VERSION, rattan_version

    rattan = find_tool("rattan")
    if rattan is None or rattan_version(rattan) != RATTAN_VERSION:
        pytest.skip(f"Rattan {RATTAN_VERSION} not installed (make rattan)")
    r = doctor("doctor")
    assert r.returncode == 0, r.stdout
    assert r.stdout.splitlines()[-1] == "The lab can run here."


def test_version_names_version_commit_and_built_parts():
    r = doctor("--version")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "hsrtcp 0.1.0"
    git = shutil.which("git")
    if git and (ROOT / ".git").exists():
        head = subprocess.run([git, "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        assert lines[1].startswith(f"commit: {head} (git checkout"), lines[1]
    else:
        assert lines[1].startswith("commit: ")
    assert lines[2].startswith("built: native core 0.1.0 (abi3)")
