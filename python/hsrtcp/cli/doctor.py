"""`hsrtcp doctor`: what works on this machine, and for each missing part why and the command
that installs it on Debian; and the text of `hsrtcp --version` (version, commit, built parts).

Each part is checked by doing what its commands need (the analysis runs the native core on
the bundled example, the query part runs a DuckDB statement), not by reading a list: a part
shown "ok" works. The exit status says whether the lab can run (or, with ``--need``, the
parts named): 0 yes, 1 no.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import click

from hsrtcp.errors import ExitCode

#: Debian packages of the system tools the parts use (the commands `hsrtcp doctor` prints).
APT = {"tcpdump": "tcpdump", "ip": "iproute2", "tc": "iproute2", "nft": "nftables", "tshark": "tshark",
       "tcptrace": "tcptrace", "iperf3": "iperf3", "clang": "clang", "bpftool": "bpftool", "npm": "npm"}


@dataclass
class Part:
    """One part of hsrtcp on this machine: ``ok`` when it works; else ``why`` and the fixes
    (Debian packages to install, other commands)."""

    name: str
    what: str
    ok: bool = True
    detail: str = ""
    why: list[str] = field(default_factory=list)
    apt: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)

    def missing(self, why: str, fix: str | None = None, apt: str | None = None) -> None:
        self.ok = False
        self.why.append(why)
        if apt and apt not in self.apt:
            self.apt.append(apt)
        if fix and fix not in self.commands:
            self.commands.append(fix)

    @property
    def fix(self) -> list[str]:
        """The commands that install what is missing, the Debian packages first."""
        return ([f"apt-get install -y {' '.join(self.apt)}"] if self.apt else []) + self.commands


def _tool(part: Part, name: str) -> str | None:
    """Path of ``name`` (PATH, then ~/.cargo/bin as the lab looks); records it missing."""
    from hsrtcp.lab.netns import find_tool

    path = find_tool(name)
    if path is None:
        part.missing(f"{name} not found", apt=APT[name])
    return path


def _module(part: Part, module: str, requirement: str) -> object | None:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        part.missing(f"Python module {module} cannot be imported ({exc})",
                     f"{sys.executable} -m pip install '{requirement}'")
        return None


def _requirement(name: str) -> str:
    """The version range hsrtcp's metadata asks for ``name`` (for the pip command)."""
    try:
        for req in importlib.metadata.requires("hsrtcp") or []:
            if req.split(";")[0].replace(" ", "").lower().startswith(name.lower()):
                return req.split(";")[0].strip()
    except importlib.metadata.PackageNotFoundError:
        pass
    return name


def check_analysis() -> Part:
    part = Part("analysis", "hsrtcp analyze / demo: the native core on the bundled example")
    for mod in ("polars", "pyarrow", "numpy", "click"):
        _module(part, mod, _requirement(mod))
    try:
        from hsrtcp import _native
    except ImportError as exc:
        part.missing(f"the native core hsrtcp._native is not built ({exc})",
                     "make build (in a checkout), or pip install a built hsrtcp wheel")
        return part
    from hsrtcp.examples import SERVER

    if not SERVER.is_file():
        part.missing(f"the bundled example {SERVER} is missing", "reinstall hsrtcp")
        return part
    with tempfile.TemporaryDirectory(prefix="hsrtcp-doctor-") as tmp:
        out = _native.ParquetOut(tmp)
        try:
            r = out.analyze(_native.FileJob(str(SERVER), SERVER.name, "server"), keep_flows=True)
        finally:
            out.abort()
    (cap,) = r["captures"]
    flows = r["flows"] or []
    if cap.get("error") or not flows:
        part.missing(f"the native core read {SERVER.name} wrongly: {cap.get('error') or 'no flow'}",
                     "reinstall hsrtcp (make build in a checkout)")
    else:
        part.detail = (f"native core {getattr(_native, '__version__', '?')} ({Path(_native.__file__).name}); "
                       f"{SERVER.name}: {cap['packets']:,} packets, {len(flows)} flow")
    return part


def _with_module(name: str, what: str, module: str, requirement: str, label: str | None = None) -> Part:
    """A part that needs one importable module (of the ``requirement`` extra): its version."""
    part = Part(name, what)
    mod = _module(part, module, _requirement(requirement))
    if mod is not None:
        part.detail = f"{label or module} {mod.__version__}"
    return part


def check_plots() -> Part:
    return _with_module("plots", "hsrtcp plot, analyze --plot: figures (matplotlib)", "matplotlib", "matplotlib")


def check_reports() -> Part:
    part = Part("reports", "hsrtcp report: one HTML file with interactive charts (uPlot inlined)")
    from hsrtcp.report import assets

    if assets.UPLOT_JS.is_file() and assets.UPLOT_CSS.is_file():
        part.detail = f"uPlot {assets.uplot_version() or '?'} in {assets.JS_DIR}"
    else:
        part.missing(f"the charting library uPlot is not installed ({assets.UPLOT_JS} missing)",
                     f"cd {assets.JS_DIR} && npm ci --omit=dev", apt="npm")
    return part


def check_query() -> Part:
    part = Part("query", "hsrtcp query: SQL over results (DuckDB)")
    duckdb = _module(part, "duckdb", _requirement("duckdb"))
    if duckdb is not None:
        try:
            value = duckdb.connect(":memory:").execute("select 6 * 7").fetchone()[0]
        except Exception as exc:  # noqa: BLE001 - any failure of the engine is the finding
            part.missing(f"DuckDB cannot run a statement: {exc}", f"pip install --force-reinstall '{_requirement('duckdb')}'")
            return part
        if value != 42:
            part.missing(f"DuckDB computed 6 * 7 = {value}")
        part.detail = f"DuckDB {duckdb.__version__}"
    return part


def check_dask() -> Part:
    return _with_module("dask", "analyze CORPUS --dask / --scheduler: corpus runs on Dask", "distributed", "dask",
                        "dask.distributed")


def _root(part: Part, what: str) -> None:
    if os.geteuid() != 0:
        part.missing(f"not root: {what}", "run it as root: sudo $(command -v hsrtcp) ...")


def check_lab() -> Part:
    part = Part("lab", "scenario runs, measure, emulate, campaign: real TCP through Rattan in network namespaces")
    from hsrtcp.lab.rattan import RATTAN_VERSION, rattan_version

    _root(part, "the lab creates network namespaces and veth pairs")
    if not Path("/proc/self/ns/net").exists():
        part.missing("the kernel has no network namespaces (/proc/self/ns/net missing)",
                     "a kernel with CONFIG_NET_NS=y (Debian's kernels have it)")
    for tool in ("ip", "tcpdump"):
        _tool(part, tool)
    fix = f"cargo install rattan --locked --version {RATTAN_VERSION} (Rust: apt-get install -y cargo, or rustup)"
    path = _tool_quiet("rattan")
    if path is None:
        part.missing("the emulator Rattan is not installed", fix)
    else:
        found = rattan_version(path)
        if found != RATTAN_VERSION:
            part.missing(f"Rattan {found or '(unknown version)'} at {path}, the lab is pinned to {RATTAN_VERSION}", fix)
    if part.ok:
        part.detail = f"root, network namespaces, ip, tcpdump, Rattan {RATTAN_VERSION}"
    iperf = _tool_quiet("iperf3")
    if iperf is None and part.ok:
        part.detail += "; iperf3 missing (for workloads that run iperf3: apt-get install -y iperf3)"
    return part


def _tool_quiet(name: str) -> str | None:
    from hsrtcp.lab.netns import find_tool

    return find_tool(name)


def check_testbed() -> Part:
    part = Part("testbed", "the namespace testbed of the tests and fixtures (tc, nftables, tcpdump)")
    _root(part, "the testbed creates network namespaces")
    for tool in ("ip", "tc", "nft", "tcpdump"):
        _tool(part, tool)
    if part.ok:
        part.detail = "root, ip, tc, nft, tcpdump"
    return part


def check_hsrbbr() -> Part:
    part = Part("hsrbbr", "the eBPF congestion control hsrbbr (docs/hsrbbr.md): build and register")
    from hsrtcp.lab import ebpf

    src = ebpf.source_dir()
    obj = ebpf.build_dir() / "hsrbbr.bpf.o"
    if not (src / "hsrbbr.bpf.c").is_file() and not obj.is_file():
        part.missing(f"its source {src / 'hsrbbr.bpf.c'} is not here",
                     "unset HSRTCP_EBPF_DIR (the package carries the source) or point it at a checkout's ebpf/")
    if not obj.is_file():
        for tool in ("clang", "bpftool"):
            _tool(part, tool)
        if not Path("/usr/include/bpf/bpf_helpers.h").is_file():
            part.missing("the libbpf headers are missing (/usr/include/bpf/bpf_helpers.h)", apt="libbpf-dev")
    elif _tool_quiet("bpftool") is None:
        _tool(part, "bpftool")
    if not ebpf.BTF.is_file():
        part.missing(f"the kernel has no BTF ({ebpf.BTF} missing): struct_ops congestion control needs it",
                     "a kernel built with CONFIG_DEBUG_INFO_BTF=y (Debian's kernels are)")
    _root(part, "registering a struct_ops congestion control needs root")
    if part.ok:
        state = "registered" if "hsrbbr" in ebpf.available() else "not registered (the lab registers it on use)"
        part.detail = f"{obj if obj.is_file() else 'built on first use from ' + str(src)}; {state}"
    return part


def check_mptcp() -> Part:
    part = Part("mptcp", "MPTCP runs in the lab (the kernel's MPTCP; analysis of MPTCP captures needs nothing)")
    flag = Path("/proc/sys/net/mptcp/enabled")
    try:
        enabled = flag.read_text().strip()
    except OSError:
        part.missing(f"the kernel has no MPTCP ({flag} missing)", "a kernel with CONFIG_MPTCP=y (Debian's kernels have it)")
        return part
    if enabled != "1":
        part.missing(f"MPTCP is disabled ({flag} = {enabled})", "sysctl -w net.mptcp.enabled=1")
    ip = _tool(part, "ip")
    if ip is not None:
        r = subprocess.run([ip, "mptcp", "limits", "show"], capture_output=True, text=True)
        if r.returncode != 0 and "Operation not permitted" not in r.stderr:
            part.missing(f"`ip mptcp` does not work: {r.stderr.strip() or r.stdout.strip()}", apt="iproute2")
    if part.ok:
        part.detail = "kernel MPTCP enabled, ip mptcp"
    return part


def check_witnesses() -> Part:
    part = Part("witnesses", "the tests' peer tools (tshark, tcptrace): not needed to use hsrtcp")
    for tool in ("tshark", "tcptrace"):
        _tool(part, tool)
    if part.ok:
        part.detail = "tshark, tcptrace"
    return part


CHECKS = {"analysis": check_analysis, "plots": check_plots, "reports": check_reports, "query": check_query,
          "dask": check_dask, "lab": check_lab, "testbed": check_testbed, "hsrbbr": check_hsrbbr,
          "mptcp": check_mptcp, "witnesses": check_witnesses}


def run_checks(names=None) -> list[Part]:
    parts = []
    for name in names or CHECKS:
        try:
            parts.append(CHECKS[name]())
        except Exception as exc:  # noqa: BLE001 - a check that breaks is itself a finding, not a crash
            part = Part(name, "")
            part.missing(f"the check failed: {exc!r}")
            parts.append(part)
    return parts


# --- version, commit, built parts -------------------------------------------------------------

#: Written next to this package by `make wheel` (the commit the wheel was built from).
BUILD_RECORD = Path(__file__).resolve().parents[1] / "_build.json"


def commit() -> str:
    """The commit this hsrtcp was built from: the build record of a wheel, else the git
    checkout the package runs from, else what pip recorded for a VCS install; or why not."""
    try:
        rec = json.loads(BUILD_RECORD.read_text())
        return f"{rec['commit']}{' (with local changes)' if rec.get('dirty') else ''}"
    except (OSError, ValueError, KeyError):
        pass
    pkg = Path(__file__).resolve().parents[1]
    top = pkg.parents[1]
    git = shutil.which("git")
    # Only this project's checkout: a venv inside some other repository must not name its commit.
    if git and (top / ".git").exists() and (top / "crates" / "hsrtcp-py" / "Cargo.toml").is_file():
        head = subprocess.run([git, "-C", str(top), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
        if head.returncode == 0:
            dirty = subprocess.run([git, "-C", str(top), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True).stdout.strip()
            return f"{head.stdout.strip()} (git checkout{', with local changes' if dirty else ''})"
    try:
        url = json.loads(importlib.metadata.distribution("hsrtcp").read_text("direct_url.json") or "{}")
        if url.get("vcs_info", {}).get("commit_id"):
            return url["vcs_info"]["commit_id"][:12]
    except (importlib.metadata.PackageNotFoundError, ValueError):
        pass
    if (top / ".git").exists() and git is None:
        return "unknown (a git checkout, but git is not installed)"
    return "unknown (not built by `make wheel` and not a git checkout)"


def built_features() -> tuple[list[str], list[str]]:
    """(built, not built): the optional compiled or fetched parts this installation has."""
    built, missing = [], []
    try:
        from hsrtcp import _native

        abi = "abi3" if ".abi3." in Path(_native.__file__).name else "version-specific"
        built.append(f"native core {getattr(_native, '__version__', '?')} ({abi})")
    except ImportError:
        missing.append("native core (make build)")
    from hsrtcp.report import assets

    if assets.UPLOT_JS.is_file():
        built.append(f"report charts (uPlot {assets.uplot_version() or '?'})")
    else:
        missing.append("report charts (uPlot: npm ci, see hsrtcp doctor)")
    from hsrtcp.lab import ebpf

    if (ebpf.build_dir() / "hsrbbr.bpf.o").is_file():
        built.append("hsrbbr eBPF object")
    else:
        missing.append("hsrbbr eBPF object (make ebpf)")
    return built, missing


def version_text() -> str:
    from hsrtcp import __version__

    built, missing = built_features()
    lines = [f"hsrtcp {__version__}", f"commit: {commit()}", f"built: {', '.join(built) or 'nothing'}"]
    if missing:
        lines.append(f"not built: {', '.join(missing)}")
    lines.append(f"Python {sys.version.split()[0]} at {sys.executable}")
    return "\n".join(lines)


# --- the command ----------------------------------------------------------------------------------


@click.command()
@click.option("--need", "need", multiple=True, type=click.Choice(list(CHECKS)), metavar="PART",
              help=f"exit 0 only when these parts work (repeatable; default: lab). PART: {', '.join(CHECKS)}")
@click.option("--json", "as_json", is_flag=True, help="print the findings as JSON")
def doctor(need, as_json):
    """Say what works here (analysis, reports, query, Dask, the lab, hsrbbr, MPTCP) and, for
    each missing part, why and the command that installs it on Debian.

    Exit status 0 when the lab can run here (or, with --need, every part named works), 1 if
    not.
    """
    parts = run_checks()
    need = list(need) or ["lab"]
    ready = all(p.ok for p in parts if p.name in need)
    if as_json:
        from hsrtcp import __version__

        click.echo(json.dumps({"version": __version__, "commit": commit(),
                               "need": need, "ready": ready,
                               "parts": [{"name": p.name, "ok": p.ok, "what": p.what, "detail": p.detail,
                                          "why": p.why, "fix": p.fix} for p in parts]}, indent=2))
        raise SystemExit(ExitCode.OK if ready else ExitCode.FAILED)
    head = version_text().splitlines()
    click.echo(f"{head[0]}, commit {head[1].removeprefix('commit: ')}")
    width = max(len(p.name) for p in parts)
    for p in parts:
        mark = click.style("ok     ", fg="green") if p.ok else click.style("MISSING", fg="red", bold=True)
        click.echo(f"  {mark}  {p.name:<{width}}  {p.detail if p.ok else '; '.join(p.why)}")
        if not p.ok:
            click.echo(f"  {'':7}  {'':<{width}}  ({p.what})")
            for fix in p.fix:
                click.echo(f"  {'':7}  {'':<{width}}  fix: {fix}")
    apt = sorted({a for p in parts for a in p.apt})
    if apt:
        click.echo(f"Every missing Debian package at once: apt-get install -y {' '.join(apt)}")
    lacking = [p.name for p in parts if p.name in need and not p.ok]
    if need == ["lab"]:
        click.echo("The lab can run here." if ready else "The lab cannot run here (see above).")
    else:
        click.echo(f"Needed parts work: {', '.join(need)}." if ready else f"Needed parts missing: {', '.join(lacking)}.")
    raise SystemExit(ExitCode.OK if ready else ExitCode.FAILED)
