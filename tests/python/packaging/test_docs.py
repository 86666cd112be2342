"""The documentation as a site (issue 39): every `hsrtcp` command shown in docs/ and README.md
is a command line hsrtcp accepts, the commands of the pages a new user follows (getting
started, the CLI) run as shown, and the site's build (mkdocs.yml, `make docs`) fails on a
broken link or a missing page.

What is run, and where:

- getting-started.md and cli.md: every command in their sh blocks runs here, in order, in an
  empty directory (``RUN_HERE``); `make wheel` and `pip install` of the wheel run in
  `make test`'s wheel step and tests/python/packaging/test_wheel.py.
- every other page and README.md: each `hsrtcp ...` line is parsed by the CLI (options,
  choices, value ranges), not run: they need captures, results or root that the pages only
  name. A path the command would read is allowed not to exist.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs"
RUN_HERE = ("getting-started.md", "cli.md")
# Lines of RUN_HERE pages that are not hsrtcp commands, and the test that runs them.
RUN_ELSEWHERE = {
    "make wheel": "Makefile wheel (make test) and tests/python/packaging/test_wheel.py",
    "pip install target/wheels/hsrtcp-*.whl": "tests/python/packaging/test_wheel.py (a fresh venv)",
}
FENCE = re.compile(r"^```(\w*)\s*$")
SHELLS = {"sh", "bash", "shell", "console"}


def shell_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, command) of every command in the file's shell code blocks: comments
    dropped, continuation lines and quoted strings over several lines joined. In a
    ``console`` block only the lines after a ``$ `` prompt are commands (the rest is their
    output); elsewhere a leading ``$ `` is removed."""
    out, block, pending, start = [], None, "", 0
    for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = FENCE.match(line.strip())
        if m:
            block = m.group(1) if block is None else None
            pending = ""
            continue
        if block not in SHELLS:
            continue
        text = line.strip()
        if not pending:
            if block == "console" and not text.startswith("$ "):
                continue  # output
            start = no
        if text.endswith("\\"):
            pending += text[:-1] + " "
            continue
        if _open_quote(pending + text):
            pending += text + "\n"
            continue
        text = (pending + text).strip()
        pending = ""
        text = _uncomment(text.removeprefix("$ "))
        if text and not text.startswith("#"):
            out.append((start, text))
    return out


def _open_quote(text: str) -> bool:
    """Whether ``text`` ends inside a quoted string (the command goes on on the next line)."""
    quote = None
    for i, c in enumerate(text):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or text[i - 1].isspace()):
            return False  # a comment
    return quote is not None


def _uncomment(text: str) -> str:
    """``text`` as written (quotes, ``$(...)``) up to a comment: '#' after whitespace, outside quotes."""
    for m in re.finditer(r"\s#", text):
        before = text[:m.start()]
        if before.count('"') % 2 == 0 and before.count("'") % 2 == 0:
            return before.strip()
    return text.strip()


def hsrtcp_args(command: str) -> list[str] | None:
    """The arguments after `hsrtcp` (also `python -m hsrtcp`, `.venv/bin/hsrtcp`, `sudo`,
    environment assignments), or None for another program."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    while words and (words[0] in ("sudo", "env") or re.match(r"^[A-Z_][A-Z0-9_]*=", words[0])):
        words = words[1:]
    if words[:1] and (words[0] == "hsrtcp" or words[0].endswith("bin/hsrtcp")):  # not python/hsrtcp/
        return words[1:]
    if len(words) >= 3 and Path(words[0]).name.startswith("python") and words[1:3] == ["-m", "hsrtcp"]:
        return words[3:]
    return None


def doc_pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md")) + [ROOT / "README.md"]


PLACEHOLDER = re.compile(r"^\[?-*[A-Za-z0-9-]*=?[A-Z][A-Z0-9_]+([.,/{\]].*)?$")


def is_synopsis(args: list[str]) -> bool:
    """A usage line with placeholders (``KIND``, ``[--flow ID]``, ``FILE.{png,svg}``, ``...``)."""
    return any(a.startswith("[") or a == "..." or (PLACEHOLDER.match(a) and not a.startswith("-")) for a in args)


def _subcommand(args: list[str]):
    """(the click command ``args`` name, the words after its name)."""
    from hsrtcp.cli.group import cli

    cmd, rest = cli, list(args)
    while isinstance(cmd, click.Group) and rest and not rest[0].startswith("-"):
        sub = cmd.get_command(click.Context(cmd), rest[0])
        if sub is None:
            return None, rest
        cmd, rest = sub, rest[1:]
    return cmd, rest


def parse(args: list[str]) -> str | None:
    """Parse ``args`` with hsrtcp's click commands without running them; the usage error, or
    None. A synopsis line (placeholders) is checked for its command and option names only."""
    from hsrtcp.cli.group import cli

    if is_synopsis(args):
        if "--" in args:  # what follows is another program's command line
            args = args[:args.index("--")]
        cmd, rest = _subcommand(args)
        if cmd is None:
            return f"no such command {rest[0]!r}"
        known = {o for p in cmd.get_params(click.Context(cmd)) for o in p.opts + p.secondary_opts}
        unknown = [w.strip("[]") for w in rest if w.strip("[").startswith("-") and w.strip("[]").split("=")[0] not in known]
        return f"no such option: {', '.join(unknown)}" if unknown else None
    cmd, rest = _subcommand(args)
    if cmd is None:
        return f"no such command {rest[0]!r}"
    name = args[len(args) - len(rest) - 1] if len(rest) < len(args) else "hsrtcp"
    try:
        cmd.make_context(name, rest)
    except click.exceptions.Exit:  # --help, --version
        return None
    except click.BadParameter as exc:
        if "does not exist" in exc.format_message():
            return None  # a file the page names; the command line itself is right
        return exc.format_message()
    except click.UsageError as exc:
        return exc.format_message()
    return None


def test_the_extraction_finds_commands_and_drops_comments(tmp_path):
    page = tmp_path / "p.md"
    page.write_text('text\n```sh\nhsrtcp analyze a.pcap -o out   # note\nhsrtcp plot tsg out \\\n  --flow 0 -o x.svg\n'
                    '```\n```python\nhsrtcp.analyze("x")\n```\n```sh\n$ python -m hsrtcp query out "select 1 # no"\n```\n')
    assert shell_lines(page) == [(3, "hsrtcp analyze a.pcap -o out"), (4, "hsrtcp plot tsg out  --flow 0 -o x.svg"),
                                 (11, 'python -m hsrtcp query out "select 1 # no"')]
    # a console block's output is not a command; a quoted string may span lines
    page.write_text('```console\n$ hsrtcp model sweep   # P_a and q\nmodel  key\n$ hsrtcp query out "select 1\n'
                    '  from flows"\n```\n')
    assert shell_lines(page) == [(2, "hsrtcp model sweep"), (4, 'hsrtcp query out "select 1\nfrom flows"')]
    assert hsrtcp_args('python -m hsrtcp query out "select 1 # no"') == ["query", "out", "select 1 # no"]
    assert hsrtcp_args("sudo $(which hsrtcp) campaign c.toml") is None
    assert hsrtcp_args("make demo") is None
    assert hsrtcp_args("python/hsrtcp        CLI, API, models") is None  # README's layout
    assert hsrtcp_args(".venv/bin/hsrtcp demo") == ["demo"]
    assert parse(["emulate", "--rate", "10Mbps/2Mbps", "-o", "run", "--", "CMD"]) is None
    assert parse(["analyze", "x.pcap", "--workers", "0"]) is not None
    assert parse(["analyze", "x.pcap", "--no-such-option"]) is not None
    assert parse(["no-such-command"]) is not None
    assert parse(["model", "predict", "--p-d", "x"]) is not None  # a nested group's command
    assert is_synopsis(["plot", "KIND", "RESULTS", "[--flow", "ID]", "-o", "FILE.{png,svg,pdf}"])
    assert parse(["plot", "KIND", "RESULTS", "[--flow", "ID]", "-o", "FILE.{png,svg}"]) is None
    assert parse(["plot", "KIND", "RESULTS", "[--flows", "ID]"]) is not None
    assert not is_synopsis(["analyze", "trace.pcap", "-o", "out", "--radio-offset", "0.04", "--carrier", "M"])


def test_every_hsrtcp_command_in_the_docs_parses(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # relative paths of the pages do not exist here: nothing is read
    found, bad = 0, []
    for page in doc_pages():
        for no, command in shell_lines(page):
            args = hsrtcp_args(command)
            if args is None:
                continue
            found += 1
            error = parse(args)
            if error:
                bad.append(f"{page.relative_to(ROOT)}:{no}: {command}\n    {error}")
    assert found >= 40
    assert not bad, "commands in the docs that hsrtcp does not accept:\n" + "\n".join(bad)


def test_getting_started_and_cli_commands_run_as_shown(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["MPLCONFIGDIR"] = str(tmp_path / "mpl")
    work = tmp_path / "work"
    work.mkdir()
    ran = []
    for name in RUN_HERE:
        for no, command in shell_lines(DOCS / name):
            if command in RUN_ELSEWHERE:
                continue
            assert hsrtcp_args(command) is not None, f"{name}:{no}: {command!r} is neither run here nor listed"
            r = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True,
                               timeout=600)
            allowed = (0, 1) if hsrtcp_args(command)[:1] == ["doctor"] else (0,)
            assert r.returncode in allowed, f"{name}:{no}: {command}: exit {r.returncode}\n{r.stdout}\n{r.stderr}"
            ran.append(command)
    assert "hsrtcp demo -o out" in ran and "hsrtcp doctor" in ran and len(ran) >= 10
    assert (work / "out" / "flows.parquet").is_file() and (work / "report.html").is_file()
    assert (work / "tsg.svg").is_file()


def test_every_command_of_the_run_pages_is_accounted_for():
    for name in RUN_HERE:
        for no, command in shell_lines(DOCS / name):
            assert hsrtcp_args(command) is not None or command in RUN_ELSEWHERE, f"{name}:{no}: {command}"


# --- the site -----------------------------------------------------------------------------------

MKDOCS = ROOT / ".venv-docs" / "bin" / "mkdocs"


def build_site(tmp_path: Path, edit=None) -> subprocess.CompletedProcess:
    """Build a copy of the site (mkdocs.yml and docs/; the API pages read python/ where it is)
    after ``edit(docs_dir)``, with the same strictness as `make docs`."""
    if not MKDOCS.exists():
        message = f"{MKDOCS} missing: run `make docs` first"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs)
    config = (ROOT / "mkdocs.yml").read_text()
    assert "paths: [python]" in config
    config = config.replace("paths: [python]", f"paths: [{ROOT / 'python'}]")
    (tmp_path / "mkdocs.yml").write_text(config)
    if edit:
        edit(docs, tmp_path / "mkdocs.yml")
    return subprocess.run([str(MKDOCS), "build", "--strict", "-f", str(tmp_path / "mkdocs.yml")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)


def test_the_site_builds_with_warnings_as_errors(tmp_path):
    r = build_site(tmp_path)
    assert r.returncode == 0, r.stderr
    site = tmp_path / "target" / "site"
    for page in ("index.html", "getting-started/index.html", "cli/index.html", "api/index.html",
                 "metrics/index.html", "formats/flows/index.html", "lab/index.html", "study/index.html",
                 "search/search_index.json"):
        assert (site / page).is_file(), page
    api = (site / "api" / "index.html").read_text()
    # the API reference comes from the docstrings and from the compiled core's stub
    assert "analyze_to" in api and "ParquetOut" in api and "window_s" in api


def test_the_site_build_fails_on_a_broken_link(tmp_path):
    def broken(docs, config):
        with open(docs / "cli.md", "a") as f:
            f.write("\nSee [the missing page](no-such-page.md).\n")

    r = build_site(tmp_path, broken)
    assert r.returncode != 0
    warnings = [line for line in r.stderr.splitlines() if line.startswith("WARNING")]
    assert len(warnings) == 1 and "'no-such-page.md'" in warnings[0], r.stderr


def test_the_site_build_fails_on_a_broken_anchor(tmp_path):
    def broken(docs, config):
        with open(docs / "cli.md", "a") as f:
            f.write("\nSee [doctor](getting-started.md#no-such-section).\n")

    r = build_site(tmp_path, broken)
    assert r.returncode != 0 and "no-such-section" in r.stderr


def test_the_site_build_fails_on_a_page_missing_from_the_nav_or_from_docs(tmp_path):
    def extra_page(docs, config):
        (docs / "orphan.md").write_text("# A page no one reaches\n")

    r = build_site(tmp_path / "a", extra_page)
    assert r.returncode != 0 and "orphan.md" in r.stderr

    def nav_to_nothing(docs, config):
        (docs / "design.md").unlink()

    r = build_site(tmp_path / "b", nav_to_nothing)
    assert r.returncode != 0 and "design.md" in r.stderr


# --- files the pages name -------------------------------------------------------------------

REPO_PATH = re.compile(r"(?<![\w/.$-])(?:scripts|campaigns|scenarios|ebpf|bench|data|tests|crates|python)/[\w./-]*\w\.\w+")
# made by a command, not committed: the page says which (bench/README.md: `make bench`)
GENERATED = ("bench/work/",)


def test_every_repository_file_a_page_names_exists():
    """A page naming `scripts/x.py` or `campaigns/y.toml` that is gone sends the reader to
    nothing (issue 38: scripts/hsrbbr_compare.py outlived by the docs; README's
    campaigns/example.toml never existed)."""
    missing = []
    for page in doc_pages():
        for no, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            for path in REPO_PATH.findall(line):
                if not path.startswith(GENERATED) and not (ROOT / path).exists():
                    missing.append(f"{page.relative_to(ROOT)}:{no}: {path}")
    assert not missing, "files the docs name that the repository does not have:\n" + "\n".join(missing)


# --- every page's commands, run ----------------------------------------------------------------
#
# Each page (README.md and docs/**, besides RUN_HERE) runs its shell commands in order, in an
# empty directory of its own that holds the bundled example (python/hsrtcp/examples) under
# the names the pages give their inputs (WORKSPACE below), with the venv's bin first on PATH.
# A line with placeholders (`RESULTS`, `ID`, ...) is a synopsis: parsed above, not run.

# What no test can run here, and why: (the start of the command line, the reason).
NOT_RUN = (
    ("make ", "Makefile targets: builds, apt-get, and root campaigns of 30-85 minutes; "
              "`make test` runs the test targets"),
    ("pip install ", "installs into the current environment: test_wheel.py installs the wheel into a fresh venv"),
    (". .venv/bin/activate", "shell state only: these tests put the venv's bin first on PATH instead"),
    ("hsrtcp campaign ", "root, Rattan and minutes to hours of emulated transfers (tests/python/lab/test_campaign*.py)"),
    ("hsrtcp emulate ", "root and Rattan (tests/python/lab/test_emulate_cli.py)"),
    ("hsrtcp measure ", "a server on the network, or a client of one at the address shown (tests/python/lab/test_measure.py)"),
    ("python -m hsrtcp.audit.docs", "rewrites the repository's docs/accuracy.md: tests/python/audit/test_audit_docs.py "
                                    "checks it (--check)"),
)
# Commands that read what only a campaign above makes (its bundles, in runs/).
NEEDS_CAMPAIGN = re.compile(r"(^|\s)runs/(smoke|mptcp-conj|cc|mitigations|audit)\b")
DASK = "--scheduler tcp://"
MAKE_STUDY = " out/study/"


def not_run(command: str) -> str | None:
    """Why ``command`` is not run here, or None."""
    for start, why in NOT_RUN:
        if command.startswith(start):
            return why
    if NEEDS_CAMPAIGN.search(command):
        return "reads the bundles of a campaign (root), in runs/"
    if MAKE_STUDY in command:
        return "reads the tables `make study` writes (root, ~45 min); tests/python/study/test_orderings.py runs it on the committed ones"
    if DASK in command:
        return "a Dask cluster at the address shown (tests/python/scale/test_dask.py starts a local one)"
    return None


def test_not_run_covers_only_what_it_says():
    assert not_run("make study") and not_run("hsrtcp campaign campaigns/smoke.toml -o runs/smoke")
    assert not_run("hsrtcp mptcp runs/mptcp-conj -o metrics")
    assert not_run("hsrtcp analyze field/ -o results --scheduler tcp://head:8786")
    for command in ("hsrtcp analyze phone.pcap -o out", "hsrtcp query runs/a runs/b \"select 1\"",
                    "hsrtcp scenario generate scenarios/bt-300kmh.toml -o sc/", "hsrtcp report out -o r.html"):
        assert not_run(command) is None, command


def _radio_logs(work: Path, t0: float, t1: float) -> None:
    """Radio logs over the example's time span, in the three forms the pages read: the lab's
    CSV (docs/formats/radio.md, a handoff halfway), NMEA RMC sentences, and an exporter's CSV
    with the columns of docs/context.md's --radio-map example."""
    import datetime as dt

    start, end = int(t0) - 2, int(t1) + 3
    half = (start + end) // 2
    rows = ["ts,lat,lon,speed_kmh,carrier,rat,lac,cid,rsrp_dbm,rsrq_db"]
    exp = ["Timestamp,Operator,NetworkType,TAC,CellID,Speed,RSRP,RSRQ"]
    nmea = []
    for k, t in enumerate(range(start, end + 1)):
        cid = 1000 if t < half else 1001
        lat, lon = 39.8652 - 0.0008 * k, 116.3786 + 0.0008 * k
        rows.append(f"{t}.000,{lat:.6f},{lon:.6f},300.0,M,LTE,1000,{cid},-80.0,-9.0")
        exp.append(f"{t * 1000},CMCC,LTE,1000,{cid},83.3,-80,-9")
        u = dt.datetime.fromtimestamp(t, dt.timezone.utc)
        body = (f"GPRMC,{u:%H%M%S}.00,A,{int(lat) * 100 + (lat % 1) * 60:09.4f},N,"
                f"{int(lon) * 100 + (lon % 1) * 60:010.4f},E,162.0,135.0,{u:%d%m%y},,,A")
        check = 0
        for c in body:
            check ^= ord(c)
        nmea.append(f"${body}*{check:02X}")
    (work / "trip.csv").write_text("\n".join(rows) + "\n")
    (work / "export.csv").write_text("\n".join(exp) + "\n")
    (work / "drive.nmea").write_text("\r\n".join(nmea) + "\r\n")


def make_workspace(work: Path, env: dict) -> None:
    """The inputs the pages name, made from the bundled example (the list is the test's
    contract with the pages: a page that needs another name adds it here)."""
    from hsrtcp.examples import PHONE, SERVER
    from hsrtcp.testing import pcapio
    from hsrtcp.testing.encap import wrap_capture

    work.mkdir(parents=True, exist_ok=True)
    for d in ("scenarios", "campaigns", "data", "tests"):  # the pages run from a checkout: its inputs, read only
        (work / d).symlink_to(ROOT / d)
    phone_names = ("phone.pcap", "trace.pcap", "p.pcap", "a.phone.pcap")
    server_names = ("server.pcap", "srv.pcap", "s.pcap", "a.srv.pcap")
    for names, src in ((phone_names, PHONE), (server_names, SERVER)):
        for name in names:
            shutil.copyfile(src, work / name)
    # a second pair: the same download an hour later (identical files are refused as one capture)
    pcapio.rewrite_pcap(PHONE, work / "b.phone.pcap", time_offset_s=3600)
    pcapio.rewrite_pcap(SERVER, work / "b.srv.pcap", time_offset_s=3600)
    wrap_capture(SERVER, work / "core.pcap", "gtpu")  # an operator's core: every packet in GTP-U
    for day in ("2026-05-01", "2026-05-02"):  # a corpus as docs/scale.md lays it out
        (work / "field" / day).mkdir(parents=True)
    shutil.copyfile(PHONE, work / "field" / "2026-05-01" / "phone.pcap")
    shutil.copyfile(SERVER, work / "field" / "2026-05-01" / "server.pcap")
    shutil.copyfile(work / "core.pcap", work / "field" / "2026-05-02" / "lone.pcap")
    times = [p.ts for p in pcapio.read_tcp(PHONE)]
    _radio_logs(work, times[0], times[-1])
    shutil.copyfile(work / "trip.csv", work / "field" / "2026-05-01" / "radio.csv")
    (work / "corpus.csv").write_text(
        "capture,vantage,pair,radio,radio_offset,trip,carrier\n"
        "field/2026-05-01/phone.pcap,client,G17-am,field/2026-05-01/radio.csv,0.04,G17,M\n"
        "field/2026-05-01/server.pcap,server,G17-am,,,G17,M\n"
        "field/2026-05-02/lone.pcap,server,,,,G21,U\n")
    # results the pages start from (out/: both vantages with the radio log, as docs/report.md
    # makes them: what `make demo` writes, and a context; results/trip1 as docs/study.md makes
    # it), and two runs to compare
    pair = ["--client", "phone.pcap", "--server", "server.pcap", "--radio", "trip.csv", "-q", "--no-plot"]
    for args in (["analyze", *pair, "-o", "out"], ["analyze", *pair, "-o", "results/trip1"],
                 ["analyze", "phone.pcap", "-o", "runs/a", "-q"], ["analyze", "server.pcap", "-o", "runs/b", "-q"]):
        r = subprocess.run([str(Path(sys.executable).with_name("hsrtcp")), *args], cwd=work, env=env,
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, (args, r.stdout, r.stderr)


def _env(tmp: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["MPLCONFIGDIR"] = str(tmp / "mpl")
    return env


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("docs-workspace")
    make_workspace(tmp / "w", _env(tmp))
    return tmp / "w"


RUN_PAGES = [p for p in doc_pages() if p.name not in RUN_HERE]


@pytest.mark.parametrize("page", RUN_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_page_command_runs_against_the_example(page, workspace, tmp_path):
    work = tmp_path / "w"
    shutil.copytree(workspace, work, symlinks=True)
    env = _env(tmp_path)
    failed = []
    for no, command in shell_lines(page):
        args = hsrtcp_args(command)
        if not_run(command) or (args is not None and is_synopsis(args)):
            continue
        r = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True,
                           timeout=600)
        allowed = (0, 1) if args and args[:1] == ["doctor"] else (0,)
        if r.returncode not in allowed:
            failed.append(f"{page.relative_to(ROOT)}:{no}: {command}: exit {r.returncode}\n"
                          f"{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    assert not failed, "\n\n".join(failed)


def test_no_command_hides_in_an_unlabelled_block():
    """Commands are in ``sh`` (or ``console``) blocks, where these tests find them; an
    unlabelled block is output, a layout or a formula. A command in one would be neither
    parsed nor run."""
    hidden = []
    for page in doc_pages():
        block = None
        for no, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            m = FENCE.match(line.strip())
            if m:
                block = m.group(1) if block is None else None
                continue
            text = line.strip().removeprefix("$ ")
            if block == "" and (hsrtcp_args(text) is not None or text.startswith("make ")):
                hidden.append(f"{page.relative_to(ROOT)}:{no}: {text}")
    assert not hidden, "commands in unlabelled blocks (label the block sh, or text for output):\n" + "\n".join(hidden)
